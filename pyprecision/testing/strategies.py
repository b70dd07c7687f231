"""Hypothesis strategies for testing cast code against a pyprecision format.

Every strategy takes a format (name, alias or Format) and yields numpy scalars: codes as Python
ints, values as ``np.float32`` (every value of every format is exact in float32). Needs
hypothesis (``pip install 'pyprecision[test]'``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from pyprecision.formats import Format
from pyprecision.formats import format as _format
from pyprecision.kernel import decode

__all__ = [
    "bit_patterns",
    "representable_values",
    "rounding_ties",
    "overflow_boundary",
    "subnormal_values",
    "nan_payloads",
    "float32_arrays",
    "cast_inputs",
]

_F32_MAX = float(np.finfo(np.float32).max)


def _value(f: Format, code: int) -> np.float32:
    return decode(np.array([code], f.storage_dtype), f)[0]


def _magnitudes(f: Format) -> int:
    """Number of codes of one sign."""
    return 1 << (f.bits - f.storage_shift - 1)


def _signed(s: st.SearchStrategy[np.float32]) -> st.SearchStrategy[np.float32]:
    return st.tuples(s, st.booleans()).map(lambda t: np.float32(-t[0]) if t[1] else t[0])


def _nudge(x: np.float32, ulps: int) -> np.float32:
    """``x`` moved by ``ulps`` float32 steps away from (+) or toward (−) zero."""
    for _ in range(abs(ulps)):
        x = np.nextafter(x, np.float32(np.inf) if ulps > 0 else np.float32(0))
    return np.float32(x)


def bit_patterns(
    fmt: Any, *, allow_nan: bool = True, allow_infinity: bool = True
) -> st.SearchStrategy[int]:
    """Every code of ``fmt`` (an int in storage position: fp32r codes have their low 13 bits 0)."""
    f = _format(fmt)
    s = st.integers(0, 2 * _magnitudes(f) - 1).map(lambda k: k << f.storage_shift)
    if not (allow_nan and allow_infinity):

        def keep(code: int) -> bool:
            v = float(_value(f, code))
            return (allow_nan or not math.isnan(v)) and (allow_infinity or not math.isinf(v))

        s = s.filter(keep)
    return s


def representable_values(
    fmt: Any, *, allow_nan: bool = False, allow_infinity: bool = False, allow_subnormal: bool = True
) -> st.SearchStrategy[np.float32]:
    """Values ``fmt`` represents exactly, as float32 (±0 included)."""
    f = _format(fmt)
    s = bit_patterns(f, allow_nan=allow_nan, allow_infinity=allow_infinity).map(
        lambda c: _value(f, c)
    )
    if not allow_subnormal:
        s = s.filter(lambda v: not (0 < abs(float(v)) < f.min_normal))
    return s


def rounding_ties(fmt: Any, *, ulps: tuple[int, ...] = (-1, 0, 1)) -> st.SearchStrategy[np.float32]:
    """float32 values exactly halfway between two neighbouring finite values of ``fmt`` (offset
    by each of ``ulps`` float32 steps, away from zero when positive), either sign, subnormal
    range included. The tie above max (the overflow tie) is in :func:`overflow_boundary`."""
    f = _format(fmt)
    top = f.max_bits >> f.storage_shift

    @st.composite
    def draw(d: Any) -> np.float32:
        k = d(st.integers(0, top - 1))
        lo, hi = _value(f, k << f.storage_shift), _value(f, (k + 1) << f.storage_shift)
        mid = np.float32((float(lo) + float(hi)) / 2)  # exact: one more bit than the format has
        return _nudge(mid, d(st.sampled_from(ulps)))

    return _signed(draw())


def _overflow_points(f: Format) -> list[np.float32]:
    ulp = 2.0 ** (math.floor(math.log2(f.max)) - f.mantissa_bits)
    pts: list[np.float32] = []
    for v in (f.max, f.max + ulp / 2, f.max + ulp, 2 * f.max, _F32_MAX):
        if v <= _F32_MAX and float(np.float32(v)) == v:
            pts += [_nudge(np.float32(v), k) for k in (-1, 0, 1) if not (v == _F32_MAX and k > 0)]
    return sorted(set(pts), key=float) + [np.float32(np.inf)]


def overflow_boundary(fmt: Any) -> st.SearchStrategy[np.float32]:
    """float32 values at and around ``fmt``'s overflow: max, the tie max + ulp/2, max + ulp (each
    ±1 float32 ulp), 2·max, float32's max, inf, and any float32 between max and max + ulp;
    either sign. (ulp is the step of max's binade, as if the exponent range went on.)"""
    f = _format(fmt)
    ulp = 2.0 ** (math.floor(math.log2(f.max)) - f.mantissa_bits)
    hi = min(f.max + ulp, _F32_MAX)
    between = st.floats(min_value=f.max, max_value=hi, width=32).map(np.float32)
    return _signed(st.one_of(st.sampled_from(_overflow_points(f)), between))


def subnormal_values(fmt: Any) -> st.SearchStrategy[np.float32]:
    """float32 values below ``fmt``'s smallest normal: its subnormals, the ties between them
    (incl. half the smallest subnormal), ±1 float32 ulp around those, and anything in between."""
    f = _format(fmt)
    steps = int(round(f.min_normal / f.min_subnormal))

    @st.composite
    def grid(d: Any) -> np.float32:
        half_steps = d(st.integers(0, 2 * steps - 1))
        return _nudge(
            np.float32(half_steps * f.min_subnormal / 2), d(st.sampled_from((-1, 0, 0, 1)))
        )

    anything = st.floats(
        min_value=0.0, max_value=f.min_normal, exclude_max=True, width=32, allow_subnormal=True
    ).map(np.float32)
    return _signed(st.one_of(grid(), anything))


def nan_payloads() -> st.SearchStrategy[np.float32]:
    """float32 NaNs with every sign, quiet bit and payload (signalling NaNs included)."""

    def make(t: tuple[bool, int]) -> np.float32:
        bits = np.array([(int(t[0]) << 31) | 0x7F800000 | t[1]], np.uint32)
        return bits.view(np.float32)[0]

    return st.tuples(st.booleans(), st.integers(1, (1 << 23) - 1)).map(make)


def float32_arrays(
    elements: st.SearchStrategy[np.float32], *, min_size: int = 1, max_size: int = 64
) -> st.SearchStrategy[np.ndarray]:
    """1-D float32 arrays of ``elements``, built from their bits (NaN payloads survive)."""

    def build(xs: list[np.float32]) -> np.ndarray:
        return np.array([np.float32(x).view(np.uint32) for x in xs], np.uint32).view(np.float32)

    return st.lists(elements, min_size=min_size, max_size=max_size).map(build)


def cast_inputs(fmt: Any) -> st.SearchStrategy[np.float32]:
    """All of the above for ``fmt`` mixed with arbitrary float32 values."""
    f = _format(fmt)
    return st.one_of(
        representable_values(f, allow_nan=True, allow_infinity=True),
        rounding_ties(f),
        overflow_boundary(f),
        subnormal_values(f),
        nan_payloads(),
        st.floats(width=32).map(np.float32),
    )
