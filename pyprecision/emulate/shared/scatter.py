"""``gather`` and ``scatter`` with every dimension-number form (offset / collapsed / batching
dimensions, any ``index_vector_dim``), vectorised: one fancy-indexing step for gather, one
vectorised combine per round of colliding targets for scatter.

gather clamps each window start into the operand (XLA). scatter skips an update window that
does not fit the operand entirely (XLA's HloEvaluator) and applies the ``to_apply`` combiner in
the order of the scatter indices (row-major), then window positions; updates that hit the same
element are combined one after another in that order. See docs/decisions/hlo-eval.md HE12.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.shared.window_ops import Fold, apply_in_order
from pyprecision.errors import EmulationError
from pyprecision.hlo import GatherDims, ScatterDims, gather_dims, gather_output_dims, scatter_dims


def _index_matrix(idx: np.ndarray, ivd: int) -> np.ndarray:
    """Indices as [batch..., K] int64 (index_vector_dim moved last; appended when == rank)."""
    if ivd == idx.ndim:
        idx = idx[..., None]
    return np.moveaxis(idx, ivd, -1).astype(np.int64)


def _placed(v: np.ndarray, axes: list[int], rank: int) -> np.ndarray:
    """``v`` (whose dims are output axes ``axes``, in order) reshaped to broadcast at rank."""
    shape = [1] * rank
    for a, n in zip(axes, v.shape, strict=True):
        shape[a] = n
    return v.reshape(shape)


def gather(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """gather(operand, start_indices), offset_dims=, collapsed_slice_dims=, start_index_map=,
    index_vector_dim=, slice_sizes=, operand_batching_dims=, start_indices_batching_dims=."""
    operand, indices = args
    try:
        g = gather_dims(inst)
        out_dims = gather_output_dims(operand.shape, indices.shape, g)
    except ValueError as e:
        raise EmulationError(f"{inst.name}: {e}") from None
    return gather_with(g, operand, indices, out_dims)


def gather_with(g: GatherDims, operand: np.ndarray, indices: np.ndarray,
                out_dims: tuple[int, ...]) -> np.ndarray:
    """The gather of ``operand`` at ``indices`` by dimension numbers ``g`` (already checked:
    ``out_dims`` is their result shape); also the loop IR's ``gather``."""
    rank = len(out_dims)
    starts = _index_matrix(indices, g.index_vector_dim)
    batch_axes = [d for d in range(rank) if d not in g.offset_dims]
    kept = [d for d in range(operand.ndim)
            if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims]
    idx_batch_pos = [sd if sd < g.index_vector_dim else sd - 1
                     for sd in g.start_indices_batching_dims]
    full = []
    for d in range(operand.ndim):
        start: Any = 0
        if d in g.start_index_map:
            k = g.start_index_map.index(d)
            hi = operand.shape[d] - g.slice_sizes[d]
            start = _placed(np.clip(starts[..., k], 0, max(hi, 0)), batch_axes, rank)
        if d in g.operand_batching_dims:
            pos = idx_batch_pos[g.operand_batching_dims.index(d)]
            n = starts.shape[pos]
            start = start + _placed(np.arange(n), [batch_axes[pos]], rank)
        if d in kept:
            j = kept.index(d)
            start = start + _placed(np.arange(g.slice_sizes[d]), [g.offset_dims[j]], rank)
        full.append(np.broadcast_to(np.asarray(start, dtype=np.int64), out_dims))
    if not full:
        return np.broadcast_to(operand, out_dims).copy()
    return np.ascontiguousarray(operand[tuple(full)]).reshape(out_dims)  # a rank-0 result stays ()


def scatter(inst: Any, args: list[np.ndarray], fold: Fold) -> Any:
    """scatter(operands..., scatter_indices, updates...), update_window_dims=,
    inserted_window_dims=, scatter_dims_to_operand_dims=, index_vector_dim=,
    input_batching_dims=, scatter_indices_batching_dims=, to_apply=."""
    n = (len(args) - 1) // 2
    outs = scatter_with(scatter_dims(inst), args[:n], args[n], args[n + 1:], fold)
    return outs[0] if n == 1 else tuple(outs)


def scatter_with(s: ScatterDims, operands: list[np.ndarray], indices: np.ndarray,
                 updates: list[np.ndarray], fold: Fold) -> list[np.ndarray]:
    """The scatter of ``updates`` into ``operands`` at ``indices`` by dimension numbers ``s``
    (shapes already checked); also the loop IR's ``scatter``."""
    x, u0 = operands[0], updates[0]
    starts = _index_matrix(indices, s.index_vector_dim)
    upd_scatter = [d for d in range(u0.ndim) if d not in s.update_window_dims]
    window_sorted = sorted(s.update_window_dims)
    perm = upd_scatter + window_sorted
    ups = [np.transpose(u, perm) for u in updates]   # [scatter dims..., window dims...]
    shape = ups[0].shape
    rank = len(shape)
    ns = len(upd_scatter)
    scat_axes = list(range(ns))
    win_operand = [d for d in range(x.ndim)
                   if d not in s.inserted_window_dims and d not in s.input_batching_dims]
    idx_batch_pos = [sd if sd < s.index_vector_dim else sd - 1
                     for sd in s.scatter_indices_batching_dims]
    flat = np.zeros(shape, dtype=np.int64)
    ok = np.ones(starts.shape[:-1], dtype=bool)
    stride = 1
    for d in reversed(range(x.ndim)):
        start: Any = np.zeros(starts.shape[:-1], dtype=np.int64)
        if d in s.scatter_dims_to_operand_dims:
            start = starts[..., s.scatter_dims_to_operand_dims.index(d)]
        size = 1
        if d in s.input_batching_dims:
            pos = idx_batch_pos[s.input_batching_dims.index(d)]
            start = start + _placed(np.arange(starts.shape[pos]), [pos], starts.ndim - 1)
        coord = _placed(np.broadcast_to(start, starts.shape[:-1]), scat_axes, rank)
        if d in win_operand:
            j = win_operand.index(d)
            size = shape[ns + j]
            coord = coord + _placed(np.arange(size), [ns + j], rank)
        ok &= (start >= 0) & (start <= x.shape[d] - size)
        flat = flat + coord * stride
        stride *= x.shape[d]
    keep = np.broadcast_to(_placed(ok, scat_axes, rank), shape)
    return apply_in_order(list(operands), flat[keep], [u[keep] for u in ups], fold)
