"""HLO ``convolution``: every ``dim_labels``, window stride / padding (negative too) / lhs and rhs
dilation / reversal, ``feature_group_count`` and ``batch_group_count``.

The arithmetic follows the dot's rule (docs/decisions/hlo-eval.md HE4 and HE10): operands widened
exactly to float32 (float64 when an operand or the result is F64; exact int64 for integer
convolutions), each product rounded to that type, products added one at a time — kernel spatial
positions in row-major order outside, input features inside — starting from +0, one rounding per
addition, no FMA; the sum rounded once to the result type. Window positions that fall in the
padding or between dilated input elements contribute nothing (not a zero product, so an inf
weight there gives no NaN), as in XLA's HloEvaluator.

With finite weights (and batch_group_count 1) it is one PE dot per feature group after im2col
(``_as_dot``, the same products added in the same order); otherwise vectorised over every output
element: one NumPy step per (kernel position, input feature).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import is_int_type, round_to, widen
from pyprecision.errors import CastError, EmulationError
from pyprecision.hlo import (
    PrimitiveType,
    WindowDim,
    conv_output_dims,
    parse_dim_labels,
    parse_window,
)
from pyprecision.kernel import pe_matmul

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


#: The im2col route's largest column matrix; a larger one takes the loop below (same bits).
DOT_COLUMNS_MAX_BYTES = 256 << 20
#: Tests turn the im2col route off to compare it with the loop on the same inputs.
USE_DOT = True


def _dot_applies(k: np.ndarray, acc_dt: np.dtype, bgc: int) -> bool:
    """The im2col route gives the loop's bits when every weight is finite: a window position in
    the padding (or a hole of lhs dilation) becomes a product 0 · w = ±0, and adding ±0 to a sum
    that started at +0 changes nothing (such a sum is never -0; decision N5) — unlike 0 · inf."""
    return USE_DOT and acc_dt != np.int64 and bgc == 1 and bool(np.isfinite(k).all())


def _as_dot(x: np.ndarray, k: np.ndarray, win: list[WindowDim], sp_out: tuple[int, ...],
            fgc: int, name: str) -> np.ndarray | None:
    """The convolution as one PE dot per feature group (a batched pe_matmul): columns [n·S, P·ki]
    in the loop's order (kernel positions row-major outside, input features inside) against the
    weights [P·ki, o/fgc]; None where the columns would exceed DOT_COLUMNS_MAX_BYTES."""
    n, c = x.shape[:2]
    o, ki = k.shape[:2]
    ks = k.shape[2:]
    npos, nsp = int(np.prod(ks, dtype=np.int64)), int(np.prod(sp_out, dtype=np.int64))
    if n * nsp * npos * c * x.dtype.itemsize > DOT_COLUMNS_MAX_BYTES or o == 0:
        return None
    cols = np.zeros((n, *sp_out, npos, c), x.dtype)
    for p, pos in enumerate(np.ndindex(*ks)):
        idx, mask = [], np.ones(sp_out, dtype=bool)
        for d, (w, kd) in enumerate(zip(win, pos, strict=True)):
            q, valid = window_positions(w, x.shape[2 + d], sp_out[d],
                                        w.size - 1 - kd if w.reversal else kd)
            shape = [1] * len(sp_out)
            shape[d] = sp_out[d]
            idx.append(q.reshape(shape))
            mask = mask & valid.reshape(shape)
        where: tuple[Any, ...] = (slice(None), slice(None)) + tuple(idx)
        xs = x[where] if idx else x                                  # [n, c, *sp_out]
        cols[..., p, :] = np.moveaxis(np.where(mask, xs, 0), 1, -1)
    og = o // fgc
    lhs = cols.reshape(n * nsp, npos, fgc, ki).transpose(2, 0, 1, 3).reshape(fgc, n * nsp,
                                                                             npos * ki)
    rhs = k.reshape(fgc, og, ki, npos).transpose(0, 3, 2, 1).reshape(fgc, npos * ki, og)
    try:
        res = pe_matmul(lhs, rhs, x.dtype)                            # [fgc, n·S, og]
    except CastError as e:
        raise EmulationError(f"{name}: {e}") from None
    res = res.reshape(fgc, n, nsp, og).transpose(1, 0, 3, 2)          # [n, fgc, og, S]
    return np.ascontiguousarray(res.reshape((n, o) + tuple(sp_out)))


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
    fast = _as_dot(x, k, win, sp_out, fgc, inst.name) if _dot_applies(k, acc_dt, bgc) else None
    acc = fast if fast is not None else np.zeros((n_out, o) + sp_out, dtype=acc_dt)
    expand = (slice(None), slice(None)) + (None,) * len(sp_out)
    with np.errstate(all="ignore"):
        for pos in (() if fast is not None else np.ndindex(*k.shape[2:])):
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
