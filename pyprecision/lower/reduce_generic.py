"""A reduce whose reducer is no IR reduce kind, lowered by folding its body (decision OP11).

The HLO evaluator's order (decision HE5): the reduced dimensions moved last and flattened
row-major, then ``acc = reducer(acc, x[..., k])`` for k = 0, 1, … from the init. The lowering
writes exactly that: one transpose and reshape, then per k a slice and the reducer's
instructions, each lowered by its own elementwise handler on arrays of the kept dimensions
(scalar constants and parameters broadcast). Only reducers of elementwise opcodes whose records
lower them qualify, and at most :data:`MAX_FOLD` steps (each step is the reducer's instructions
once more in the IR).
"""
from __future__ import annotations

import math
from typing import Any

from pyprecision import ir
from pyprecision.hlo import HloInstruction, Shape, opcodes
from pyprecision.lower.context import LV, LoweringContext, ir_shape
from pyprecision.lower.elementwise import ELEMENTWISE, fit

__all__ = ["MAX_FOLD", "fold_reduce"]

#: the most reduced elements a folded reduce unrolls
MAX_FOLD = 256


class _Wide:
    """An instruction of the reducer seen with the kept dimensions (its handler sizes its result
    from ``shape``); everything else is the instruction's own."""

    def __init__(self, inst: HloInstruction, dims: tuple[int, ...]):
        self._inst = inst
        self.shape = Shape.array(inst.shape.element_type, dims)
        self.operands = [_Wide(o, dims) for o in inst.operands] if inst.operands else []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inst, name)


def fold_reduce(ctx: LoweringContext, inst: HloInstruction, x: ir.Value, init: ir.Value,
                dims: list[int]) -> ir.Value | None:
    """``inst`` folded step by step, or None when its reducer does not qualify."""
    comp = inst.called("to_apply")
    if comp is None or len(comp.parameters) != 2 or comp.root.shape.is_tuple:
        return None
    body = [i for i in comp.post_order([comp.root]) if i.opcode != "parameter"]
    if not body:
        return None
    for i in body:
        rec = opcodes.record(i.opcode)
        if i.opcode != "constant" and (rec is None or not rec.elementwise or rec.lowering
                                       or i.opcode not in ELEMENTWISE):
            return None
        if i.shape.is_tuple or i.shape.dimensions:
            return None
    hlo_dims = tuple(inst.operands[0].shape.dimensions)
    keep = [d for d in range(len(hlo_dims)) if d not in dims]
    kept = tuple(hlo_dims[d] for d in keep)
    k_total = math.prod(hlo_dims[d] for d in dims)
    if k_total > MAX_FOLD:
        raise ctx.refuse(inst, "reduce:fold-limit", "its reducer is not add, multiply, maximum, "
                         f"minimum, and or or, and folding it step by step over {k_total} elements")
    src = x
    perm = keep + list(dims)
    if perm != list(range(len(hlo_dims))):
        src = ctx.value(f"{inst.name}.moved", x.dtype, tuple(hlo_dims[p] for p in perm))
        ctx.emit(ir.TransposeOp(x, perm, src), role="aux")
    flat = ctx.value(f"{inst.name}.flat", x.dtype, kept + (k_total,))
    ctx.emit(ir.ReshapeOp(src, flat), role="aux")
    acc = fit(ctx, init, kept, f"{inst.name}.init")
    params = sorted(comp.parameters, key=lambda q: q.parameter_number or 0)
    n = len(kept)
    for k in range(k_total):
        piece = ctx.value(f"{inst.name}.at{k}", x.dtype, kept + (1,))
        ctx.emit(ir.SliceOp(flat, [0] * n + [k], list(kept) + [k + 1], [1] * (n + 1), piece),
                 role="aux")
        elem = piece
        if ir_shape(kept) != piece.shape:
            elem = ctx.value(f"{inst.name}.el{k}", x.dtype, kept)
            ctx.emit(ir.ReshapeOp(piece, elem), role="aux")
        acc = _step(ctx, body, params, [acc, elem], kept)
    return acc


def _step(ctx: LoweringContext, body: list[HloInstruction], params: list[HloInstruction],
          args: list[ir.Value], kept: tuple[int, ...]) -> ir.Value:
    from pyprecision.lower.shapes import SHAPES

    env: dict[int, LV] = {id(p): a for p, a in zip(params, args, strict=True)}
    for i in body:
        if i.opcode == "constant":
            c = SHAPES["constant"](ctx, i, [])
            env[id(i)] = fit(ctx, c, kept, f"{i.name}.wide")
            continue
        ops = [fit(ctx, env[id(o)], kept, f"{i.name}.wide") for o in i.operands]
        env[id(i)] = ELEMENTWISE[i.opcode](ctx, _Wide(i, kept), ops)  # type: ignore[arg-type]
    return env[id(body[-1])]
