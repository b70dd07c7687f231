"""Values known at lowering time: small constants and what elementwise index arithmetic makes of
them (the loop counter of an unrolled scan, the start index a dynamic-slice reads), so that
dynamic-slice and dynamic-update-slice with such starts become static slices (decision L12)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.hlo import HloInstruction, numpy_dtype
from pyprecision.lower.context import LV, LoweringContext

__all__ = ["MAX_STATIC", "fold", "static_of", "static_scalar"]

#: constants up to this many elements are tracked
MAX_STATIC = 64

_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}  # fmt: skip
_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
            "GT": np.greater, "GE": np.greater_equal}  # fmt: skip


def static_of(ctx: LoweringContext, v: LV) -> np.ndarray | None:
    """The known value of a lowered array, or None."""
    return ctx.statics.get(id(v)) if not isinstance(v, tuple) else None


def static_scalar(ctx: LoweringContext, v: LV) -> int | None:
    """The known integer value of a lowered scalar, or None."""
    s = static_of(ctx, v)
    if s is None or s.size != 1 or s.dtype.kind not in "iub":
        return None
    return int(s.reshape(-1)[0])


def fold(ctx: LoweringContext, inst: HloInstruction, ops: list[LV], out: LV) -> None:
    """Record ``out``'s value when ``inst`` computes it from known operands (integer and boolean
    index arithmetic only: the float values the passes retype are never folded)."""
    if isinstance(out, tuple) or inst.shape.is_tuple:
        return
    want = np.dtype(numpy_dtype(inst.shape.element_type))
    if want.kind not in "iub" or int(np.prod(inst.shape.dimensions)) > MAX_STATIC:
        return
    if inst.opcode == "constant":
        ctx.statics[id(out)] = np.asarray(inst.literal())
        return
    vals = [static_of(ctx, o) for o in ops]
    if any(v is None for v in vals):
        return
    value = _eval(inst, vals, want)  # type: ignore[arg-type]
    if value is not None:
        ctx.statics[id(out)] = np.asarray(value).astype(want).reshape(tuple(inst.shape.dimensions))


def _eval(inst: HloInstruction, vals: list[np.ndarray], want: np.dtype) -> Any:
    op = inst.opcode
    if op in _BINARY:
        return _BINARY[op](vals[0], vals[1])
    if op == "compare":
        fn = _COMPARE.get(inst.attr("direction") or "")
        return None if fn is None else fn(vals[0], vals[1])
    if op == "select":
        return np.where(vals[0], vals[1], vals[2])
    if op == "clamp":
        return np.minimum(np.maximum(vals[1], vals[0]), vals[2])
    if op in ("convert", "reshape", "copy", "bitcast"):
        return vals[0]
    if op == "negate":
        return -vals[0]
    if op == "broadcast":
        return np.broadcast_to(vals[0].reshape(-1)[0], tuple(inst.shape.dimensions)) \
            if vals[0].size == 1 else None
    return None
