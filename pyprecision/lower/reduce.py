"""reduce → the IR's ``reduce.KIND`` (one operand, a binary reducer) or ``argreduce.KIND`` (JAX's
argmax / argmin: values and their s32 indices, decision L21).

JAX's argmax comparator, recognised structurally (``p0``/``p2`` the values, ``p1``/``p3`` the
indices; or/and operands in either order)::

    pick  = or(compare(p0, p2), direction=GT, compare(p0, p0), direction=NE)
    value = select(pick, p0, p2)
    index = select(or(pick, and(compare(p0, p2), direction=EQ, compare(p1, p3), direction=LT)),
                   p1, p3)
    ROOT tuple(value, index)

argmin is the same with ``direction=LT`` in ``pick``. A reducer that combines each operand on its
own (``tuple(add(p0, p2), maximum(p1, p3))``) is one ``reduce.KIND`` per operand. Any other reducer
of several operands is one located error."""

from __future__ import annotations

from typing import Any

from pyprecision import ir
from pyprecision.hlo import HloInstruction, opcodes
from pyprecision.lower.context import LV, LoweringContext
from pyprecision.lower.elementwise import Handler, dims_of, result_dtype
from pyprecision.lower.reduce_generic import fold_reduce
from pyprecision.lower.reducers import reducer_kind

__all__ = ["REDUCES", "arg_reducer", "independent_reducers", "reducer_kind"]

_ARG_DIRECTION = {"GT": "max", "LT": "min"}


def _param(x: Any, k: int) -> bool:
    return bool(x.opcode == "parameter" and x.parameter_number == k)


def _compare(x: Any, a: int, b: int, direction: str) -> bool:
    """``x`` is ``compare(p_a, p_b), direction=...`` in the plain (not total) order."""
    return bool(x.opcode == "compare" and x.attr("direction") == direction
                and x.attr("type") in (None, "FLOAT", "SIGNED", "UNSIGNED")
                and _param(x.operands[0], a) and _param(x.operands[1], b))  # fmt: skip


def _either(x: Any, opcode: str) -> list[tuple[Any, Any]]:
    """The two operand orders of a binary ``opcode`` (none when ``x`` is not one)."""
    if x.opcode != opcode or len(x.operands) != 2:
        return []
    a, b = x.operands
    return [(a, b), (b, a)]


def _pick_value(x: Any) -> str | None:
    """max / min when ``x`` is ``or(compare(p0, p2) GT|LT, compare(p0, p0) NE)``."""
    for cmp, nan in _either(x, "or"):
        for direction, kind in _ARG_DIRECTION.items():
            if _compare(cmp, 0, 2, direction) and _compare(nan, 0, 0, "NE"):
                return kind
    return None


def _pick_index(x: Any, kind: str) -> bool:
    """``x`` is ``or(PICK, and(compare(p0, p2) EQ, compare(p1, p3) LT))`` with PICK of ``kind``."""
    for pick, tie in _either(x, "or"):
        if _pick_value(pick) != kind:
            continue
        if any(_compare(eq, 0, 2, "EQ") and _compare(lt, 1, 3, "LT")
               for eq, lt in _either(tie, "and")):
            return True
    return False


def _select_of(x: Any, a: int, b: int) -> Any:
    """The predicate of ``select(pred, p_a, p_b)``, else None."""
    if x.opcode != "select" or not (_param(x.operands[1], a) and _param(x.operands[2], b)):
        return None
    return x.operands[0]


def arg_reducer(comp: Any) -> str | None:
    """max / min when ``comp`` is JAX's argmax / argmin comparator, else None."""
    if comp is None or len(comp.parameters) != 4:
        return None
    root = comp.root
    if root.opcode != "tuple" or len(root.operands) != 2:
        return None
    pick = _select_of(root.operands[0], 0, 2)
    pick_index = _select_of(root.operands[1], 1, 3)
    if pick is None or pick_index is None:
        return None
    kind = _pick_value(pick)
    return kind if kind is not None and _pick_index(pick_index, kind) else None


def _dims(ctx: LoweringContext, inst: HloInstruction) -> list[int]:
    dims = inst.attr_ints("dimensions")
    if dims is None:
        raise ctx.error(inst, "missing dimensions=")
    return sorted(dims)


def independent_reducers(comp: Any, n: int) -> list[str] | None:
    """The IR kinds when ``comp`` reduces ``n`` operands each on its own: ``ROOT tuple(op_0(p0,
    p_n), ..., op_{n-1}(p_{n-1}, p_{2n-1}))`` with every ``op_k`` add, multiply, maximum, minimum,
    and, or; else None."""
    if comp is None or len(comp.parameters) != 2 * n or comp.root.opcode != "tuple":
        return None
    if len(comp.root.operands) != n:
        return None
    kinds = []
    for k, x in enumerate(comp.root.operands):
        rec = opcodes.record(x.opcode)
        if rec is None or rec.reducer is None or len(x.operands) != 2:
            return None
        if sorted(o.parameter_number if o.opcode == "parameter" else -1
                  for o in x.operands) != [k, k + n]:  # fmt: skip
            return None
        kinds.append(rec.reducer)
    return kinds


def _reduce(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    n = len(ops) // 2
    kinds = independent_reducers(inst.called("to_apply"), n) if n > 1 else None
    if kinds is not None:  # several reduces that only share the loop (decision L21)
        return tuple(_one_reduce(ctx, inst, kind, ops[k], ops[k + n], s)
                     for k, (kind, s) in enumerate(zip(kinds, inst.shape.tuple_shapes, strict=True)))
    if len(ops) == 4:
        return _arg_reduce(ctx, inst, ops)
    if len(ops) != 2:
        raise ctx.refuse(inst, "reduce:operands", f"a reduce of {n} operands")
    x, init = ops
    kind = reducer_kind(inst.called("to_apply"))
    if kind is None and isinstance(x, ir.Value) and isinstance(init, ir.Value):
        folded = fold_reduce(ctx, inst, x, init, _dims(ctx, inst))  # decision OP11
        if folded is not None:
            return folded
    if kind is None:
        raise ctx.refuse(inst, "reduce:reducer", "its to_apply computation")
    narrow = ctx.config is not None and not ctx.config.enable_mixed_precision_accumulation
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.ReduceOp(kind, x, init, _dims(ctx, inst), out, narrow))
    return out


def _one_reduce(ctx: LoweringContext, inst: HloInstruction, kind: str, x: LV, init: LV,
                shape: Any) -> ir.Value:
    if not isinstance(x, ir.Value) or not isinstance(init, ir.Value):
        raise ctx.error(inst, "reduce operands must be arrays")
    narrow = ctx.config is not None and not ctx.config.enable_mixed_precision_accumulation
    out = ctx.value(inst.name, ctx.ir_dtype(inst, shape.element_type),
                    tuple(shape.dimensions))
    ctx.emit(ir.ReduceOp(kind, x, init, _dims(ctx, inst), out, narrow))
    return out


def _arg_reduce(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """Two argreduce ops on the same operands: the indices, then the values (decision L21)."""
    kind = arg_reducer(inst.called("to_apply"))
    x, idx, init, index_init = ops
    if kind is None or not all(isinstance(v, ir.Value) for v in ops) or not idx.dtype.is_integer:
        raise ctx.refuse(inst, "reduce:argreduce", "a reduce of several operands")
    vshape, ishape = inst.shape.tuple_shapes
    dims = _dims(ctx, inst)
    index = ctx.value(inst.name, ctx.ir_dtype(inst, ishape.element_type),
                      tuple(ishape.dimensions))
    ctx.emit(ir.ArgReduceOp(kind, x, idx, init, index_init, dims, index))
    value = ctx.value(inst.name, ctx.ir_dtype(inst, vshape.element_type),
                      tuple(vshape.dimensions))
    ctx.emit(ir.ArgReduceOp(kind, x, idx, init, index_init, dims, value, values=True))
    return (value, index)


REDUCES: dict[str, Handler] = {"reduce": _reduce}
