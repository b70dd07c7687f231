"""The strategies yield what they promise, checked against a pure-arithmetic model of formats."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision as pp
from pyprecision.testing import strategies as pst

FORMATS = ["bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"]
# Independent facts (CAST_SEMANTICS.md §1): mantissa bits, bias, largest finite value.
MODEL = {
    "bf16": (7, 127, (2 - 2**-7) * 2.0**127),
    "fp16": (10, 15, 65504.0),
    "fp32r": (10, 127, (2 - 2**-10) * 2.0**127),
    "fp8e4": (3, 7, 240.0),
    "fp8e4m3fn": (3, 7, 448.0),
    "fp8e5": (2, 15, 57344.0),
}


def step(v: float, fmt: str) -> float:
    """The spacing of ``fmt``'s values around |v| (subnormal spacing below the normal range)."""
    m, bias, _ = MODEL[fmt]
    e = max(math.floor(math.log2(abs(v))) if v else 1 - bias, 1 - bias)
    return 2.0 ** (e - m)


def exact_in(v: float, fmt: str) -> bool:
    return v == 0 or (abs(v) <= MODEL[fmt][2] and (v / step(v, fmt)).is_integer())


def is_tie(v: float, fmt: str) -> bool:
    q = abs(v) / step(v, fmt)
    return q - math.floor(q) == 0.5


SETTINGS = settings(max_examples=80, deadline=None)


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_representable_values_are_exact(fmt, data):
    v = data.draw(pst.representable_values(fmt))
    assert isinstance(v, np.float32) and exact_in(float(v), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_bit_patterns(fmt, data):
    f = pp.format(fmt)
    code = data.draw(pst.bit_patterns(fmt, allow_nan=False))
    assert 0 <= code < 1 << f.bits and code % (1 << f.storage_shift) == 0
    v = float(pp.decode(np.array([code], f.storage_dtype), f)[0])
    assert not math.isnan(v) and (math.isinf(v) or exact_in(v, fmt))
    assert not math.isinf(
        float(
            pp.decode(
                np.array([data.draw(pst.bit_patterns(fmt, allow_infinity=False))], f.storage_dtype),
                f,
            )[0]
        )
    )


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_rounding_ties(fmt, data):
    v = float(data.draw(pst.rounding_ties(fmt, ulps=(0,))))
    assert abs(v) < MODEL[fmt][2] and is_tie(v, fmt) and not exact_in(v, fmt)
    near = float(data.draw(pst.rounding_ties(fmt, ulps=(-1, 1))))
    assert not is_tie(near, fmt) and not exact_in(near, fmt)
    assert abs(abs(near) / step(near, fmt) % 1 - 0.5) < 0.01  # one float32 ulp off a tie


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_overflow_boundary(fmt, data):
    v = abs(float(data.draw(pst.overflow_boundary(fmt))))
    mx = MODEL[fmt][2]
    assert v == math.inf or mx * (1 - 2**-20) <= v <= float(np.finfo(np.float32).max)


@pytest.mark.parametrize("fmt", FORMATS)
def test_overflow_boundary_has_the_tie_and_max(fmt):
    pts = {abs(float(p)) for p in pst._overflow_points(pp.format(fmt))}
    m, _, mx = MODEL[fmt]
    assert mx in pts and math.inf in pts
    tie = mx + 2.0 ** (math.floor(math.log2(mx)) - m) / 2
    assert tie in pts  # e.g. 248 for fp8e4, 464 for fp8e4m3fn, 61440 for fp8e5


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_subnormal_values(fmt, data):
    v = float(data.draw(pst.subnormal_values(fmt)))
    _, bias, _ = MODEL[fmt]
    assert abs(v) < 2.0 ** (1 - bias)


@SETTINGS
@given(pst.float32_arrays(pst.nan_payloads(), max_size=8))
def test_nan_payloads_survive_in_arrays(a):
    bits = a.view(np.uint32)
    assert np.all((bits & 0x7F800000) == 0x7F800000) and np.all(bits & 0x7FFFFF)


def test_nan_payloads_include_signalling_and_negative():
    seen = set()

    @settings(max_examples=300, deadline=None)
    @given(pst.nan_payloads())
    def collect(x):
        b = int(np.float32(x).view(np.uint32))
        seen.add((b >> 31, (b >> 22) & 1))

    collect()
    assert seen == {(0, 0), (0, 1), (1, 0), (1, 1)}


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_cast_inputs_are_float32(fmt, data):
    assert isinstance(data.draw(pst.cast_inputs(fmt)), np.float32)


def test_assertions_import_without_hypothesis():
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "import numpy as np, pyprecision.testing as t\n"
        "t.assert_bits_equal(np.zeros(2, np.uint8), np.zeros(2, np.uint8), 'fp8e5')\n"
        "try:\n    t.bit_patterns\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'pyprecision[test]'" in out.stdout
