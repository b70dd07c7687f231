"""Hypothesis strategies for *source* values of every input dtype pyprecision casts from.

:mod:`pyprecision.testing.strategies` yields float32 values; a cast from float64, float16,
bfloat16, an fp8 type or an integer goes wrong in other places, above all by **double rounding**:
a float64 value a few ULPs from a tie of the target rounds onto the tie when it passes through
float32 first, and then the tie goes to even — the wrong way half the time. The strategies here
yield numpy scalars of the source dtype aimed at the *target* format's ties (a few source ULPs
either side), overflow boundary, subnormal range and at the source's NaN payloads. Build arrays
with :func:`source_arrays` (from the bits, so NaN payloads survive). Needs hypothesis.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from pyprecision.errors import CastError
from pyprecision.formats import Format
from pyprecision.formats import format as _format
from pyprecision.kernel import decode, encode

__all__ = [
    "SOURCE_DTYPES",
    "near_ties",
    "source_overflow",
    "source_subnormals",
    "source_nans",
    "source_bit_patterns",
    "source_values",
    "source_arrays",
]

#: Every source dtype ``pyprecision.encode`` reads directly.
SOURCE_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(d)
    for d in (
        np.float64, np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3,
        ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.int8, np.int16, np.int32, np.int64,
        np.uint8, np.uint16, np.uint32, np.uint64,
    )
)


def _dtype(source: Any) -> np.dtype:
    dt = np.dtype(source)
    if dt not in SOURCE_DTYPES:
        names = ", ".join(d.name for d in SOURCE_DTYPES)
        raise CastError(f"unsupported source dtype {dt}; supported: {names}")
    return dt


def _is_float(dt: np.dtype) -> bool:
    return dt.kind not in "iu"  # the ml_dtypes floats have kind "V"


def _uint(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{dt.itemsize}")


def _from_bits(bits: int, dt: np.dtype) -> Any:
    return np.array([bits], _uint(dt)).view(dt)[0]


def _bits(x: Any, dt: np.dtype) -> int:
    return int(np.asarray(x, dtype=dt).reshape(1).view(_uint(dt))[0])


@cache
def _max_bits(dt: np.dtype) -> int:
    """Bits of the largest finite value of a float source dtype."""
    return _bits(ml_dtypes.finfo(dt).max, dt)


def _round_to(v: float, dt: np.dtype) -> Any:
    """The float64 value ``v`` rounded once (RNE) to float source dtype ``dt``."""
    if dt.itemsize >= 2 and dt.name in ("float64", "float32", "float16"):
        return np.array([v], np.float64).astype(dt)[0]  # IEEE conversions: rounded once
    codes = encode(np.array([v], np.float64), _format(dt), saturate=False)
    return codes.view(dt)[0]


def _nudge(v: float, ulps: int, dt: np.dtype) -> Any:
    """``v`` rounded to ``dt`` and moved ``ulps`` steps of ``dt`` away from (+) or toward (-) 0."""
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return dt.type(min(max(int(v) + (ulps if v >= 0 else -ulps), info.min), info.max))
    x = _round_to(v, dt)
    b = _bits(x, dt)
    sign = b & (1 << (8 * dt.itemsize - 1))
    mag = min(max((b ^ sign) + ulps, 0), _max_bits(dt))
    return _from_bits(sign | mag, dt)


@cache
def _values(f: Format) -> np.ndarray:
    """Every non-negative finite value of ``f`` in code order, as float64 (decoded once)."""
    top = f.max_bits >> f.storage_shift
    codes = (np.arange(top + 1, dtype=np.uint64) << f.storage_shift).astype(f.storage_dtype)
    return decode(codes, f).astype(np.float64)


def _value(f: Format, k: int) -> float:
    return float(_values(f)[k])


def _signed(s: st.SearchStrategy[float], dt: np.dtype) -> st.SearchStrategy[float]:
    if dt.kind == "u":
        return s
    return st.tuples(s, st.booleans()).map(lambda t: -t[0] if t[1] else t[0])


def _clamp(v: float, dt: np.dtype) -> float:
    """``v`` limited to ``dt``'s finite range (a point past the source's max becomes its max)."""
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return min(max(int(v), int(info.min)), int(info.max))
    top = float(ml_dtypes.finfo(dt).max)
    return min(max(v, -top), top)


def _around(points: st.SearchStrategy[float], dt: np.dtype, ulps: int) -> st.SearchStrategy[Any]:
    """Each point (either sign, clamped to ``dt``'s range) moved by -ulps..+ulps steps of ``dt``."""
    pts = _signed(points, dt).map(lambda v: _clamp(v, dt))
    return st.tuples(pts, st.integers(-ulps, ulps)).map(lambda t: _nudge(t[0], t[1], dt))


def _ties(f: Format) -> st.SearchStrategy[float]:
    """Exact halfway points between neighbouring finite values of ``f`` (as float64), the
    subnormal range (and the tie between 0 and the smallest subnormal) drawn often."""
    top = f.max_bits >> f.storage_shift
    n_sub = int(round(f.min_normal / f.min_subnormal))
    k = st.one_of(st.integers(0, n_sub), st.integers(0, top - 1))
    return k.map(lambda i: (_value(f, i) + _value(f, i + 1)) / 2)


def _integer_ties(f: Format, dt: np.dtype) -> st.SearchStrategy[int]:
    """Ties of ``f`` that are integers (the format's step is >= 2 there) within ``dt``'s range,
    and the points where float32 / float64 stop holding integers (2**24 + 1, 2**53 + 1)."""
    m = f.mantissa_bits
    hi = min(math.floor(math.log2(f.max)), 8 * dt.itemsize - (1 if dt.kind == "i" else 0) - 1)
    specials = [2**e + 1 for e in (24, 25, 53, 54) if e <= hi] or [0]
    if hi < m + 1:
        return st.sampled_from(specials)
    binade = st.tuples(st.integers(m + 1, hi), st.integers(0, 2**m - 1))
    tie = binade.map(lambda t: 2 ** t[0] + (2 * t[1] + 1) * 2 ** (t[0] - m - 1))
    return st.one_of(tie, st.sampled_from(specials))


def near_ties(fmt: Any, source: Any = np.float64, *, ulps: int = 3) -> st.SearchStrategy[Any]:
    """Source values within ``ulps`` steps of the source dtype of a tie of ``fmt`` (the tie itself
    included when the source holds it), either sign, subnormal ties included: the inputs that
    double rounding (source -> float32 -> fmt) gets wrong. Integer sources get the integer ties."""
    f, dt = _format(fmt), _dtype(source)
    points = _integer_ties(f, dt) if dt.kind in "iu" else _ties(f)
    return _around(points, dt, ulps)


def _overflow_points(f: Format, dt: np.dtype) -> list[Any]:
    ulp = 2.0 ** (math.floor(math.log2(f.max)) - f.mantissa_bits)
    pts = [f.max, f.max + ulp / 2, f.max + ulp, 2 * f.max]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return [int(p) for p in pts if p <= info.max and p == int(p)] + [int(info.max)]
    return pts + [float(ml_dtypes.finfo(dt).max)]


def source_overflow(fmt: Any, source: Any = np.float64, *, ulps: int = 3) -> st.SearchStrategy[Any]:
    """Source values around ``fmt``'s overflow (within ``ulps`` source steps of max, of the tie
    max + ulp/2, of max + ulp, 2·max and the source's own max), either sign, and ±inf."""
    f, dt = _format(fmt), _dtype(source)
    s = _around(st.sampled_from(_overflow_points(f, dt)), dt, ulps)
    if _is_float(dt):
        s = st.one_of(s, st.sampled_from([dt.type(np.inf), dt.type(-np.inf)]))
    return s


def source_subnormals(
    fmt: Any, source: Any = np.float64, *, ulps: int = 3
) -> st.SearchStrategy[Any]:
    """Source values below ``fmt``'s smallest normal: its subnormals and the ties between them
    (half the smallest subnormal too) within ``ulps`` source steps, either sign, and the source's
    own values in that range (its subnormals included). Float sources only."""
    f, dt = _format(fmt), _dtype(source)
    if not _is_float(dt):
        raise CastError(f"{dt} has no values below {f.name}'s smallest normal but 0")
    steps = int(round(f.min_normal / f.min_subnormal))
    grid = st.integers(0, 2 * steps).map(lambda j: j * f.min_subnormal / 2)
    below = _bits(_round_to(f.min_normal, dt), dt)
    raw = st.integers(0, max(below - 1, 0)).map(lambda b: _from_bits(b, dt))
    return st.one_of(_around(grid, dt, ulps), _signed_scalar(raw, dt))


def _signed_scalar(s: st.SearchStrategy[Any], dt: np.dtype) -> st.SearchStrategy[Any]:
    sign = 1 << (8 * dt.itemsize - 1)
    return st.tuples(s, st.booleans()).map(
        lambda t: _from_bits(_bits(t[0], dt) | (sign if t[1] else 0), dt)
    )


@cache
def _small_nans(dt: np.dtype) -> tuple[int, ...]:
    every = np.arange(1 << (8 * dt.itemsize), dtype=np.uint32).astype(_uint(dt)).view(dt)
    return tuple(int(b) for b in np.flatnonzero(np.isnan(every.astype(np.float32))))


def source_nans(source: Any = np.float64) -> st.SearchStrategy[Any]:
    """NaNs of a float source dtype with every sign, quiet bit and payload (signalling too)."""
    dt = _dtype(source)
    if not _is_float(dt):
        raise CastError(f"{dt} has no NaN")
    if dt.itemsize <= 2:
        return st.sampled_from(_small_nans(dt)).map(lambda b: _from_bits(b, dt))
    m = ml_dtypes.finfo(dt).nmant
    exp = _max_bits(dt) + 1 & ~((1 << m) - 1)  # exponent all ones, mantissa 0 (= inf)
    sign = 1 << (8 * dt.itemsize - 1)
    return st.tuples(st.booleans(), st.integers(1, (1 << m) - 1)).map(
        lambda t: _from_bits((sign if t[0] else 0) | exp | t[1], dt)
    )


def source_bit_patterns(source: Any = np.float64) -> st.SearchStrategy[Any]:
    """Any value of the source dtype, drawn as a bit pattern (every NaN, inf and subnormal)."""
    dt = _dtype(source)
    return st.integers(0, (1 << (8 * dt.itemsize)) - 1).map(lambda b: _from_bits(b, dt))


def source_values(fmt: Any, source: Any = np.float64) -> st.SearchStrategy[Any]:
    """All of the above for casting ``source`` values to ``fmt``, mixed with arbitrary values."""
    f, dt = _format(fmt), _dtype(source)
    parts = [near_ties(f, dt), source_overflow(f, dt), source_bit_patterns(dt)]
    if _is_float(dt):
        parts += [source_subnormals(f, dt), source_nans(dt)]
    else:
        info = np.iinfo(dt)
        parts.append(st.integers(max(-3, int(info.min)), 3).map(dt.type))
    return st.one_of(*parts)


def source_arrays(
    elements: st.SearchStrategy[Any], source: Any, *, min_size: int = 1, max_size: int = 64
) -> st.SearchStrategy[np.ndarray]:
    """1-D arrays of ``source`` dtype built from the bits of ``elements`` (NaN payloads survive)."""
    dt = _dtype(source)
    u = _uint(dt)

    def build(xs: list[Any]) -> np.ndarray:
        return np.array([_bits(x, dt) for x in xs], u).view(dt)

    return st.lists(elements, min_size=min_size, max_size=max_size).map(build)
