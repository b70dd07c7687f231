"""The error of a flag set: one metric of every output against the ``--auto-cast none`` emulation,
the worst output counting (docs/tune.md; NaN and infinity: decision TU5)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from pyprecision.kernel import sq_sums

__all__ = ["METRICS", "error_of", "output_error"]


def _split(y: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(finite values of y, of r, whether the non-finite elements agree): a NaN or an infinity
    of the reference must be met by the same class in ``y`` (anything else is an infinite error)."""
    fin = np.isfinite(r)
    if fin.all():  # the usual case: no copy
        return y, r, bool(np.all(np.isfinite(y)))
    same = bool(np.array_equal(np.isnan(y[~fin]), np.isnan(r[~fin]))
                and np.array_equal(np.where(np.isnan(r[~fin]), 0, y[~fin]),
                                   np.where(np.isnan(r[~fin]), 0, r[~fin])))  # fmt: skip
    yf = y[fin]
    if not np.all(np.isfinite(yf)):
        same = False
    return yf, r[fin], same


def _as_f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def rel_l2(y: np.ndarray, r: np.ndarray) -> float:
    """‖y − r‖₂ / ‖r‖₂ (0 when both are zero, inf when only r is), from float64 sums in an order
    fixed by the size (``kernel.sq_sums``, decision TU23): the same bits on every machine and
    thread count. Two float32 outputs are summed as they are; any other pair in float64."""
    y, r = np.asarray(y), np.asarray(r)
    if y.dtype != np.float32 or r.dtype != np.float32:
        y, r = _as_f64(y), _as_f64(r)
    yf, rf, same = _split(y, r)
    if not same:
        return float("inf")
    den2, num2 = sq_sums(yf, rf)
    if num2 == 0.0:
        return 0.0
    return float(np.sqrt(num2) / np.sqrt(den2)) if den2 > 0 else float("inf")


def max_abs(y: np.ndarray, r: np.ndarray) -> float:
    """max |y − r| over the elements."""
    yf, rf, same = _split(_as_f64(y), _as_f64(r))
    if not same:
        return float("inf")
    return float(np.max(np.abs(yf - rf))) if yf.size else 0.0


def _ordered(a: np.ndarray) -> np.ndarray:
    """Each float's position on its number line, in units of its own format's ulp (int64)."""
    bits = a.dtype.itemsize * 8
    u = np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}").astype(np.int64)
    sign = (u >> (bits - 1)) & 1
    mag = u & ((1 << (bits - 1)) - 1)
    return np.where(sign != 0, -mag, mag)


def ulp(y: np.ndarray, r: np.ndarray) -> float:
    """The largest distance in units in the last place of the output's own format (the
    difference for integer outputs); NaN against NaN counts 0, against a number infinity."""
    y, r = np.asarray(y), np.asarray(r)
    if y.dtype.kind in "iub":
        return float(np.max(np.abs(y.astype(np.int64) - r.astype(np.int64)))) if y.size else 0.0
    ny, nr = np.isnan(_as_f64(y)), np.isnan(_as_f64(r))
    if not np.array_equal(ny, nr):
        return float("inf")
    keep = ~nr
    if not keep.any():
        return 0.0
    d = np.abs(_ordered(y)[keep] - _ordered(r.astype(y.dtype))[keep])
    return float(np.max(d))


def top1(y: np.ndarray, r: np.ndarray) -> float:
    """The fraction of rows (the last axis) whose argmax differs from the reference's; outputs
    that are not float or have one element a row: the fraction of elements that differ."""
    y, r = np.asarray(y), np.asarray(r)
    if y.size == 0:
        return 0.0
    if y.dtype.kind not in "fcV" and y.dtype.name != "bfloat16" or y.ndim == 0 or y.shape[-1] < 2:
        return float(np.mean(~((y == r) | (np.isnan(_as_f64(y)) & np.isnan(_as_f64(r))))))
    return float(np.mean(np.argmax(_as_f64(y), axis=-1) != np.argmax(_as_f64(r), axis=-1)))


#: metric name → per-output error
METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "rel-l2": rel_l2, "max-abs": max_abs, "ulp": ulp, "top1": top1,
}


def output_error(metric: str, y: np.ndarray, r: np.ndarray) -> float:
    """One output's error under ``metric``."""
    return METRICS[metric](np.asarray(y), np.asarray(r))


def error_of(metric: str, outs: Sequence[np.ndarray], ref: Sequence[np.ndarray]) -> float:
    """The worst output's error (0.0 for a module without outputs)."""
    return max((output_error(metric, y, r) for y, r in zip(outs, ref, strict=True)), default=0.0)
