"""HLO ``convolution``: every ``dim_labels``, window stride / padding (negative too) / lhs and rhs
dilation / reversal, ``feature_group_count`` and ``batch_group_count``.

The arithmetic follows the dot's rule (docs/decisions/hlo-eval.md §4 and §10): operands widened
exactly to float32 (float64 when an operand or the result is F64; exact int64 for integer
convolutions), each product rounded to that type, products added one at a time — kernel spatial
positions in row-major order outside, input features inside — starting from +0, one rounding per
addition, no FMA; the sum rounded once to the result type. Window positions that fall in the
padding or between dilated input elements contribute nothing (not a zero product, so an inf
weight there gives no NaN), as in XLA's HloEvaluator.

Vectorised over every output element: one NumPy step per (kernel position, input feature).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import is_int_type, round_to, widen
from pyprecision.errors import EmulationError
from pyprecision.hlo import (
    PrimitiveType,
    WindowDim,
    conv_output_dims,
    parse_dim_labels,
    parse_window,
)

P = PrimitiveType


def window_positions(w: WindowDim, base: int, out: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For window element ``k`` (already reversed if needed): the input index read by each of the
    ``out`` output positions, and whether it is a real element (not padding, not a hole left by
    lhs dilation)."""
    p = np.arange(out, dtype=np.int64) * w.stride + k * w.rhs_dilation - w.pad_lo
    on_grid = (p % w.lhs_dilation) == 0
    q = p // w.lhs_dilation
    valid = on_grid & (p >= 0) & (q < base)
    return np.where(valid, q, 0), valid


def _acc_dtype(inst: Any) -> np.dtype:
    types = [o.shape.element_type for o in inst.operands] + [inst.shape.element_type]
    if all(is_int_type(t) or t == P.PRED for t in types):
        return np.dtype(np.int64)
    return np.dtype(np.float64 if P.F64 in types else np.float32)


def convolution(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """convolution(input, kernel), window=, dim_labels=, feature_group_count=, batch_group_count=."""
    lhs, rhs = args
    try:
        dn = parse_dim_labels(inst.attr("dim_labels"), lhs.ndim)
        win = parse_window(inst.attr("window"), lhs.ndim - 2)
        fgc = (inst.attr_ints("feature_group_count") or [1])[0]
        bgc = (inst.attr_ints("batch_group_count") or [1])[0]
        out_dims = conv_output_dims(lhs.shape, rhs.shape, dn, win, fgc, bgc)
    except ValueError as e:
        raise EmulationError(f"{inst.name}: {e}") from None
    acc_dt = _acc_dtype(inst)
    x = np.transpose(np.asarray(widen(lhs)).astype(acc_dt), (dn.in_batch, dn.in_feature,
                                                            *dn.in_spatial))
    k = np.transpose(np.asarray(widen(rhs)).astype(acc_dt), (dn.k_out, dn.k_in, *dn.k_spatial))
    n, c = x.shape[:2]
    o, ki = k.shape[:2]
    n_out = n // bgc
    sp_out = tuple(out_dims[d] for d in dn.out_spatial)
    # which input batch / feature each output (batch, feature) reads, per input-feature step
    o_ids = np.arange(o)
    bidx = np.arange(n_out)[:, None] + (o_ids // (o // bgc))[None, :] * n_out  # [n_out, o]
    cbase = (o_ids // (o // fgc)) * (c // fgc)                              # [o]
    acc = np.zeros((n_out, o) + sp_out, dtype=acc_dt)
    expand = (slice(None), slice(None)) + (None,) * len(sp_out)
    with np.errstate(all="ignore"):
        for pos in np.ndindex(*k.shape[2:]):
            idx, mask = [], np.ones(sp_out, dtype=bool)
            for d, (w, kd) in enumerate(zip(win, pos, strict=True)):
                kk = w.size - 1 - kd if w.reversal else kd
                q, valid = window_positions(w, x.shape[2 + d], sp_out[d], kk)
                shape = [1] * len(sp_out)
                shape[d] = sp_out[d]
                idx.append(q.reshape(shape))
                mask = mask & valid.reshape(shape)
            if not mask.any():
                continue
            full = bool(mask.all())
            where: tuple[Any, ...] = (slice(None), slice(None)) + tuple(idx)
            xs = x[where] if idx else x                              # [n, c, *sp_out]
            for i in range(ki):
                if fgc == 1 and bgc == 1:                            # every output reads x[:, i]
                    vals = xs[:, i:i + 1]                            # [n, 1, *sp_out]
                else:
                    vals = xs[bidx, (cbase + i)[None, :]]            # [n_out, o, *sp_out]
                kern: tuple[Any, ...] = (slice(None), i) + tuple(pos)
                prod = vals * k[kern][None, :][expand]
                acc = acc + prod if full else np.where(mask, acc + prod, acc)
    perm = [0] * len(out_dims)
    perm[dn.out_batch], perm[dn.out_feature] = 0, 1
    for d, od in enumerate(dn.out_spatial):
        perm[od] = 2 + d
    return round_to(np.ascontiguousarray(np.transpose(acc, perm)), inst.shape.element_type)
