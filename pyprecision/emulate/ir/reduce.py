"""The loop IR's ``argreduce`` on NumPy values: the HLO evaluator's reduce (:mod:`.hlo_reduce`:
its element order and sequential fold; called, not copied) with JAX's argmax / argmin comparator
as the step (decision L21)."""

from __future__ import annotations

import numpy as np

from pyprecision.emulate.shared.reduce import fold_steps, reduce_layout

__all__ = ["arg_reduce", "arg_step"]


def arg_step(kind: str, a: np.ndarray, ia: np.ndarray, b: np.ndarray,
             ib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """JAX's comparator on the pair (a, ia) and the next element (b, ib): the value is ``a`` if
    ``a > b`` (``<`` for min) or ``a`` is NaN, else ``b``; the index is ``ia`` if the value picked
    ``a`` or ``a == b`` and ``ia < ib``, else ``ib``."""
    with np.errstate(invalid="ignore"):
        wins = (a > b) if kind == "max" else (a < b)
        pick = wins | (a != a)
        pick_index = pick | ((a == b) & (ia < ib))
    return np.where(pick, a, b), np.where(pick_index, ia, ib)


def arg_reduce(kind: str, dims: tuple[int, ...], x: np.ndarray, idx: np.ndarray,
               init: np.ndarray, index_init: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the ``kind`` argreduce of ``x`` with indices ``idx`` over ``dims``,
    from (``init``, ``index_init``), folded in the evaluator's order."""
    moved, accs = reduce_layout([np.asarray(x), np.asarray(idx)],
                                [np.asarray(init), np.asarray(index_init)], list(dims))

    def step(accs: list[np.ndarray], elems: list[np.ndarray]) -> list[np.ndarray]:
        return list(arg_step(kind, accs[0], accs[1], elems[0], elems[1]))

    values, indices = fold_steps(moved, accs, step)
    return values, indices
