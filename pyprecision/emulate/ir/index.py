"""The loop IR's ``gather``, ``scatter`` and ``sort_perm`` on NumPy values: the HLO evaluator's
index arithmetic and sort (:mod:`.hlo_scatter`, :mod:`.hlo_sort`; called, not copied), given the
IR op's dimension numbers and key flags (decisions L15, L17)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.shared.scatter import gather_with, scatter_with
from pyprecision.emulate.shared.sort import _descending, _permutation, order_key
from pyprecision.emulate.shared.window_ops import Fold
from pyprecision.hlo import GatherDims, PrimitiveType, ScatterDims, gather_output_dims

__all__ = ["gather", "scatter", "sort_perm"]


def gather(op: Any, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``gather`` of the IR op ``op`` (a verified GatherOp) on values ``x`` at ``indices``."""
    g = GatherDims(op.offset_dims, op.collapsed_slice_dims, op.start_index_map,
                   op.index_vector_dim, op.slice_sizes, op.operand_batching_dims,
                   op.start_indices_batching_dims)
    return gather_with(g, x, indices, gather_output_dims(x.shape, indices.shape, g))


def scatter(op: Any, x: np.ndarray, indices: np.ndarray, updates: np.ndarray,
            fold: Fold) -> np.ndarray:
    """``scatter`` of the IR op ``op`` (a verified ScatterOp): ``updates`` combined into ``x``
    at ``indices`` with ``fold``."""
    s = ScatterDims(op.update_window_dims, op.inserted_window_dims,
                    op.scatter_dims_to_operand_dims, op.index_vector_dim, op.input_batching_dims,
                    op.scatter_indices_batching_dims)
    (out,) = scatter_with(s, [x], indices, [updates], fold)
    return out


def _key_values(op: Any, k: int, x: np.ndarray) -> tuple[np.ndarray, PrimitiveType]:
    """Key ``k``'s values (JAX's NaN / -0 canonicalisation applied when asked) and the HLO type
    whose order they follow (float values widened to float64, exactly; integers are int64 / uint64)."""
    if op.keys[k].dtype.is_float:
        x = np.asarray(x, dtype=np.float64)
        if op.canonical[k]:
            x = np.where(np.isnan(x), np.nan, np.where(x == 0, 0.0, x))
        return x, PrimitiveType.F64
    return x, PrimitiveType.U64 if x.dtype == np.uint64 else PrimitiveType.S64


def sort_perm(op: Any, keys: list[np.ndarray]) -> np.ndarray:
    """The stable permutation ``sort_perm`` describes: one orderable key is argsorted as the HLO
    evaluator does; otherwise the lexicographic comparator is evaluated pairwise with the
    evaluator's rank rule."""
    vals = [_key_values(op, k, np.moveaxis(x, op.dim, -1)) for k, x in enumerate(keys)]
    if len(vals) == 1:
        key = order_key(vals[0][0], vals[0][1], bool(op.total[0]))
        if key is not None:
            key = _descending(key) if op.descending[0] else key
            return np.moveaxis(np.argsort(key, axis=-1, kind="stable"), -1, op.dim)

    def compare(k: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if op.total[k]:  # a total-order key always exists (order_key is None only when partial)
            a, b = (np.asarray(order_key(np.asarray(v), vals[k][1], True)) for v in (a, b))
        less = (b < a) if op.descending[k] else (a < b)
        return less, a == b

    def fold(accs: list[np.ndarray], rest: list[np.ndarray]) -> list[np.ndarray]:
        pairs = [accs[0]] + rest
        less = compare(len(vals) - 1, pairs[-2], pairs[-1])[0]
        for k in range(len(vals) - 2, -1, -1):
            lt, eq = compare(k, pairs[2 * k], pairs[2 * k + 1])
            less = lt | (eq & less)
        return [less]

    perm = _permutation(None, [v for v, _ in vals], None, fold, None)
    return np.moveaxis(perm, -1, op.dim)
