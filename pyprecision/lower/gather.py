"""gather and scatter → the loop IR's ``gather`` / ``scatter.KIND`` (decisions L14–L16).

The dimension numbers pass through unchanged (every form XLA has: offset / collapsed / batching
dimensions, any ``index_vector_dim``); the indices are an integer value of any width (s32, s64,
u32 ...), read as they are. A scatter's ``to_apply`` must be one of the combiners the IR has: a
binary add / multiply / maximum / minimum / and / or of its two parameters, or the second
parameter itself (``x.at[i].set``)."""

from __future__ import annotations

from typing import Any

from pyprecision import ir
from pyprecision.hlo import HloInstruction, gather_dims, scatter_dims
from pyprecision.lower.context import LV, LoweringContext
from pyprecision.lower.elementwise import Handler, dims_of, result_dtype
from pyprecision.lower.reducers import reducer_kind as _reducer

__all__ = ["GATHERS", "scatter_kind"]



def _indices(ctx: LoweringContext, inst: HloInstruction, v: LV) -> ir.Value:
    if not isinstance(v, ir.Value) or not v.dtype.is_integer:
        raise ctx.error(inst, "its indices must be an integer array")
    return v


def _gather(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    x, idx = ops
    if not inst.operands[0].shape.dimensions:
        raise ctx.refuse(inst, "gather:scalar", "a gather from a scalar operand")
    g = gather_dims(inst)
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.GatherOp(x, _indices(ctx, inst, idx), g.offset_dims, g.collapsed_slice_dims,
                         g.start_index_map, g.index_vector_dim, g.slice_sizes,
                         g.operand_batching_dims, g.start_indices_batching_dims, out))
    return out


def scatter_kind(comp: Any) -> str | None:
    """The IR combiner of a scatter's ``to_apply``: ``add`` … ``or`` for a binary op of its two
    parameters, ``assign`` when it returns its second parameter; None otherwise."""
    if comp is None:
        return None
    params = sorted(comp.parameters, key=lambda q: q.parameter_number or 0)
    if len(params) == 2 and comp.root is params[1]:
        return "assign"
    return _reducer(comp)


def _scatter(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    if len(ops) != 3:
        raise ctx.refuse(inst, "scatter:variadic", "a scatter of several operands (a variadic scatter)")
    x, idx, u = ops
    if not inst.operands[0].shape.dimensions:
        raise ctx.refuse(inst, "scatter:scalar", "a scatter into a scalar operand")
    kind = scatter_kind(inst.called("to_apply"))
    if kind is None:
        raise ctx.refuse(inst, "scatter:combiner", "its to_apply computation")
    s = scatter_dims(inst)
    narrow = ctx.config is not None and not ctx.config.enable_mixed_precision_accumulation
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.ScatterOp(kind, x, _indices(ctx, inst, idx), u, s.update_window_dims,
                          s.inserted_window_dims, s.scatter_dims_to_operand_dims,
                          s.index_vector_dim, s.input_batching_dims,
                          s.scatter_indices_batching_dims, out, narrow))
    return out


GATHERS: dict[str, Handler] = {"gather": _gather, "scatter": _scatter}
