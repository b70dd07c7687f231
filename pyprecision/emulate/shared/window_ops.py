"""``reduce-window`` and ``select-and-scatter`` (pooling and its gradient), vectorised over all
windows at once: one NumPy step per window element.

reduce-window: each output starts from the init value and folds the window's elements in
row-major window order with the reducer; padding and lhs-dilation holes are skipped (XLA's
HloEvaluator). select-and-scatter: in each window the first element (row-major) is selected, and
each later one replaces it when ``select(selected, current)`` is false; the output starts as the
init value everywhere and every source element is combined into its selected position with
``scatter``, in row-major source order (``apply_in_order``). See docs/decisions/hlo-eval.md HE11.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyprecision.emulate.shared.conv import window_positions
from pyprecision.errors import EmulationError
from pyprecision.hlo import WindowDim, parse_window

#: (accumulators, elements) -> new accumulators, elementwise over equal-shaped arrays.
Fold = Callable[[list[np.ndarray], list[np.ndarray]], list[np.ndarray]]


def _window(inst: Any, rank: int) -> list[WindowDim]:
    try:
        return parse_window(inst.attr("window"), rank)
    except ValueError as e:
        raise EmulationError(f"{inst.name}: {e}") from None


def _steps(win: list[WindowDim], base: tuple[int, ...],
           out: tuple[int, ...]) -> list[tuple[tuple[np.ndarray, ...], np.ndarray]]:
    """Per window element (row-major): the operand index arrays and the validity mask, both
    broadcastable to ``out``."""
    steps = []
    for pos in np.ndindex(*(w.size for w in win)):
        idx, mask = [], np.ones(out, dtype=bool)
        for d, (w, k) in enumerate(zip(win, pos, strict=True)):
            q, valid = window_positions(w, base[d], out[d], k)
            shape = [1] * len(out)
            shape[d] = out[d]
            idx.append(q.reshape(shape))
            mask = mask & valid.reshape(shape)
        steps.append((tuple(idx), mask))
    return steps


def reduce_window(inst: Any, args: list[np.ndarray], fold: Fold) -> Any:
    """reduce-window(inputs..., inits...), window=, to_apply=."""
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    win = _window(inst, inputs[0].ndim)
    out = tuple(w.output_size(b) for w, b in zip(win, inputs[0].shape, strict=True))
    accs = [np.broadcast_to(i, out).copy() for i in inits]
    for idx, mask in _steps(win, inputs[0].shape, out):
        if not mask.any():
            continue
        elems = [np.broadcast_to(x[idx], out) for x in inputs]
        new = fold(accs, elems)
        accs = [np.where(mask, v, a).astype(a.dtype) for v, a in zip(new, accs, strict=True)]
    return accs[0] if n == 1 else tuple(accs)


def apply_in_order(out: list[np.ndarray], flat_target: np.ndarray, values: list[np.ndarray],
                   fold: Fold) -> list[np.ndarray]:
    """``out[t] = fold(out[t], v)`` for each (t, v) pair in the given order; pairs hitting the
    same target are applied one after another, distinct targets together (rounds of a stable
    sort by target)."""
    flats = [o.reshape(-1).copy() for o in out]
    if flat_target.size == 0:
        return [f.reshape(o.shape) for f, o in zip(flats, out, strict=True)]
    order = np.argsort(flat_target, kind="stable")
    t = flat_target[order]
    vals = [v.reshape(-1)[order] for v in values]
    first = np.r_[True, t[1:] != t[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(t.size), 0))
    rank = np.arange(t.size) - group_start
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        tr = t[sel]
        new = fold([f[tr] for f in flats], [v[sel] for v in vals])
        for f, v in zip(flats, new, strict=True):
            f[tr] = v
    return [f.reshape(o.shape) for f, o in zip(flats, out, strict=True)]


def select_and_scatter(inst: Any, args: list[np.ndarray], select: Fold, scatter: Fold) -> Any:
    """select-and-scatter(operand, source, init), window=, select=, scatter=."""
    x, src, init = args
    return select_and_scatter_with(_window(inst, x.ndim), x, src, init, select, scatter, inst.name)


def select_and_scatter_with(win: list[WindowDim], x: np.ndarray, src: np.ndarray, init: Any,
                            select: Fold, scatter: Fold, what: str) -> Any:
    """select-and-scatter on arrays with the window ``win`` (also the loop IR's, decision L19)."""
    out = tuple(w.output_size(b) for w, b in zip(win, x.shape, strict=True))
    if src.shape != out:
        raise EmulationError(f"{what}: source shape {src.shape} != window output {out}")
    strides = np.array([int(np.prod(x.shape[d + 1:])) for d in range(x.ndim)], dtype=np.int64)
    best_val: np.ndarray | None = None
    best_at = np.full(out, -1, dtype=np.int64)
    for idx, mask in _steps(win, x.shape, out):
        if not mask.any():
            continue
        cur = np.broadcast_to(x[idx], out)
        flat = sum((i * s for i, s in zip(idx, strides, strict=True)), np.zeros(out, np.int64))
        if best_val is None:
            take = mask.copy()
            best_val = np.where(take, cur, cur)
        else:
            (keep,) = select([best_val], [cur])
            take = mask & ((best_at < 0) | ~np.asarray(keep, dtype=bool))
        best_val = np.where(take, cur, best_val)
        best_at = np.where(take, np.broadcast_to(flat, out), best_at)
    result = np.broadcast_to(init, x.shape).copy()
    has = best_at >= 0
    (res,) = apply_in_order([result], best_at[has], [src[has]], scatter)
    return res
