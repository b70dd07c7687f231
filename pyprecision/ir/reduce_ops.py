"""Reduction and index ops the HLO lowering builds: iota, reduce and update_slice (one declaration
each; see :mod:`pyprecision.ir.opdef`). They share the class rules of the movement ops
(:mod:`pyprecision.ir.shape_ops`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pyprecision.ir.dtypes import float32
from pyprecision.ir.instructions import Instruction, Operand
from pyprecision.ir.opdef import Flag, Int, Ints, Opnd, Punct, Val, register
from pyprecision.ir.rules import RuleViolation, need, same_class, shape_text
from pyprecision.ir.shape_ops import REDUCE_KINDS, _Movement
from pyprecision.ir.values import ScalarValue, Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = ["IotaOp", "ReduceOp", "UpdateSliceOp"]


@register
class IotaOp(Instruction):
    """``%r = iota dim=N : T`` — r[..., i, ...] = i along ``dim``."""

    opname = "iota"
    WORDS = {"iota": {}}
    SYNTAX = (Int("dim", "dim"),)

    def __init__(self, dim: int, result: Value):
        self.dim = int(dim)
        super().__init__([], result)

    allowed_dtypes = _Movement.allowed_dtypes
    can_mutate_dst_ty = _Movement.can_mutate_dst_ty

    def check(self, f: Function) -> None:
        """dim is a result dimension."""
        assert self.result is not None
        need(0 <= self.dim < len(self.result.shape), "dim must be a result dimension")

    def evaluate(self, ev: Any) -> Any:
        """The index along ``dim``, rounded to the result dtype."""
        shape = self.result.shape  # type: ignore[union-attr]
        idx = np.arange(shape[self.dim]).reshape(
            [-1 if k == self.dim else 1 for k in range(len(shape))]
        )
        return ev.num.round_to(np.broadcast_to(idx, shape), self.result.dtype)  # type: ignore[union-attr]


@register
class ReduceOp(Instruction):
    """``%r = reduce.KIND %x, INIT dims=[...] [narrow_acc] : T`` — folds ``dims`` away with KIND
    (add, mul, max, min, and, or), starting from INIT, in index order. Float sums and products
    accumulate in fp32 (mixed-precision accumulation, the default); ``narrow_acc`` accumulates in
    the operand's dtype instead (``--disable-mixed-precision-accumulation``)."""

    opname = "reduce"
    WORDS = {f"reduce.{k}": {"kind": k} for k in REDUCE_KINDS}
    WORD_PREFIX = "reduce."
    SYNTAX = (
        Val("data"),
        Punct(","),
        Opnd("init"),
        Ints("dims", "dims"),
        Flag("narrow_acc", "narrow_acc"),
    )

    def __init__(
        self,
        kind: str,
        data: Value,
        init: Operand,
        dims: Any,
        result: Value,
        narrow_acc: bool = False,
    ):
        if kind not in REDUCE_KINDS:
            raise ValueError(f"unknown reduce kind {kind!r}")
        self.kind, self.dims, self.narrow_acc = kind, tuple(int(d) for d in dims), bool(narrow_acc)
        super().__init__([data, init], result)

    def word(self) -> str:
        """``reduce.KIND``."""
        return f"reduce.{self.kind}"

    @property
    def data(self) -> Operand:
        """The reduced value."""
        return self._operands[0]

    @property
    def init(self) -> Operand:
        """The initial value (a [1] value or an immediate)."""
        return self._operands[1]

    allowed_dtypes = _Movement.allowed_dtypes
    can_mutate_dst_ty = _Movement.can_mutate_dst_ty

    def check(self, f: Function) -> None:
        """dims increasing operand dimensions; the result is the operand without them ([1] when
        nothing is left)."""
        d, init, r = self.data, self.init, self.result
        assert r is not None
        need(isinstance(d, Value), "the operand must be a value")
        need(isinstance(init, ScalarValue) or init.shape == (1,), "the init value must be a scalar")
        need(
            same_class(d.dtype, r.dtype) and same_class(init.dtype, r.dtype),
            "reduce keeps the dtype class",
        )
        if self.kind in ("and", "or"):
            need(r.dtype.is_integer, f"reduce.{self.kind} needs integers")
        if list(self.dims) != sorted(set(self.dims)) or any(
            not 0 <= k < len(d.shape) for k in self.dims
        ):
            raise RuleViolation(f"dims {list(self.dims)} must be increasing operand dimensions")
        kept = [s for i, s in enumerate(d.shape) if i not in self.dims] or [1]
        if list(r.shape) != kept:
            raise RuleViolation(f"result shape {shape_text(r)} != reduced shape {kept}")

    def evaluate(self, ev: Any) -> Any:
        """Sequential fold in index order over the reduced elements, in the accumulation dtype."""
        num, d, rdt = ev.num, self.data, self.result.dtype  # type: ignore[union-attr]
        x = ev.operand(d)
        kept = [i for i in range(x.ndim) if i not in self.dims]
        x = np.transpose(x, kept + list(self.dims)).reshape([x.shape[i] for i in kept] + [-1])
        acc_dt = d.dtype if self.narrow_acc or not d.dtype.is_float else float32
        acc = num.convert(ev.operand(self.init).reshape(()), self.init.dtype, acc_dt)
        acc = np.broadcast_to(acc, x.shape[:-1])
        fast = num.float32_fold(self.kind, acc, x) if acc_dt is float32 else \
            num.narrow_fold(self.kind, acc, x, acc_dt)  # None for fp32r and integers
        if fast is not None:  # one call, the steps' bits (EM-14, EM-21)
            acc = fast
        for j in range(x.shape[-1] if fast is None else 0):
            # each step the way binary_rounded does it: in float32 where that is
            # round_to(binary_values) (EM-10, EM-11)
            acc = num.binary_rounded(self.kind, acc, x[..., j], rdt.is_float, acc_dt,
                                     (acc_dt, d.dtype))
        return num.convert(np.asarray(acc).reshape(self.result.shape), acc_dt, rdt)  # type: ignore[union-attr]


@register
class UpdateSliceOp(Instruction):
    """``%r = update_slice %x, %u start=[...] : T`` — ``x`` with the block at ``start`` replaced by
    ``u`` (HLO dynamic-update-slice with known, in-range starts)."""

    opname = "update_slice"
    WORDS = {"update_slice": {}}
    SYNTAX = (Val("data"), Punct(","), Val("update"), Ints("start", "start"))

    def __init__(self, data: Value, update: Value, start: Any, result: Value):
        self.start = tuple(int(v) for v in start)
        super().__init__([data, update], result)

    @property
    def data(self) -> Operand:
        """The value updated."""
        return self._operands[0]

    @property
    def update(self) -> Operand:
        """The block written."""
        return self._operands[1]

    allowed_dtypes = _Movement.allowed_dtypes
    can_mutate_dst_ty = _Movement.can_mutate_dst_ty

    def check(self, f: Function) -> None:
        """Same rank and class; the block fits inside at ``start``; the result is shaped like x."""
        d, u, r = self.data, self.update, self.result
        assert r is not None
        need(isinstance(d, Value) and isinstance(u, Value), "update_slice operands must be values")
        need(
            same_class(d.dtype, r.dtype) and same_class(u.dtype, r.dtype),
            "update_slice keeps the dtype class",
        )
        if r.shape != d.shape or len(u.shape) != len(d.shape) or len(self.start) != len(d.shape):
            raise RuleViolation(
                f"update_slice of {shape_text(u)} into {shape_text(d)} -> {shape_text(r)}"
            )
        for i, (s, n, m) in enumerate(zip(self.start, u.shape, d.shape, strict=True)):
            if not 0 <= s <= m - n:
                raise RuleViolation(f"block [{s}:{s + n}] does not fit dimension {i} ({m})")

    def evaluate(self, ev: Any) -> Any:
        """A copy of x with the block written (both converted to the result dtype)."""
        rdt = self.result.dtype  # type: ignore[union-attr]
        out = np.array(ev.num.convert(ev.operand(self.data), self.data.dtype, rdt))
        u = ev.num.convert(ev.operand(self.update), self.update.dtype, rdt)
        out[tuple(slice(s, s + n) for s, n in zip(self.start, u.shape, strict=True))] = u
        return out
