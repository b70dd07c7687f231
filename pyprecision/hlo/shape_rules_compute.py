"""Shape rules of the opcodes that compute across elements or call computations: dot,
convolution, reduce, reduce-window, select-and-scatter, gather, scatter, sort, topk, map,
batch norm, rng-bit-generator, and the signatures of call / fusion / while / conditional.

Named by their records in :mod:`pyprecision.hlo.opcodes`.
"""
from __future__ import annotations

from typing import Any

from pyprecision.hlo import window as W
from pyprecision.hlo.shape import Shape
from pyprecision.hlo.shape_inference import (
    _array,
    _dims_in_range,
    _h,
    _ints,
    _like,
    compatible,
)
from pyprecision.hlo.types import PrimitiveType, is_float, is_integer

P = PrimitiveType


def _called(inst: Any, key: str) -> Any:
    comp = inst.called(key)
    if comp is None:
        raise ValueError(f"{inst.opcode} needs a {key}= computation")
    return comp


def _signature(comp: Any, params: list[Shape], what: str) -> Shape:
    """Check that ``comp`` takes ``params`` (layouts ignored); return its root shape."""
    got = comp.parameters
    if len(got) != len(params):
        raise ValueError(f"{what} {comp.name} takes {len(got)} parameter(s), {len(params)} "
                         "are passed")
    for i, (p, want) in enumerate(zip(got, params, strict=True)):
        if not compatible(p.shape, want):
            raise ValueError(f"{what} {comp.name} parameter {i} is {_h(p.shape)}, "
                             f"{_h(want)} is passed")
    return comp.root.shape


def _scalar_reducer(inst: Any, key: str, types: list[PrimitiveType]) -> list[Shape]:
    """A reducer taking (acc..., x...) scalars of ``types`` twice; its root types per value."""
    comp = _called(inst, key)
    scalars = [Shape.array(t) for t in types]
    root = _signature(comp, scalars + scalars, f"{key}=")
    leaves = list(root.tuple_shapes) if root.is_tuple else [root]
    if len(types) > 1 and not root.is_tuple:
        raise ValueError(f"{key}= {comp.name} must return a tuple of {len(types)} scalars")
    if len(leaves) != len(types) or any(s.is_tuple or s.rank for s in leaves):
        raise ValueError(f"{key}= {comp.name} must return {len(types)} scalar(s), returns "
                         f"{_h(root)}")
    return leaves


def _pack(shapes: list[Shape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else Shape.tuple_of(shapes)


# -- dot, convolution -----------------------------------------------------------------------
def _dot(inst: Any, ops: list[Shape]) -> Shape:
    a, b = _array(ops[0], "the lhs"), _array(ops[1], "the rhs")
    lb = _ints(inst, "lhs_batch_dims", False)
    rb = _ints(inst, "rhs_batch_dims", False)
    lc = _ints(inst, "lhs_contracting_dims", False)
    rc = _ints(inst, "rhs_contracting_dims", False)
    _dims_in_range(lb + lc, a.rank, "lhs_batch_dims+lhs_contracting_dims")
    _dims_in_range(rb + rc, b.rank, "rhs_batch_dims+rhs_contracting_dims")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise ValueError("dot needs as many lhs as rhs batch and contracting dimensions")
    for x, y, what in ((lb, rb, "batch"), (lc, rc, "contracting")):
        for i, j in zip(x, y, strict=True):
            if a.dimensions[i] != b.dimensions[j]:
                raise ValueError(f"dot {what} dimensions differ: lhs {i} is {a.dimensions[i]}, "
                                 f"rhs {j} is {b.dimensions[j]}")
    dims = [a.dimensions[d] for d in lb]
    dims += [s for d, s in enumerate(a.dimensions) if d not in lb and d not in lc]
    dims += [s for d, s in enumerate(b.dimensions) if d not in rb and d not in rc]
    return _like(a, inst.shape.element_type, tuple(dims))


def _convolution(inst: Any, ops: list[Shape]) -> Shape:
    a, k = _array(ops[0], "the input"), _array(ops[1], "the kernel")
    if a.rank != k.rank or a.rank < 2:
        raise ValueError(f"convolution input {_h(a)} and kernel {_h(k)} need one rank >= 2")
    dn = W.parse_dim_labels(inst.attr("dim_labels"), a.rank)
    win = W.parse_window(inst.attr("window"), a.rank - 2)
    fgc = (_ints(inst, "feature_group_count", False) or [1])[0]
    bgc = (_ints(inst, "batch_group_count", False) or [1])[0]
    dims = W.conv_output_dims(a.dimensions, k.dimensions, dn, win, fgc, bgc)
    return _like(a, inst.shape.element_type, dims)


# -- reductions -----------------------------------------------------------------------------
def _split_inputs(inst: Any, ops: list[Shape]) -> tuple[list[Shape], list[Shape]]:
    if len(ops) % 2:
        raise ValueError(f"{inst.opcode} takes inputs and as many init values, got {len(ops)} "
                         "operands")
    n = len(ops) // 2
    inputs = [_array(s, f"input {i}") for i, s in enumerate(ops[:n])]
    inits = [_array(s, f"init value {i}") for i, s in enumerate(ops[n:])]
    for s in inputs[1:]:
        if s.dimensions != inputs[0].dimensions:
            raise ValueError(f"{inst.opcode} inputs differ in dimensions: {_h(inputs[0])} and "
                             f"{_h(s)}")
    for i, (x, init) in enumerate(zip(inputs, inits, strict=True)):
        if init.rank or init.element_type != x.element_type:
            raise ValueError(f"init value {i} must be a {_h(_like(x, dims=()))} scalar, got "
                             f"{_h(init)}")
    return inputs, inits


def _reduce(inst: Any, ops: list[Shape]) -> Shape:
    inputs, inits = _split_inputs(inst, ops)
    dims = _ints(inst, "dimensions")
    _dims_in_range(dims, inputs[0].rank, "dimensions")
    leaves = _scalar_reducer(inst, "to_apply", [s.element_type for s in inits])
    keep = tuple(s for d, s in enumerate(inputs[0].dimensions) if d not in dims)
    return _pack([Shape.array(r.element_type, keep) for r in leaves])


def _reduce_window(inst: Any, ops: list[Shape]) -> Shape:
    inputs, inits = _split_inputs(inst, ops)
    win = W.parse_window(inst.attr("window"), inputs[0].rank)
    if any(w.reversal for w in win):
        raise ValueError("reduce-window windows cannot be reversed")
    leaves = _scalar_reducer(inst, "to_apply", [s.element_type for s in inits])
    dims = tuple(w.output_size(n) for w, n in zip(win, inputs[0].dimensions, strict=True))
    return _pack([Shape.array(r.element_type, dims) for r in leaves])


def _select_and_scatter(inst: Any, ops: list[Shape]) -> Shape:
    x, src, init = (_array(s, f"operand {i}") for i, s in enumerate(ops))
    win = W.parse_window(inst.attr("window"), x.rank)
    out = tuple(w.output_size(n) for w, n in zip(win, x.dimensions, strict=True))
    if src.dimensions != out:
        raise ValueError(f"select-and-scatter source {_h(src)} does not have the window "
                         f"output dimensions {list(out)}")
    if init.rank or init.element_type != src.element_type:
        raise ValueError(f"init value must be a scalar of the source type, got {_h(init)}")
    t = Shape.array(x.element_type)
    root = _signature(_called(inst, "select"), [t, t], "select=")
    if root.is_tuple or root.rank or root.element_type != P.PRED:
        raise ValueError("select= must return a pred scalar")
    _scalar_reducer(inst, "scatter", [src.element_type])
    return _like(x)


# -- gather / scatter / sort / topk / map ---------------------------------------------------
def _gather(inst: Any, ops: list[Shape]) -> Shape:
    x, idx = _array(ops[0], "the operand"), _array(ops[1], "the start indices")
    if not is_integer(idx.element_type):
        raise ValueError(f"gather start indices must be integers, got {_h(idx)}")
    return _like(x, dims=W.gather_output_dims(x.dimensions, idx.dimensions, W.gather_dims(inst)))


def _scatter(inst: Any, ops: list[Shape]) -> Shape:
    if len(ops) % 2 == 0:
        raise ValueError(f"scatter takes operands, indices and as many updates, got {len(ops)}")
    n = (len(ops) - 1) // 2
    operands = [_array(s, f"operand {i}") for i, s in enumerate(ops[:n])]
    idx = _array(ops[n], "the scatter indices")
    updates = [_array(s, f"update {i}") for i, s in enumerate(ops[n + 1:])]
    if not is_integer(idx.element_type):
        raise ValueError(f"scatter indices must be integers, got {_h(idx)}")
    dnums = W.scatter_dims(inst)
    for x, u in zip(operands, updates, strict=True):
        if x.dimensions != operands[0].dimensions or u.dimensions != updates[0].dimensions:
            raise ValueError("scatter operands (and updates) must share their dimensions")
        W.check_scatter(x.dimensions, idx.dimensions, u.dimensions, dnums)
    _scalar_reducer(inst, "to_apply", [s.element_type for s in operands])
    return _pack([_like(x) for x in operands])


def _sort(inst: Any, ops: list[Shape]) -> Shape:
    arrs = [_array(s, f"operand {i}") for i, s in enumerate(ops)]
    for s in arrs[1:]:
        if s.dimensions != arrs[0].dimensions:
            raise ValueError(f"sort operands differ in dimensions: {_h(arrs[0])} and {_h(s)}")
    d = _ints(inst, "dimensions")
    if len(d) != 1 or not 0 <= d[0] < max(arrs[0].rank, 1):
        raise ValueError(f"sort needs one dimension below the rank {arrs[0].rank}")
    scalars = [Shape.array(s.element_type) for s in arrs for _ in (0, 1)]
    root = _signature(_called(inst, "to_apply"), scalars, "to_apply=")
    if root.is_tuple or root.rank or root.element_type != P.PRED:
        raise ValueError("sort's comparator must return a pred scalar")
    return _pack([_like(s) for s in arrs])


def _topk(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    k = _ints(inst, "k")
    if not x.rank or len(k) != 1 or not 0 <= k[0] <= x.dimensions[-1]:
        raise ValueError(f"topk needs k between 0 and the last dimension of {_h(x)}")
    dims = x.dimensions[:-1] + (k[0],)
    return Shape.tuple_of([_like(x, dims=dims), Shape.array(P.S32, dims)])


def _map(inst: Any, ops: list[Shape]) -> Shape:
    arrs = [_array(s, f"operand {i}") for i, s in enumerate(ops)]
    for s in arrs[1:]:
        if s.dimensions != arrs[0].dimensions:
            raise ValueError(f"map operands differ in dimensions: {_h(arrs[0])} and {_h(s)}")
    root = _signature(_called(inst, "to_apply"), [Shape.array(s.element_type) for s in arrs],
                      "to_apply=")
    if root.is_tuple or root.rank:
        raise ValueError("map's computation must return a scalar")
    return _like(arrs[0], root.element_type)


def _batch_norm(inst: Any, ops: list[Shape]) -> Shape | None:
    """XLA's InferBatchNorm*Shape: per-feature operands of the feature dimension's size, float
    types that may differ in precision (SameElementTypeIgnoringFpPrecision)."""
    x = _array(ops[0], "the operand")
    f = _ints(inst, "feature_index")
    if len(f) != 1 or not 0 <= f[0] < x.rank:
        raise ValueError(f"feature_index must be one dimension below the rank {x.rank}")
    if not is_float(x.element_type):
        raise ValueError(f"{inst.opcode} needs a float operand, got {_h(x)}")
    n = x.dimensions[f[0]]
    per_feature = {"batch-norm-training": (1, 2), "batch-norm-inference": (1, 2, 3, 4),
                   "batch-norm-grad": (1, 2, 3)}[inst.opcode]
    for i in per_feature:
        s = _array(ops[i], f"operand {i}")
        if s.dimensions != (n,) or not is_float(s.element_type):
            raise ValueError(f"{inst.opcode} operand {i} is {_h(s)}, a float vector of {n} "
                             "elements (the feature dimension) is needed")
    if inst.opcode == "batch-norm-grad" and ops[4].dimensions != x.dimensions:
        raise ValueError(f"batch-norm-grad's output gradient {_h(ops[4])} must be {_h(x)}")
    out = inst.shape
    if inst.opcode == "batch-norm-inference":
        return _like(x)
    if not out.is_tuple or len(out.tuple_shapes) != 3 or out.tuple_shapes[0].dimensions != \
            x.dimensions or any(s.dimensions != (n,) for s in out.tuple_shapes[1:]):
        raise ValueError(f"{inst.opcode} returns ({_h(x)}, f[{n}], f[{n}]), not {_h(out)}")
    return None


def _rng_bit_generator(inst: Any, ops: list[Shape]) -> Shape | None:
    s = _array(ops[0], "the state")
    out = inst.shape
    if not out.is_tuple or len(out.tuple_shapes) != 2 or not compatible(out.tuple_shapes[0], s):
        raise ValueError(f"rng-bit-generator returns (state, bits) with the state {_h(s)}")
    return None


# -- calls ----------------------------------------------------------------------------------
def _call(inst: Any, ops: list[Shape]) -> Shape:
    key = "calls" if inst.opcode == "fusion" else "to_apply"
    if inst.opcode == "call" and inst.called("to_apply") is None and inst.called("calls"):
        key = "calls"  # newer XLA prints call(..., calls=...)
    return _signature(_called(inst, key), ops, f"{key}=")


def _while(inst: Any, ops: list[Shape]) -> Shape:
    (state,) = ops
    cond = _signature(_called(inst, "condition"), [state], "condition=")
    if cond.is_tuple or cond.rank or cond.element_type != P.PRED:
        raise ValueError(f"while condition must return pred[], returns {_h(cond)}")
    body = _signature(_called(inst, "body"), [state], "body=")
    if not compatible(body, state):
        raise ValueError(f"while body returns {_h(body)}, the loop state is {_h(state)}")
    return state


def _conditional(inst: Any, ops: list[Shape]) -> Shape:
    sel = _array(ops[0], "the selector")
    if inst.attr("branch_computations") is not None:
        if sel.rank or sel.element_type != P.S32:
            raise ValueError(f"conditional's branch index must be s32[], got {_h(sel)}")
        names = [n.strip().lstrip("%") for n in inst.attr("branch_computations").strip("{}")
                 .split(",") if n.strip()]
        by_name = {c.name: c for c in inst.called_computations}
        branches = [by_name[n] for n in names]
    else:
        if sel.rank or sel.element_type != P.PRED:
            raise ValueError(f"conditional's predicate must be pred[], got {_h(sel)}")
        branches = [_called(inst, "true_computation"), _called(inst, "false_computation")]
    if len(ops) != len(branches) + 1:
        raise ValueError(f"conditional with {len(branches)} branches takes {len(branches) + 1} "
                         f"operands, got {len(ops)}")
    roots = [_signature(b, [ops[i + 1]], "branch") for i, b in enumerate(branches)]
    for r in roots[1:]:
        if not compatible(r, roots[0]):
            raise ValueError(f"conditional branches return {_h(roots[0])} and {_h(r)}")
    return roots[0]
