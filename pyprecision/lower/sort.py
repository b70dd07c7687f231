"""sort → the IR's ``sort_perm`` of its keys, then one ``gather`` per operand (decision L17);
topk → ``sort_perm`` of its operand, the first k entries, one ``gather`` (decision L23).

The comparators lowered are those JAX writes: ``compare(f(p[2k]), f(p[2k+1])), direction=LT|GT``
(any ``type=``), with ``f`` nothing or JAX's NaN / -0 canonicalisation, and the lexicographic
``or(compare(p[2k], p[2k+1]) LT|GT, and(compare(p[2k], p[2k+1]) EQ, REST))`` of several keys
(``lax.sort(..., num_keys=n)``). Any other comparator is one located error."""

from __future__ import annotations

from typing import Any

from pyprecision import ir
from pyprecision.hlo import HloInstruction
from pyprecision.lower.context import LV, LoweringContext
from pyprecision.lower.elementwise import Handler

__all__ = ["SORTS", "sort_keys"]

#: (operand k, descending, total order, canonicalised) per key, most significant first
Key = tuple[int, bool, bool, bool]


def _param(x: Any) -> int | None:
    return x.parameter_number if x.opcode == "parameter" else None


def _is_constant(x: Any, pred: Any) -> bool:
    if x.opcode != "constant":
        return False
    try:
        v = x.literal().reshape(-1)
    except ValueError:
        return False
    return v.size == 1 and bool(pred(float(v[0])))


def _canonical_of(x: Any) -> int | None:
    """The parameter ``p`` of JAX's canonicalisation ``select(ne(p, p), nan, select(eq(p, 0), 0,
    p))``, or None."""
    if x.opcode != "select":
        return None
    ne, nan, inner = x.operands
    if not (ne.opcode == "compare" and ne.attr("direction") == "NE" and _is_constant(nan, lambda v: v != v)):
        return None
    p = _param(ne.operands[0])
    if p is None or ne.operands[1] is not ne.operands[0] or inner.opcode != "select":
        return None
    eq, zero, same = inner.operands
    ok = (eq.opcode == "compare" and eq.attr("direction") == "EQ" and eq.operands[0] is ne.operands[0]
          and _is_constant(eq.operands[1], lambda v: v == 0) and _is_constant(zero, lambda v: v == 0)
          and same is ne.operands[0])  # fmt: skip
    return p if ok else None


def _pair(a: Any, b: Any) -> tuple[int, bool] | None:
    """(k, canonicalised) when ``a``, ``b`` are f(p[2k]), f(p[2k+1]) for f nothing or JAX's."""
    pa, pb = _param(a), _param(b)
    canon = False
    if pa is None or pb is None:
        pa, pb, canon = _canonical_of(a), _canonical_of(b), True
    if pa is None or pb is None or pa % 2 or pb != pa + 1:
        return None
    return pa // 2, canon


def sort_keys(root: Any) -> list[Key] | None:
    """The keys of a comparator rooted at ``root``, or None when it is not one of JAX's forms."""
    if root.opcode == "compare" and root.attr("direction") in ("LT", "GT"):
        pair = _pair(*root.operands)
        if pair is None:
            return None
        return [(pair[0], root.attr("direction") == "GT", root.attr("type") == "TOTALORDER",
                 pair[1])]
    if root.opcode != "or" or len(root.operands) != 2:
        return None
    lt, both = root.operands
    if lt.opcode != "compare" or lt.attr("direction") not in ("LT", "GT") or both.opcode != "and":
        return None
    eq, rest = both.operands
    pair = _pair(*lt.operands)
    if (pair is None or pair[1] or eq.opcode != "compare" or eq.attr("direction") != "EQ"
            or list(eq.operands) != list(lt.operands) or eq.attr("type") != lt.attr("type")):
        return None  # fmt: skip
    tail = sort_keys(rest)
    if tail is None:
        return None
    return [(pair[0], lt.attr("direction") == "GT", lt.attr("type") == "TOTALORDER", False)] + tail


def _sort(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    comp = inst.called("to_apply")
    keys = sort_keys(comp.root) if comp is not None else None
    if keys is None or any(k >= len(ops) for k, *_ in keys):
        raise ctx.refuse(inst, "sort:comparator", "its comparator")
    shapes = inst.shape.tuple_shapes if inst.shape.is_tuple else [inst.shape]
    dims = tuple(shapes[0].dimensions)
    if not dims:
        raise ctx.refuse(inst, "sort:scalar", "a sort of scalars")
    (d,) = inst.attr_ints("dimensions") or [0]
    perm = ctx.value(f"{inst.name}.perm", ir.int32, dims)
    ctx.emit(ir.SortPermOp([ops[k] for k, *_ in keys], d, [k[1] for k in keys],
                           [k[2] for k in keys], [k[3] for k in keys], perm), role="aux")
    rest = [i for i in range(len(dims)) if i != d]
    outs = []
    for x, s in zip(ops, shapes, strict=True):
        out = ctx.value(inst.name, ctx.ir_dtype(inst, s.element_type), dims)
        ctx.emit(ir.GatherOp(x, perm, [], [d], [d], len(dims), [1] * len(dims), rest, rest, out))
        outs.append(out)
    return tuple(outs) if inst.shape.is_tuple else outs[0]


def _topk(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """topk(x), k=, largest=: ``sort_perm`` of x along its last dimension (descending when
    largest, XLA's total order: NaN beyond ±inf, -0 before +0; stable, so equal values keep the
    lower index first), its first k entries, and a gather of x with them (decision L23)."""
    (x,) = ops
    dims = tuple(inst.operands[0].shape.dimensions)
    k = (inst.attr_ints("k") or [-1])[0]
    largest = (inst.attr("largest") or "true") == "true"
    if not dims or not 0 <= k <= dims[-1]:
        raise ctx.error(inst, f"top-k needs an array operand and 0 <= k <= its last dimension "
                        f"(k={k}, shape {list(dims)})")  # fmt: skip
    vshape, ishape = inst.shape.tuple_shapes
    if ctx.ir_dtype(inst, ishape.element_type) is not ir.int32:
        raise ctx.error(inst, "top-k indices other than s32 are malformed (the verifier's rule)")
    d = len(dims) - 1
    perm = ctx.value(f"{inst.name}.perm", ir.int32, dims)
    ctx.emit(ir.SortPermOp([x], d, [largest], [True], [False], perm), role="aux")
    out_dims = dims[:-1] + (k,)
    first = ctx.value(f"{inst.name}.perm", ir.int32, out_dims)
    ctx.emit(ir.SliceOp(perm, [0] * len(dims), out_dims, [1] * len(dims), first), role="aux")
    rest = list(range(d))
    values = ctx.value(inst.name, ctx.ir_dtype(inst, vshape.element_type), out_dims)
    ctx.emit(ir.GatherOp(x, first, [], [d], [d], len(dims), [1] * len(dims), rest, rest, values))
    return (values, first)


SORTS: dict[str, Handler] = {"sort": _sort, "topk": _topk}
