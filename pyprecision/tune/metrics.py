"""The error of a flag set: one metric of every output against the ``--auto-cast none`` emulation,
the worst output counting (docs/tune.md; NaN and infinity: decision TU5)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["METRICS", "error_of", "output_error"]


def _split(y: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(finite values of y, of r, whether the non-finite elements agree): a NaN or an infinity
    of the reference must be met by the same class in ``y`` (anything else is an infinite error)."""
    fin = np.isfinite(r)
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
    """‖y − r‖₂ / ‖r‖₂ (0 when both are zero, inf when only r is)."""
    yf, rf, same = _split(_as_f64(y), _as_f64(r))
    if not same:
        return float("inf")
    num = float(np.linalg.norm(yf - rf))
    den = float(np.linalg.norm(rf))
    if num == 0.0:
        return 0.0
    return num / den if den > 0 else float("inf")


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
