"""``sort`` (several operands, any comparator) and TopK (the ``topk`` op and the ``TopK``
custom-call), vectorised.

sort: a comparator of the form ``compare(f(p2k), f(p2k+1)), direction=LT|GT`` (any ``type=``),
where ``f`` is the same elementwise expression on both sides (nothing, or JAX's NaN / -0
canonicalisation), is a stable NumPy argsort of the key ``f(operand k)`` (XLA's total order when
``type=TOTALORDER``); any other comparator is evaluated on all pairs of a row at once and each
element's position is its number of predecessors (elements it is not less than, earlier equals
first): a stable sort for every strict weak order, which is what XLA requires of a comparator.
``is_stable=false`` allows any order of equal elements; this one is stable always.

TopK: the k largest (``largest=true``) or smallest elements of the last dimension in order,
equal elements by lower index first; floats in XLA's total order (NaN above +inf).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import compute_dtype, is_float_type, is_int_type, widen
from pyprecision.emulate.shared.window_ops import Fold
from pyprecision.errors import EmulationError
from pyprecision.hlo import PrimitiveType

P = PrimitiveType
#: Largest number of comparator pairs evaluated at once (rows are processed in chunks).
PAIR_CHUNK = 1 << 22


def order_key(x: np.ndarray, t: PrimitiveType, total: bool) -> np.ndarray | None:
    """An int64 / float64 array ordered like ``x`` under ``compare`` (None when NaN makes the
    plain float order partial and ``total`` is not asked for)."""
    if t == P.PRED:
        return x.astype(np.int64)
    if is_int_type(t):
        return x.astype(compute_dtype(t))
    if is_float_type(t):
        f = np.asarray(widen(x), dtype=np.float64)
        if total:
            i = f.view(np.int64)
            return i ^ ((i >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
        return None if np.isnan(f).any() else f
    return None


def _descending(key: np.ndarray) -> np.ndarray:
    if key.dtype == np.uint64:
        return ~key
    if key.dtype.kind == "f":
        return -key
    return ~key.astype(np.int64)


def _same_expression(a: Any, b: Any, pa: int, pb: int) -> bool:
    """``a`` computed from parameter ``pa`` exactly as ``b`` is from ``pb`` (same opcodes,
    attributes, shapes, constants; no other parameter)."""
    stack, seen = [(a, b)], set()
    while stack:
        x, y = stack.pop()
        if (id(x), id(y)) in seen:
            continue
        seen.add((id(x), id(y)))
        if x.opcode == "parameter" or y.opcode == "parameter":
            if not (x.opcode == y.opcode == "parameter" and x.parameter_number == pa
                    and y.parameter_number == pb):
                return False
            continue
        if x is y and x.opcode == "constant":
            continue
        if (x.opcode != y.opcode or x.attributes != y.attributes or not x.shape.equal(y.shape)
                or x.literal_text != y.literal_text or len(x.operands) != len(y.operands)
                or x.called_computations):
            return False
        stack.extend(zip(x.operands, y.operands, strict=True))
        if len(seen) > 256:
            return False
    return True


def key_comparator(comp: Any) -> tuple[int, Any, str, bool] | None:
    """(key operand k, the key expression's root, direction, total order) when the comparator
    is ``compare(f(p2k), f(p2k+1)), direction=LT|GT``; else None."""
    root = comp.root
    if root.opcode != "compare" or root.attr("direction") not in ("LT", "GT"):
        return None
    a, b = root.operands
    params = {id(p): p.parameter_number or 0 for p in comp.parameters}
    for pa in sorted(params.values()):
        if pa % 2 == 0 and _same_expression(a, b, pa, pa + 1):
            return pa // 2, a, str(root.attr("direction")), root.attr("type") == "TOTALORDER"
    return None


Evaluate = Callable[[Any, list[Any]], Any]


def _expression_value(evaluate: Evaluate, root: Any, param: int, x: np.ndarray) -> np.ndarray:
    """The key expression ``root`` evaluated with parameter ``param`` bound to ``x``."""
    env: dict[int, Any] = {}
    stack = [(root, False)]
    while stack:
        inst, ready = stack.pop()
        if id(inst) in env:
            continue
        if inst.opcode == "parameter" and inst.parameter_number == param:
            env[id(inst)] = x
        elif ready:
            env[id(inst)] = evaluate(inst, [env[id(o)] for o in inst.operands])
        else:
            stack.append((inst, True))
            stack.extend((o, False) for o in inst.operands if id(o) not in env)
    return np.broadcast_to(env[id(root)], x.shape)


def _permutation(inst: Any, xs: list[np.ndarray], comp: Any, fold: Fold,
                 evaluate: Evaluate | None) -> np.ndarray:
    """Stable sort permutation along the last axis of every operand in ``xs``."""
    keyed = key_comparator(comp) if evaluate is not None else None
    if keyed is not None and evaluate is not None:
        k, expr, direction, total = keyed
        value = xs[k] if expr.opcode == "parameter" else _expression_value(
            evaluate, expr, 2 * k, xs[k])
        key = order_key(np.asarray(value), expr.shape.element_type, total)
        if key is not None:
            if direction == "GT":
                key = _descending(key)
            return np.argsort(key, axis=-1, kind="stable")
    n = xs[0].shape[-1]
    rows = xs[0].reshape(-1, n) if n else xs[0].reshape(-1, 0)
    flat = [x.reshape(rows.shape) for x in xs]
    perm = np.empty(rows.shape, dtype=np.int64)
    step = max(1, PAIR_CHUNK // max(n * n, 1))
    for r0 in range(0, rows.shape[0], step):
        chunk = [f[r0:r0 + step] for f in flat]
        args = []
        for c in chunk:
            args += [c[:, :, None], c[:, None, :]]
        (less,) = fold(args[:1], args[1:])  # binds p0, p1, ... in order
        less = np.asarray(less, dtype=bool)
        before = less.sum(axis=1)                                  # j with less[j, i]
        equal = ~less & ~np.swapaxes(less, 1, 2)
        earlier = np.tril(np.ones((n, n), dtype=bool), -1)          # j < i
        rank = before + (equal & earlier[None]).sum(axis=2)
        perm[r0:r0 + step] = np.argsort(rank, axis=1, kind="stable")
    return perm.reshape(xs[0].shape)


def sort(inst: Any, args: list[np.ndarray], comp: Any, fold: Fold,
         evaluate: Evaluate | None = None) -> Any:
    """sort(operands...), dimensions={d}, is_stable=, to_apply=comparator; ``evaluate(inst,
    operand values)`` evaluates one instruction (for the key-expression fast path)."""
    d = (inst.attr_ints("dimensions") or [0])[0]
    if not args[0].ndim:
        return args[0] if len(args) == 1 else tuple(args)
    xs = [np.moveaxis(a, d, -1) for a in args]
    perm = _permutation(inst, xs, comp, fold, evaluate)
    out = [np.ascontiguousarray(np.moveaxis(np.take_along_axis(x, perm, axis=-1), -1, d))
           for x in xs]
    return out[0] if len(out) == 1 else tuple(out)


def topk(inst: Any, x: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(values, s32 indices) of the k largest (or smallest) along the last dimension."""
    if not x.ndim or not 0 <= k <= x.shape[-1]:
        raise EmulationError(f"{inst.name}: top-k needs 0 <= k <= the last dimension")
    key = order_key(x, inst.operands[0].shape.element_type, total=True)
    if key is None:
        raise EmulationError(f"{inst.name}: top-k of this element type is not supported")
    order = np.argsort(_descending(key) if largest else key, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


def topk_op(inst: Any, args: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """topk(x), k=, largest=."""
    k = (inst.attr_ints("k") or [0])[0]
    largest = (inst.attr("largest") or "true") == "true"
    return topk(inst, args[0], k, largest)
