"""dynamic-slice, dynamic-update-slice, reverse, reduce-window and select-and-scatter → IR
instructions."""

from __future__ import annotations

import math
from typing import Any

from pyprecision import ir
from pyprecision.hlo import HloInstruction, parse_window
from pyprecision.lower.context import LV, LoweringContext
from pyprecision.lower.elementwise import Handler, dims_of, result_dtype
from pyprecision.lower.reducers import reducer_kind as _reducer
from pyprecision.lower.statics import static_scalar

__all__ = ["MAX_WINDOW", "WINDOWS", "positions", "select_kind", "window_of"]

#: a convolution or reduce-window unrolls at most this many window positions
MAX_WINDOW = 4096



def _starts(ctx: LoweringContext, inst: HloInstruction, idx: list[LV], sizes: tuple[int, ...],
            dims: tuple[int, ...]) -> list[int]:  # fmt: skip
    """Known start indices, clamped into range as XLA does."""
    out = []
    for i, v in enumerate(idx):
        s = static_scalar(ctx, v)
        if s is None:
            raise ctx.refuse(inst, f"{inst.opcode}:index", f"start index {i}")
        out.append(min(max(s, 0), dims[i] - sizes[i]))
    return out


def _dynamic_slice(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    x, idx = ops[0], ops[1:]
    sizes = tuple(inst.attr_ints("dynamic_slice_sizes") or dims_of(inst))
    start = _starts(ctx, inst, idx, sizes, tuple(x.shape))
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    limit = [s + n for s, n in zip(start, sizes, strict=True)]
    ctx.emit(ir.SliceOp(x, start, limit, [1] * len(start), out))
    return out


def _dynamic_update_slice(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    x, u, idx = ops[0], ops[1], ops[2:]
    start = _starts(ctx, inst, idx, tuple(u.shape), tuple(x.shape))
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.UpdateSliceOp(x, u, start, out))
    return out


def _reverse(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.ReverseOp(ops[0], inst.attr_ints("dimensions") or [], out))
    return out


def window_of(
    ctx: LoweringContext, inst: HloInstruction, rank: int
) -> tuple[list[int], list[int], list[int], list[int], list[tuple[int, int, int]]]:
    """``window=`` as (size, stride, window dilation, base dilation, (lo, hi, 0) padding) per
    dimension; reversal is refused."""
    try:
        win = parse_window(inst.attr("window"), rank)
    except ValueError as e:
        raise ctx.error(inst, str(e)) from None
    if any(w.reversal for w in win):
        if inst.opcode == "reduce-window":  # malformed (the verifier's rule)
            raise ctx.error(inst, "reduce-window windows cannot be reversed")
        raise ctx.refuse(inst, f"{inst.opcode}:window-reversal", "window reversal")
    if math.prod(w.size for w in win) > MAX_WINDOW:
        raise ctx.refuse(inst, f"{inst.opcode}:window-size",
                         f"a window of {math.prod(w.size for w in win)} positions")
    return ([w.size for w in win], [w.stride for w in win], [w.rhs_dilation for w in win],
            [w.lhs_dilation for w in win], [(w.pad_lo, w.pad_hi, 0) for w in win])  # fmt: skip


def _reduce_window(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """Each window position one strided slice of the padded input; the slices stacked on a new last
    axis and reduced over it with the computation's combiner (so sums accumulate like a reduce)."""
    if len(ops) != 2:
        raise ctx.refuse(inst, "reduce-window:variadic", "a reduce-window of several operands")
    x, init = ops
    kind = _reducer(inst.called("to_apply"))
    if kind is None:
        raise ctx.refuse(inst, "reduce-window:reducer", "its to_apply computation")
    rank = len(x.shape)
    size, stride, wdil, bdil, pads = window_of(ctx, inst, rank)
    src = x
    if any(p != (0, 0, 0) for p in pads) or any(d != 1 for d in bdil):
        lo, hi = [p[0] for p in pads], [p[1] for p in pads]
        interior = [d - 1 for d in bdil]
        shape = tuple(s + a + b + g * max(s - 1, 0)
                      for s, a, b, g in zip(x.shape, lo, hi, interior, strict=True))  # fmt: skip
        src = ctx.value(f"{inst.name}.pad", x.dtype, shape)
        ctx.emit(ir.PadOp(x, init, lo, hi, interior, src), role="aux")
    out_dims = dims_of(inst)
    parts = []
    for w in positions(size):
        start = [w[i] * wdil[i] for i in range(rank)]
        limit = [start[i] + (out_dims[i] - 1) * stride[i] + 1 for i in range(rank)]
        s = ctx.value(f"{inst.name}.win", x.dtype, out_dims)
        ctx.emit(ir.SliceOp(src, start, limit, stride, s), role="aux")
        r = ctx.value(f"{s.name}.1", x.dtype, tuple(out_dims) + (1,))
        ctx.emit(ir.ReshapeOp(s, r), role="aux")
        parts.append(r)
    stacked = parts[0]
    if len(parts) > 1:
        stacked = ctx.value(f"{inst.name}.stack", x.dtype, tuple(out_dims) + (len(parts),))
        ctx.emit(ir.ConcatenateOp(parts, rank, stacked), role="aux")
    narrow = ctx.config is not None and not ctx.config.enable_mixed_precision_accumulation
    out = ctx.value(inst.name, result_dtype(ctx, inst), out_dims)
    ctx.emit(ir.ReduceOp(kind, stacked, init, [rank], out, narrow))
    return out


_DIRECTIONS = {"GE": "ge", "GT": "gt", "LE": "le", "LT": "lt"}


def select_kind(comp: Any) -> str | None:
    """The IR select of a select-and-scatter's ``select`` computation: ``compare(p0, p1)`` of its
    two parameters in order, direction GE / GT / LE / LT, float or integer order (not XLA's
    total order); None otherwise."""
    if comp is None:
        return None
    params = sorted(comp.parameters, key=lambda q: q.parameter_number or 0)
    root = comp.root
    if root.opcode != "compare" or len(params) != 2 or len(root.operands) != 2:
        return None
    if any(a is not b for a, b in zip(root.operands, params, strict=True)):
        return None
    if (root.attr("type") or "FLOAT").upper() == "TOTALORDER":
        return None
    return _DIRECTIONS.get((root.attr("direction") or "").upper())


def _select_and_scatter(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """XLA's select-and-scatter with an add scatter → ``select_and_scatter.SEL`` (decision L19)."""
    x, src, init = ops
    if not inst.operands[0].shape.dimensions:
        raise ctx.refuse(inst, "select-and-scatter:scalar", "a select-and-scatter of a scalar operand")
    sel = select_kind(inst.called("select"))
    if sel is None:
        raise ctx.refuse(inst, "select-and-scatter:select", "its select computation")
    if _reducer(inst.called("scatter")) != "add":
        raise ctx.refuse(inst, "select-and-scatter:scatter", "its scatter computation")
    size, stride, wdil, bdil, pads = window_of(ctx, inst, len(x.shape))
    if any(d != 1 for d in wdil + bdil):
        raise ctx.refuse(inst, "select-and-scatter:dilated", "a dilated select-and-scatter window")
    narrow = ctx.config is not None and not ctx.config.enable_mixed_precision_accumulation
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.SelectAndScatterOp(sel, x, src, init, size, stride, [p[0] for p in pads],
                                   [p[1] for p in pads], out, narrow))
    return out


def positions(size: list[int]) -> list[list[int]]:
    """Every window position, in row-major order (at most 4096)."""
    out: list[list[int]] = [[]]
    for s in size:
        out = [p + [i] for p in out for i in range(s)]
    return out


WINDOWS: dict[str, Handler] = {
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "reverse": _reverse,
    "reduce-window": _reduce_window,
    "select-and-scatter": _select_and_scatter,
}
