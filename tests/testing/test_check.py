"""assert_matches_pyprecision: passes a correct cast, fails a wrong one with the assertion table,
hands encode's options through, and hides its own frames from the traceback."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import strategies as st

import pyprecision as pp
from pyprecision.testing import assert_matches_pyprecision, rounding_ties


def _rne_bf16_from_f32(x: np.ndarray) -> np.ndarray:
    """An independent float32 -> bf16 RNE (NaN -> quiet NaN with the sign, as ml_dtypes)."""
    u = x.view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    quiet = (((u >> 16) & 0x8000) | 0x7FC0).astype(np.uint16)
    return np.where((u & 0x7FFFFFFF) > 0x7F800000, quiet, rounded)


def test_a_correct_cast_passes():
    assert_matches_pyprecision(_rne_bf16_from_f32, np.float32, "bf16", max_examples=150)


def test_value_results_of_the_format_dtype_are_accepted():
    assert_matches_pyprecision(lambda x: x.astype(np.float16), np.int16, "fp16", max_examples=80)


def test_a_wrong_cast_fails_with_the_table():
    def truncate(x: np.ndarray) -> np.ndarray:
        return (x.view(np.uint32) >> 16).astype(np.uint16)

    with pytest.raises(AssertionError) as err:
        assert_matches_pyprecision(truncate, np.float32, "bf16", max_examples=200, max_size=8)
    text = str(err.value)
    assert "differ in their bf16 bits" in text and "index  actual" in text and "(0x" in text


def test_ulp_tolerance():
    def off_by_one(x: np.ndarray) -> np.ndarray:
        c = pp.encode(x, "fp16").astype(np.int64)
        return np.where((c & 0x7FFF) < 0x7BFF, c + 1, c).astype(np.uint16)  # finite: one up

    finite = rounding_ties("fp16").map(np.float32)
    assert_matches_pyprecision(off_by_one, np.float32, "fp16", elements=finite, ulp=1,
                               max_examples=40, max_size=8)
    with pytest.raises(AssertionError, match="differ in their fp16 bits"):
        assert_matches_pyprecision(off_by_one, np.float32, "fp16", elements=finite,
                                   max_examples=40, max_size=8)


def test_encode_options_are_used():
    def rtz(x: np.ndarray) -> np.ndarray:
        return pp.encode(x, "bf16", rounding="rtz")

    ties = st.sampled_from([np.float64(1 + 2**-8 + 2**-30), np.float64(-(1 + 3 * 2**-8))])
    assert_matches_pyprecision(rtz, np.float64, "bf16", elements=ties, rounding="rtz",
                               max_examples=20)
    with pytest.raises(AssertionError):
        assert_matches_pyprecision(rtz, np.float64, "bf16", elements=ties, max_examples=20)


def test_ml_dtypes_int32_to_bf16_double_rounds():
    """ml_dtypes converts int32 through float32: 16973823 (just below the bf16 tie 16973824)
    becomes the tie in float32, then goes to even; exact RNE rounds it down. Asserted only while
    the installed ml_dtypes has this behaviour."""
    x = np.array([16973823], np.int32)
    if int(x.astype(ml_dtypes.bfloat16).view(np.uint16)[0]) == int(pp.encode(x, "bf16")[0]):
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} rounds int32 -> bf16 exactly")
    assert int(pp.encode(x, "bf16")[0]) == 0x4B81
    with pytest.raises(AssertionError, match="differ in their bf16 bits"):
        assert_matches_pyprecision(lambda a: a.astype(ml_dtypes.bfloat16), np.int32, "bf16",
                                   max_examples=500, max_size=8)
