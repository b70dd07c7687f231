"""ulp_distance, assert_bits_equal, assert_within_ulp: values from the format tables, messages."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pyprecision.errors import CastError
from pyprecision.testing import NAN_MISMATCH, assert_bits_equal, assert_within_ulp, ulp_distance


@pytest.mark.parametrize(
    "fmt,a,b,d",
    [
        ("bf16", 0x3F80, 0x3F81, 1),  # 1.0 and its successor
        ("bf16", 0x0000, 0x8000, 0),  # +0 / -0
        ("bf16", 0x0001, 0x8001, 2),  # ±smallest subnormal
        ("bf16", 0x7F7F, 0x7F80, 1),  # max and inf
        ("bf16", 0x3F80, 0x4000, 128),  # 1.0 to 2.0: one binade of 7 mantissa bits
        ("fp16", 0x3C00, 0xBC00, 2 * 0x3C00),  # 1 to -1
        ("fp8e4m3fn", 0x7E, 0x7D, 1),
        ("fp8e4", 0x77, 0x78, 1),  # 240 and inf
        ("fp32r", 0x3F800000, 0x3F802000, 1),  # fp32r steps are 2^13 float32 codes
        ("fp8e5", 0x7B, 0xFB, 2 * 0x7B),
    ],
)
def test_ulp_distance(fmt, a, b, d):
    assert int(ulp_distance(np.array([a]), np.array([b]), fmt)[0]) == d
    assert int(ulp_distance(np.array([b]), np.array([a]), fmt)[0]) == d


def test_ulp_distance_nans():
    got = ulp_distance(
        np.array([0x7FC0, 0x7FC0, 0xFFC1]), np.array([0x7F81, 0x3F80, 0x7FC0]), "bf16"
    )
    assert got.tolist() == [0, NAN_MISMATCH, 0]
    e4 = ulp_distance(np.array([0x7F]), np.array([0x7E]), "fp8e4m3fn")
    assert int(e4[0]) == NAN_MISMATCH


def test_accepts_format_dtype_values_and_refuses_other_floats():
    a = np.array([1.0, 2.0], ml_dtypes.bfloat16)
    assert_bits_equal(a, np.array([0x3F80, 0x4000], np.uint16), "bf16")
    with pytest.raises(CastError, match="cast floats with pyprecision.encode first"):
        assert_bits_equal(np.float32([1, 2]), a, "bf16")
    with pytest.raises(CastError, match="must be in"):
        ulp_distance(np.array([256]), np.array([0]), "fp8e5")


def test_bits_equal_message():
    x = np.float32([1.0, 1.00390625, 2.0])
    actual = np.array([0x3F80, 0x3F81, 0x4000], np.uint16)
    expected = np.array([0x3F80, 0x3F80, 0x4000], np.uint16)
    with pytest.raises(AssertionError) as info:
        assert_bits_equal(actual, expected, "bf16", inputs=x)
    lines = str(info.value).splitlines()
    assert lines[0] == "1 of 3 elements differ in their bf16 bits"
    assert lines[1].split() == ["index", "actual", "expected", "ulp", "input"]
    assert lines[2].split() == [
        "(1,)",
        "0x3f81",
        "(1.0078125)",
        "0x3f80",
        "(1.0)",
        "1",
        "1.00390625",
        "(0x3f808000)",
    ]


def test_bits_equal_sees_nan_payloads_within_ulp_does_not():
    a, b = np.array([0x7FC0], np.uint16), np.array([0x7FC1], np.uint16)
    with pytest.raises(AssertionError, match="0x7fc0 \\(nan\\)"):
        assert_bits_equal(a, b, "bf16")
    assert_within_ulp(a, b, "bf16", 0)


def test_within_ulp_message_and_truncation():
    expected = np.zeros((3, 5), np.uint8)
    actual = expected.copy()
    actual[1] = 3
    actual[2, 4] = 0x7F  # NaN in e4m3fn
    assert_within_ulp(actual[:2], expected[:2], "fp8e4m3fn", 3)
    with pytest.raises(AssertionError) as info:
        assert_within_ulp(actual, expected, "fp8e4m3fn", 2, max_rows=4)
    text = str(info.value)
    assert text.splitlines()[0] == (
        "6 of 15 elements are more than 2 ulp of fp8e4m3fn apart (worst: a NaN against a number)"
    )
    assert "(1, 0)" in text and "... and 2 more" in text and "(2, 4)" not in text


def test_shape_mismatch():
    with pytest.raises(AssertionError, match="shape mismatch"):
        assert_bits_equal(np.zeros(3, np.uint8), np.zeros(4, np.uint8), "fp8e5")
