"""The loop IR's ``gather`` and ``scatter`` on NumPy values: the HLO evaluator's index arithmetic
(:mod:`.hlo_scatter`, called, not copied), given the IR op's dimension numbers (decision L15)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.hlo_scatter import gather_with, scatter_with
from pyprecision.emulate.hlo_window_ops import Fold
from pyprecision.hlo import GatherDims, ScatterDims, gather_output_dims

__all__ = ["gather", "scatter"]


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
