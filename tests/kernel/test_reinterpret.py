"""§7: fp8e4m3fn data relabelled fp8e4 (bit view with a report) versus the value cast."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pyprecision as pp
from pyprecision.errors import PyPrecisionError

ALL = np.arange(256, dtype=np.uint8)


@pytest.mark.parametrize("typed", [False, True])
def test_bit_view_keeps_bits_and_reports_meaning_changes(typed: bool) -> None:
    src = ALL.view(ml_dtypes.float8_e4m3fn) if typed else ALL
    arr, rep = pp.reinterpret(src, "fp8e4m3fn", "fp8e4")
    assert arr.dtype == np.dtype(ml_dtypes.float8_e4m3)
    assert np.array_equal(arr.view(np.uint8), ALL)
    assert (rep.became_inf, rep.became_nan, rep.changed) == (2, 12, 14)
    assert rep.first_changed == (0x78,)
    assert rep.elements == 256


def test_bit_view_meanings() -> None:
    arr, _ = pp.reinterpret(ALL, "fp8e4m3fn", "fp8e4")
    before = ALL.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    after = pp.decode(arr.view(np.uint8), "fp8e4")
    low = np.r_[0x00:0x78, 0x80:0xF8]
    assert np.array_equal(after[low], before[low])  # 0x00-0x77 keep their values
    assert after[0x78] == np.inf and after[0xF8] == -np.inf  # was ±256
    assert np.all(np.isnan(after[np.r_[0x79:0x80, 0xF9:0x100]]))  # were 288..448, and NaN


def test_report_counts_only_elements_present() -> None:
    bits = np.array([[0x00, 0x78, 0x7F], [0x7E, 0x10, 0xF9]], np.uint8)
    arr, rep = pp.reinterpret(bits, "fp8e4m3fn", "fp8e4")
    assert arr.shape == (2, 3)
    assert (rep.became_inf, rep.became_nan, rep.changed) == (1, 2, 3)
    assert rep.first_changed == (0, 1)
    _, rep = pp.reinterpret(np.array([1, 2, 0x77], np.uint8), "fp8e4m3fn", "fp8e4")
    assert (rep.changed, rep.first_changed) == (0, None)


@pytest.mark.parametrize("saturate,big", [(False, 0x78), (True, 0x77), (None, 0x77)])
def test_value_cast_alternative(saturate: bool | None, big: int) -> None:
    """A value cast fp8e4m3fn -> fp8e4 maps 256..448 to inf (240 when saturating)."""
    src = ALL.view(ml_dtypes.float8_e4m3fn)
    got = pp.encode(src, "fp8e4", saturate=saturate)
    want = ALL.copy()
    want[0x78:0x7F] = big
    want[0xF8:0xFF] = big | 0x80
    want[0x7F], want[0xFF] = 0x7C, 0xFC  # NaN -> fp8e4 NaN (ml_dtypes policy keeps the sign)
    assert np.array_equal(got, want)
    via_decode = pp.cast(pp.decode(ALL, "fp8e4m3fn"), "fp8e4", saturate=saturate)
    assert np.array_equal(via_decode.view(np.uint8), want)


def test_width_mismatch_refused() -> None:
    with pytest.raises(PyPrecisionError, match="bit"):
        pp.reinterpret(ALL, "fp8e4m3fn", "bf16")
