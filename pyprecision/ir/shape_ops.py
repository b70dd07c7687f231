"""Data-movement ops (what the HLO lowering builds besides the compute ops): broadcast, reshape,
transpose, slice, concatenate, pad and reverse; reductions and index ops are in reduce_ops.py.
Each is declared once (see :mod:`pyprecision.ir.opdef`).

Every one keeps the class of its operand (float stays float, an integer keeps its dtype) and may be
retyped like any compute op: a float result different from its operand's dtype rounds once (RNE)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from pyprecision.ir.dtypes import FLOAT_DTYPES, INTEGER_DTYPES, DType
from pyprecision.ir.instructions import Instruction, Operand
from pyprecision.ir.opdef import Int, Ints, Opnd, Opnds, Punct, Val, register
from pyprecision.ir.rules import RuleViolation, need, same_class, shape_text
from pyprecision.ir.values import ScalarValue, Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = [
    "REDUCE_KINDS",
    "BroadcastOp",
    "ConcatenateOp",
    "PadOp",
    "ReshapeOp",
    "ReverseOp",
    "SliceOp",
    "TransposeOp",
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
