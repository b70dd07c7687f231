"""Fast paths for ``reduce`` whose reducer is one commutative binary op on its two parameters.

The evaluator's rule for reduce is a sequential left fold from the init value over the reduced
elements (docs/decisions/hlo-eval.md HE5). For the common reducers that fold can run inside NumPy
with the same result:

* f32/f64 ``add`` / ``multiply``: ``np.add.accumulate`` is that sequential fold, one rounding per
  step in the element type;
* integer ``add`` / ``multiply``: wraparound arithmetic is a ring, so any order gives the same
  result — exact int64 folding then one wrap;
* ``maximum`` / ``minimum`` (NaN-propagating), ``and`` / ``or``: order-free and exact for every
  type.

Anything else (bf16/f16/fp8 sums, which round to the element type after every step, multi-output
reducers, reducers with more instructions) returns None and takes the general path.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import compute_dtype, is_float_type, is_int_type, round_to
from pyprecision.hlo import PrimitiveType
from pyprecision.kernel import fold_f32

P = PrimitiveType
_ORDER_FREE = {"maximum": (np.maximum, np.logical_or), "minimum": (np.minimum, np.logical_and),
               "and": (np.bitwise_and, np.logical_and), "or": (np.bitwise_or, np.logical_or)}
_SEQUENTIAL = {"add": np.add, "multiply": np.multiply}
#: one step of a reduce: (accumulators, the next reduced elements) -> the new accumulators
Step = Callable[[list[np.ndarray], list[np.ndarray]], list[np.ndarray]]


def reduce_layout(inputs: list[np.ndarray], inits: list[np.ndarray],
                  dims: list[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The evaluator's reduce order: each input with the reduced ``dims`` (sorted) moved last and
    flattened row-major, and each init broadcast to the output shape (the accumulators)."""
    x0 = inputs[0]
    keep = [d for d in range(x0.ndim) if d not in dims]
    out_shape = tuple(x0.shape[d] for d in keep)
    moved = [np.moveaxis(x, dims, range(len(keep), x0.ndim)).reshape(out_shape + (-1,))
             if dims else x.reshape(out_shape + (1,)) for x in inputs]
    return moved, [np.broadcast_to(i, out_shape).copy() for i in inits]


def fold_steps(moved: list[np.ndarray], accs: list[np.ndarray], step: Step) -> list[np.ndarray]:
    """The sequential left fold of a reduce: ``step`` on the accumulators and each reduced
    element in turn (docs/decisions/hlo-eval.md HE5)."""
    for k in range(moved[0].shape[-1]):
        accs = step(accs, [m[..., k] for m in moved])
    return accs


def simple_reducer_opcode(comp: Any) -> str | None:
    """The opcode of a reducer ``ROOT r = op(p0, p1)`` on two scalar parameters, else None."""
    if len(comp.instructions) != 3:
        return None
    root = comp.root
    params = comp.parameters
    if len(params) != 2 or root.opcode not in (*_ORDER_FREE, *_SEQUENTIAL):
        return None
    if len(root.operands) != 2 or {id(o) for o in root.operands} != {id(p) for p in params}:
        return None
    if any(p.shape.is_tuple or p.shape.dimensions for p in params):
        return None
    return str(root.opcode)


def fast_fold(comp: Any, init: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """Fold ``values`` (reduced elements on the last axis) from ``init`` (the output shape) with
    the reducer ``comp``, or None when no fast path applies."""
    op = simple_reducer_opcode(comp)
    if op is None:
        return None
    t = comp.root.shape.element_type
    if op in _ORDER_FREE:
        bitwise, logical = _ORDER_FREE[op]
        if t == P.PRED:
            return round_to(logical(init, logical.reduce(values, axis=-1)), t)
        if op in ("and", "or") and not is_int_type(t):
            return None
        dt = compute_dtype(t)
        x = np.concatenate([init[..., None].astype(dt), values.astype(dt)], axis=-1)
        return round_to(bitwise.reduce(x, axis=-1), t)
    if is_int_type(t):
        dt = compute_dtype(t)
        with np.errstate(all="ignore"):
            folded = _SEQUENTIAL[op].reduce(values.astype(dt), axis=-1)
            return round_to(_SEQUENTIAL[op](init.astype(dt), folded), t)
    if is_float_type(t) and t in (P.F32, P.F64):
        dt = compute_dtype(t)
        if dt == np.float32:  # the C fold, NaN-free operands only (EM-17)
            got = fold_f32("add" if op == "add" else "mul", values.astype(dt, copy=False),
                           np.asarray(init).astype(dt, copy=False))  # fmt: skip
            if got is not None:
                return round_to(got, t)
        x = np.concatenate([init[..., None].astype(dt), values.astype(dt)], axis=-1)
        with np.errstate(all="ignore"):
            return round_to(_SEQUENTIAL[op].accumulate(x, axis=-1)[..., -1], t)
    return None
