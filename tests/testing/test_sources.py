"""The source-dtype strategies yield what they promise, checked against a pure-arithmetic model of
the target formats (MODEL below: CAST_SEMANTICS.md §1), independent of the cast core."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

import pyprecision as pp
from pyprecision.errors import CastError
from pyprecision.testing import sources as ps

FORMATS = ["bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"]
MODEL = {  # mantissa bits, bias, largest finite value
    "bf16": (7, 127, (2 - 2**-7) * 2.0**127),
    "fp16": (10, 15, 65504.0),
    "fp32r": (10, 127, (2 - 2**-10) * 2.0**127),
    "fp8e4": (3, 7, 240.0),
    "fp8e4m3fn": (3, 7, 448.0),
    "fp8e5": (2, 15, 57344.0),
}
FLOAT_SOURCES = [d for d in ps.SOURCE_DTYPES if d.kind not in "iu"]
INT_SOURCES = [d for d in ps.SOURCE_DTYPES if d.kind in "iu"]
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def step(v: float, fmt: str) -> float:
    """The spacing of ``fmt``'s values around |v| (subnormal spacing below the normal range)."""
    m, bias, _ = MODEL[fmt]
    e = max(math.floor(math.log2(abs(v))) if v else 1 - bias, 1 - bias)
    return 2.0 ** (e - m)


def nearest_tie(v: float, fmt: str) -> float:
    """The tie of ``fmt`` (an odd multiple of half its step) nearest to |v|."""
    s = step(v, fmt)
    return (2 * round(abs(v) / s - 0.5) + 1) * s / 2


def f64_steps(a: float, b: float) -> int:
    """How many float64 values apart two non-negative float64s are."""
    bits = np.array([a, b], np.float64).view(np.int64)
    return abs(int(bits[0]) - int(bits[1]))


@pytest.mark.parametrize("src", ps.SOURCE_DTYPES, ids=lambda d: d.name)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_source_values_have_the_source_dtype(src, data):
    fmt = data.draw(st.sampled_from(FORMATS))
    x = data.draw(ps.source_arrays(ps.source_values(fmt, src), src, max_size=4))
    assert x.dtype == src and 1 <= x.size <= 4
    pp.encode(x, fmt)  # every value is a valid input


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_float64_near_ties_are_a_few_ulps_from_a_tie(data):
    fmt = data.draw(st.sampled_from(FORMATS))
    v = float(data.draw(ps.near_ties(fmt, np.float64, ulps=3)))
    t = nearest_tie(abs(v), fmt)
    assert f64_steps(abs(v), t) <= 3, (v.hex(), t.hex())


def _double_rounds(fmt: str):
    def cond(v: np.float64) -> bool:
        x = np.array([v], np.float64)
        return bool(pp.encode(x, fmt) != pp.encode(x.astype(np.float32), fmt))
    return cond


@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5"])
def test_near_ties_find_the_double_rounding_inputs(fmt):
    """float64 -> float32 -> fmt differs from float64 -> fmt on values the strategy finds (the
    case plain ``floats(width=64)`` practically never draws)."""
    v = find(ps.near_ties(fmt, np.float64), _double_rounds(fmt),
             settings=settings(max_examples=2000, database=None))
    x = np.float64(v)
    t = np.float32(x)
    assert float(t) != float(x) and float(t) == nearest_tie(abs(float(t)), fmt) * np.sign(x)


def test_near_ties_shrink_to_the_issue_14_inputs():
    """The smallest double-rounding inputs are the two ml_dtypes reports of issue 14."""
    for fmt, bits in (("bf16", 0x3790000000000001), ("fp8e4m3fn", 0x3F50000000000001)):
        v = find(ps.near_ties(fmt, np.float64), _double_rounds(fmt),
                 settings=settings(max_examples=2000, database=None, derandomize=True))
        assert int(np.array([v], np.float64).view(np.uint64)[0]) == bits


def is_int_tie(n: int, m: int) -> bool:
    """n is halfway between two neighbouring values of a format with m mantissa bits."""
    e = n.bit_length() - 1
    return e >= m + 1 and n % (1 << (e - m)) == 1 << (e - m - 1)


@pytest.mark.parametrize("src", INT_SOURCES, ids=lambda d: d.name)
@SETTINGS
@given(data=st.data())
def test_integer_near_ties_are_near_an_integer_tie(src, data):
    fmt = data.draw(st.sampled_from(["bf16", "fp16", "fp8e4m3fn", "fp8e5"]))
    v = data.draw(ps.near_ties(fmt, src))
    assert isinstance(v, src.type)
    n, info, m = abs(int(v)), np.iinfo(src), MODEL[fmt][0]
    near = range(max(n - 3, 0), n + 4)
    tie = any(is_int_tie(k, m) for k in near)
    f32_edge = any(k - 1 in (2**24, 2**25, 2**53, 2**54) for k in near)
    clamped = n <= 3 or int(v) >= info.max - 3 or int(v) <= info.min + 3
    assert tie or f32_edge or clamped, int(v)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_float64_overflow_values_surround_the_overflow_points(data):
    fmt = data.draw(st.sampled_from(FORMATS))
    v = float(data.draw(ps.source_overflow(fmt, np.float64)))
    mx = MODEL[fmt][2]
    ulp = step(mx, fmt)
    if math.isinf(v):
        return
    pts = [mx, mx + ulp / 2, mx + ulp, 2 * mx, float(np.finfo(np.float64).max)]
    assert min(f64_steps(abs(v), p) for p in pts) <= 3


@pytest.mark.parametrize("src", [np.dtype(np.float64), np.dtype(np.float32)], ids=str)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_subnormal_values_are_below_the_smallest_normal(src, data):
    fmt = data.draw(st.sampled_from(FORMATS))
    v = float(data.draw(ps.source_subnormals(fmt, src)))
    _, bias, _ = MODEL[fmt]
    # the grid's top point, the smallest normal itself, may be nudged up by a few source ulps
    assert abs(v) <= 2.0 ** (1 - bias) * (1 + 2.0**-20)


@pytest.mark.parametrize("src", FLOAT_SOURCES, ids=lambda d: d.name)
@SETTINGS
@given(data=st.data())
def test_source_nans_are_nans_with_varied_payloads(src, data):
    x = data.draw(ps.source_arrays(ps.source_nans(src), src, min_size=8, max_size=8))
    with np.errstate(invalid="ignore"):  # signalling NaNs raise the invalid flag
        assert np.all(np.isnan(x))


@pytest.mark.parametrize("src", [np.float64, np.float16, ml_dtypes.bfloat16])
def test_source_nans_reach_signalling_and_negative_payloads(src):
    dt = np.dtype(src)
    u = np.dtype(f"u{dt.itemsize}")
    sign = 1 << (8 * dt.itemsize - 1)
    quiet = 1 << (ml_dtypes.finfo(dt).nmant - 1)

    def bits(x):
        return int(np.array([x], dt).view(u)[0])

    s = settings(max_examples=500, database=None)
    find(ps.source_nans(dt), lambda x: bits(x) & sign and not bits(x) & quiet, settings=s)
    find(ps.source_nans(dt), lambda x: not bits(x) & sign and bits(x) & quiet, settings=s)


@pytest.mark.parametrize("src", FLOAT_SOURCES, ids=lambda d: d.name)
@SETTINGS
@given(data=st.data())
def test_source_arrays_keep_every_bit(src, data):
    u = np.dtype(f"u{src.itemsize}")
    bits = data.draw(st.lists(st.integers(0, 2 ** (8 * src.itemsize) - 1), min_size=1))
    scalars = [np.array([b], u).view(src)[0] for b in bits]
    x = data.draw(ps.source_arrays(st.sampled_from(scalars), src))
    assert x.dtype == src and set(x.view(u).tolist()) <= set(bits)


def test_unsupported_sources_are_refused():
    with pytest.raises(CastError, match="unsupported source dtype bool"):
        ps.source_values("bf16", np.bool_)
    with pytest.raises(CastError, match="no NaN"):
        ps.source_nans(np.int32)
    with pytest.raises(CastError, match="no values below"):
        ps.source_subnormals("bf16", np.int8)


def test_reachable_from_the_package():
    import pyprecision.testing as pt

    assert pt.near_ties is ps.near_ties and pt.sources is ps
    assert "near_ties" in pt.__all__ and "assert_matches_pyprecision" in pt.__all__
