"""Data-movement, reduction and index ops (what the HLO lowering builds besides the compute ops):
broadcast, reshape, transpose, slice, concatenate, pad, iota and reduce. Each is declared once
(see :mod:`pyprecision.ir.opdef`).

Every one keeps the class of its operand (float stays float, an integer keeps its dtype) and may be
retyped like any compute op: a float result different from its operand's dtype rounds once (RNE)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from pyprecision.ir.dtypes import FLOAT_DTYPES, INTEGER_DTYPES, DType, float32
from pyprecision.ir.instructions import Instruction, Operand
from pyprecision.ir.opdef import Flag, Int, Ints, Opnd, Opnds, Punct, Val, register
from pyprecision.ir.rules import RuleViolation, need, same_class, shape_text
from pyprecision.ir.values import ScalarValue, Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = [
    "REDUCE_KINDS",
    "BroadcastOp",
    "ConcatenateOp",
    "IotaOp",
    "PadOp",
    "ReduceOp",
    "ReshapeOp",
    "ReverseOp",
    "SliceOp",
    "TransposeOp",
    "UpdateSliceOp",
]

#: the combiners of ``reduce.KIND``
REDUCE_KINDS = ("add", "mul", "max", "min", "and", "or")


class _Movement(Instruction):
    """Common facts: one value operand ``data``; the result keeps its class."""

    def __init__(self, data: Value, result: Value):
        super().__init__([data], result)

    @property
    def data(self) -> Operand:
        """The input."""
        return self._operands[0]

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """Float results may take any float dtype; integer ones keep the integer dtypes."""
        r = self.result
        return FLOAT_DTYPES if r is not None and r.dtype.is_float else INTEGER_DTYPES

    @property
    def can_mutate_dst_ty(self) -> bool:
        """A float result may be retyped (spec 002 gate 8)."""
        return self.result is not None and self.result.dtype.is_float

    def _check_class(self) -> None:
        d, r = self.data, self.result
        assert r is not None
        need(isinstance(d, Value), "the operand must be a value")
        if not (same_class(d.dtype, r.dtype) and (r.dtype.is_float or d.dtype is r.dtype)):
            raise RuleViolation(f"cannot turn {d.dtype.name} into {r.dtype.name}; use cast")

    def _finish(self, ev: Any, x: np.ndarray) -> np.ndarray:
        return ev.num.convert(x, self.data.dtype, self.result.dtype)  # type: ignore[union-attr]


@register
class BroadcastOp(_Movement):
    """``%r = broadcast %x dims=[...] : T`` — operand dimension i becomes result dimension dims[i]
    (HLO broadcast); ``dims=[]`` with a [1] operand broadcasts a scalar."""

    opname = "broadcast"
    WORDS = {"broadcast": {}}
    SYNTAX = (Val("data"), Ints("dims", "dims"))

    def __init__(self, data: Value, dims: Any, result: Value):
        self.dims = tuple(int(d) for d in dims)
        super().__init__(data, result)

    def check(self, f: Function) -> None:
        """dims strictly increasing into the result; operand sizes equal the mapped result sizes."""
        self._check_class()
        d, r = self.data, self.result
        assert r is not None
        scalar = not self.dims and d.shape == (1,)
        if not scalar:
            if len(self.dims) != len(d.shape):
                raise RuleViolation(
                    f"dims has {len(self.dims)} entries for a rank-{len(d.shape)} operand"
                )
            if list(self.dims) != sorted(set(self.dims)) or any(
                not 0 <= k < len(r.shape) for k in self.dims
            ):
                raise RuleViolation(f"dims {list(self.dims)} must be increasing result dimensions")
            for i, k in enumerate(self.dims):
                if d.shape[i] != r.shape[k]:
                    raise RuleViolation(
                        f"operand dimension {i} ({d.shape[i]}) != result dimension {k} ({r.shape[k]})"
                    )

    def evaluate(self, ev: Any) -> Any:
        """Operand placed on ``dims``, replicated along the others."""
        x, shape = ev.operand(self.data), self.result.shape  # type: ignore[union-attr]
        if not self.dims:
            x = x.reshape(())
        else:
            x = x.reshape(
                [x.shape[self.dims.index(k)] if k in self.dims else 1 for k in range(len(shape))]
            )
        return self._finish(ev, np.broadcast_to(x, shape))


@register
class ReshapeOp(_Movement):
    """``%r = reshape %x : T`` — same elements in row-major order, a new shape."""

    opname = "reshape"
    WORDS = {"reshape": {}}
    SYNTAX = (Val("data"),)

    def check(self, f: Function) -> None:
        """Same number of elements."""
        self._check_class()
        d, r = self.data, self.result
        assert r is not None
        if math.prod(d.shape) != math.prod(r.shape):
            raise RuleViolation(f"cannot reshape {shape_text(d)} into {shape_text(r)}")

    def evaluate(self, ev: Any) -> Any:
        """Row-major reshape."""
        return self._finish(ev, ev.operand(self.data).reshape(self.result.shape))  # type: ignore[union-attr]


@register
class TransposeOp(_Movement):
    """``%r = transpose %x perm=[...] : T`` — result dimension i is operand dimension perm[i]; a
    lossless relayout (a DMA), unlike a matmult-based transpose on the PE."""

    opname = "transpose"
    WORDS = {"transpose": {}}
    SYNTAX = (Val("data"), Ints("perm", "perm"))

    def __init__(self, data: Value, perm: Any, result: Value):
        self.perm = tuple(int(p) for p in perm)
        super().__init__(data, result)

    def check(self, f: Function) -> None:
        """perm is a permutation; the result shape follows it."""
        self._check_class()
        d, r = self.data, self.result
        assert r is not None
        if sorted(self.perm) != list(range(len(d.shape))):
            raise RuleViolation(
                f"perm {list(self.perm)} is not a permutation of rank {len(d.shape)}"
            )
        want = tuple(d.shape[p] for p in self.perm)
        if r.shape != want:
            raise RuleViolation(f"result shape {shape_text(r)} != permuted shape {list(want)}")

    def evaluate(self, ev: Any) -> Any:
        """``np.transpose``."""
        return self._finish(ev, np.transpose(ev.operand(self.data), self.perm))


@register
class SliceOp(_Movement):
    """``%r = slice %x start=[...] limit=[...] strides=[...] : T`` — HLO slice."""

    opname = "slice"
    WORDS = {"slice": {}}
    SYNTAX = (
        Val("data"),
        Ints("start", "start"),
        Ints("limit", "limit"),
        Ints("strides", "strides"),
    )

    def __init__(self, data: Value, start: Any, limit: Any, strides: Any, result: Value):
        self.start = tuple(int(v) for v in start)
        self.limit = tuple(int(v) for v in limit)
        self.strides = tuple(int(v) for v in strides)
        super().__init__(data, result)

    def check(self, f: Function) -> None:
        """0 <= start <= limit <= size, strides >= 1; the result has ceil((limit-start)/stride)."""
        self._check_class()
        d, r = self.data, self.result
        assert r is not None
        n = len(d.shape)
        need(
            len(self.start) == len(self.limit) == len(self.strides) == n,
            "slice bounds must match the rank",
        )
        want = []
        for i in range(n):
            lo, hi, st = self.start[i], self.limit[i], self.strides[i]
            if not (0 <= lo <= hi <= d.shape[i] and st >= 1):
                raise RuleViolation(f"bad slice [{lo}:{hi}:{st}] of dimension {i} ({d.shape[i]})")
            want.append(-(-(hi - lo) // st))
        if list(r.shape) != want:
            raise RuleViolation(f"result shape {shape_text(r)} != sliced shape {want}")

    def evaluate(self, ev: Any) -> Any:
        """Basic NumPy slicing."""
        idx = tuple(
            slice(a, b, s) for a, b, s in zip(self.start, self.limit, self.strides, strict=True)
        )
        return self._finish(ev, ev.operand(self.data)[idx])


@register
class ConcatenateOp(Instruction):
    """``%r = concatenate %a, %b, ... dim=N : T`` — operands joined along ``dim``."""

    opname = "concatenate"
    WORDS = {"concatenate": {}}
    SYNTAX = (Opnds("parts"), Int("dim", "dim"))

    def __init__(self, parts: Any, dim: int, result: Value):
        self.dim = int(dim)
        super().__init__(list(parts), result)

    @property
    def parts(self) -> list[Operand]:
        """The joined values, in order."""
        return list(self._operands)

    allowed_dtypes = _Movement.allowed_dtypes
    can_mutate_dst_ty = _Movement.can_mutate_dst_ty

    def check(self, f: Function) -> None:
        """Same rank and class; sizes equal except along ``dim``, where they add up."""
        r = self.result
        assert r is not None
        need(bool(self._operands), "concatenate needs an operand")
        need(0 <= self.dim < len(r.shape), "dim must be a result dimension")
        total = 0
        for p in self._operands:
            need(isinstance(p, Value), "concatenate operands must be values")
            if not (same_class(p.dtype, r.dtype) and (r.dtype.is_float or p.dtype is r.dtype)):
                raise RuleViolation(f"cannot concatenate {p.dtype.name} into {r.dtype.name}")
            if len(p.shape) != len(r.shape) or any(
                p.shape[i] != r.shape[i] for i in range(len(r.shape)) if i != self.dim
            ):
                raise RuleViolation(
                    f"operand {shape_text(p)} does not fit {shape_text(r)} along dim {self.dim}"
                )
            total += p.shape[self.dim]
        if total != r.shape[self.dim]:
            raise RuleViolation(
                f"sizes along dim {self.dim} add up to {total}, not {r.shape[self.dim]}"
            )

    def evaluate(self, ev: Any) -> Any:
        """Each part converted to the result dtype, then joined."""
        rdt = self.result.dtype  # type: ignore[union-attr]
        xs = [ev.num.convert(ev.operand(p), p.dtype, rdt) for p in self._operands]
        return np.concatenate(xs, axis=self.dim)


@register
class PadOp(Instruction):
    """``%r = pad %x, PAD low=[...] high=[...] interior=[...] : T`` — HLO pad (negative low/high
    cut); PAD is a [1] value or an immediate."""

    opname = "pad"
    WORDS = {"pad": {}}
    SYNTAX = (
        Val("data"),
        Punct(","),
        Opnd("value"),
        Ints("low", "low"),
        Ints("high", "high"),
        Ints("interior", "interior"),
    )

    def __init__(
        self, data: Value, value: Operand, low: Any, high: Any, interior: Any, result: Value
    ):
        self.low, self.high = tuple(int(v) for v in low), tuple(int(v) for v in high)
        self.interior = tuple(int(v) for v in interior)
        super().__init__([data, value], result)

    @property
    def data(self) -> Operand:
        """The padded value."""
        return self._operands[0]

    @property
    def value(self) -> Operand:
        """The padding value."""
        return self._operands[1]

    allowed_dtypes = _Movement.allowed_dtypes
    can_mutate_dst_ty = _Movement.can_mutate_dst_ty

    def check(self, f: Function) -> None:
        """size + low + high + interior * (size - 1) per dimension; interior >= 0."""
        d, v, r = self.data, self.value, self.result
        assert r is not None
        need(isinstance(d, Value), "the operand must be a value")
        need(isinstance(v, ScalarValue) or v.shape == (1,), "the padding value must be a scalar")
        need(
            same_class(d.dtype, r.dtype) and same_class(v.dtype, r.dtype),
            "pad keeps the dtype class",
        )
        n = len(d.shape)
        need(
            len(self.low) == len(self.high) == len(self.interior) == n,
            "pad widths must match the rank",
        )
        want = [
            d.shape[i] + self.low[i] + self.high[i] + self.interior[i] * max(d.shape[i] - 1, 0)
            for i in range(n)
        ]
        if any(i < 0 for i in self.interior) or list(r.shape) != want:
            raise RuleViolation(f"result shape {shape_text(r)} != padded shape {want}")

    def evaluate(self, ev: Any) -> Any:
        """Interior padding, then edge padding (negative edges cut)."""
        rdt = self.result.dtype  # type: ignore[union-attr]
        x = ev.num.convert(ev.operand(self.data), self.data.dtype, rdt)
        pv = ev.num.convert(ev.operand(self.value).reshape(()), self.value.dtype, rdt)
        shape = [s + g * max(s - 1, 0) for s, g in zip(x.shape, self.interior, strict=True)]
        out = np.full(shape, pv, dtype=x.dtype)
        out[tuple(slice(None, None, g + 1) for g in self.interior)] = x
        lo = [max(v, 0) for v in self.low]
        hi = [max(v, 0) for v in self.high]
        out = np.pad(out, list(zip(lo, hi, strict=True)), constant_values=pv)
        cut = tuple(
            slice(-min(a, 0), out.shape[i] + min(b, 0))
            for i, (a, b) in enumerate(zip(self.low, self.high, strict=True))
        )
        return out[cut]


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
        for j in range(x.shape[-1]):
            acc = num.round_to(num.binary_values(self.kind, acc, x[..., j], rdt.is_float), acc_dt)
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


@register
class ReverseOp(_Movement):
    """``%r = reverse %x dims=[...] : T`` — the order along ``dims`` reversed (HLO reverse)."""

    opname = "reverse"
    WORDS = {"reverse": {}}
    SYNTAX = (Val("data"), Ints("dims", "dims"))

    def __init__(self, data: Value, dims: Any, result: Value):
        self.dims = tuple(int(d) for d in dims)
        super().__init__(data, result)

    def check(self, f: Function) -> None:
        """Distinct operand dimensions; same shape."""
        self._check_class()
        d, r = self.data, self.result
        assert r is not None
        if len(set(self.dims)) != len(self.dims) or any(
            not 0 <= k < len(d.shape) for k in self.dims
        ):
            raise RuleViolation(f"dims {list(self.dims)} must be distinct operand dimensions")
        if r.shape != d.shape:
            raise RuleViolation(f"result shape {shape_text(r)} != operand shape {shape_text(d)}")

    def evaluate(self, ev: Any) -> Any:
        """``np.flip``."""
        return self._finish(ev, np.flip(ev.operand(self.data), self.dims))
