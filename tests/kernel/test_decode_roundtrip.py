"""§6 decode of every code, and decode -> encode round trips of every code (8- and 16-bit)."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from . import refmodel_np as rn
from .isas import available

SMALL = ("bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5")


def all_codes(name: str) -> np.ndarray:
    """Every storage code (fp32r: every canonical code, low 13 bits zero)."""
    fmt = rm.FORMATS[name]
    return (np.arange(fmt.n_codes, dtype=np.uint64) << np.uint64(fmt.shift)).astype(fmt.storage)


def _mismatches(codes: np.ndarray, want: np.ndarray, got: np.ndarray) -> list:
    bad = np.flatnonzero(want != got)
    return [(hex(int(codes[i])), hex(int(want[i])), hex(int(got[i]))) for i in bad[:8]]


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_decode_every_code_is_exact(name: str) -> None:
    codes = all_codes(name)
    want = rn.decode_np(name, codes)
    for isa in available():
        got = pp.decode(codes, name, isa=isa)
        assert got.dtype == np.float32 and got.shape == codes.shape
        assert _mismatches(codes, want, got.view(np.uint32)) == [], isa


def test_decode_spec_examples() -> None:
    def dec(name: str, code: int) -> int:
        fmt = rm.FORMATS[name]
        return int(pp.decode(np.array([code], fmt.storage), name).view(np.uint32)[0])

    assert dec("bf16", 0x7F81) == 0x7F810000  # bf16 keeps the payload
    assert dec("bf16", 0xFFC1) == 0xFFC10000
    assert dec("fp8e4", 0x78) == 0x7F800000  # +inf
    assert dec("fp8e4", 0xF9) == 0xFFC00000
    assert dec("fp8e4m3fn", 0x78) == 0x43800000  # 256
    assert dec("fp8e4m3fn", 0x7F) == 0x7FC00000
    assert dec("fp16", 0xFC01) == 0xFFC00000  # quiet NaN with the sign, payload dropped
    assert dec("fp8e5", 0x7D) == 0x7FC00000
    assert dec("fp32r", 0x7FFFE000) == 0x7FC00000
    assert dec("fp8e4", 0x01) == 0x3B000000  # 2^-9
    assert dec("bf16", 0x0001) == 0x00010000  # bf16 subnormal 2^-133


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("rounding", rm.ROUNDINGS)
def test_every_code_round_trips(name: str, rounding: str) -> None:
    fmt = rm.FORMATS[name]
    codes = all_codes(name)
    vals = pp.decode(codes, name)
    rbits = np.random.default_rng(3).integers(0, 1 << 32, codes.size, dtype=np.uint64)
    kw = {"random_bits": rbits.astype(np.uint32)} if rounding == "stochastic" else {}
    back = pp.encode(vals, name, rounding=rounding, saturate=False, **kw)
    for isa in available():
        assert np.array_equal(
            pp.encode(vals, name, rounding=rounding, saturate=False, isa=isa, **kw), back), isa
    isnan = np.array([rm.is_nan_code(fmt, int(c)) for c in codes])
    assert _mismatches(codes[~isnan], codes[~isnan], back[~isnan]) == []
    sign = (codes[isnan].astype(np.int64) & fmt.sign_bit)
    assert _mismatches(codes[isnan], (fmt.nan_ml | sign).astype(fmt.storage), back[isnan]) == []
    nv = pp.encode(vals, name, rounding=rounding, saturate=False, nan="nvidia", **kw)
    assert np.all(nv[isnan] == fmt.nan_nv)
    assert np.array_equal(nv[~isnan], codes[~isnan])


@pytest.mark.parametrize("name", SMALL)
def test_round_trip_saturating_maps_only_inf_codes(name: str) -> None:
    fmt = rm.FORMATS[name]
    codes = all_codes(name)
    back = pp.encode(pp.decode(codes, name), name, saturate=True)
    isnan = np.array([rm.is_nan_code(fmt, int(c)) for c in codes])
    want = codes.copy()
    if fmt.inf_bits is not None:
        want[codes == fmt.inf_bits] = fmt.max_bits
        want[codes == (fmt.inf_bits | fmt.sign_bit)] = fmt.max_bits | fmt.sign_bit
    assert _mismatches(codes[~isnan], want[~isnan], back[~isnan]) == []


def test_fp32r_canonical_codes_round_trip() -> None:
    fmt = rm.FORMATS["fp32r"]
    codes = all_codes("fp32r")
    back = pp.encode(pp.decode(codes, "fp32r"), "fp32r", saturate=False)
    isnan = (codes & np.uint32(0x7FFFFFFF)) > np.uint32(fmt.inf_bits)
    assert _mismatches(codes[~isnan], codes[~isnan], back[~isnan]) == []
    assert np.all(back[isnan] == (codes[isnan] & np.uint32(0x80000000)) | np.uint32(fmt.nan_ml))


@pytest.mark.parametrize("name", SMALL)
def test_decode_accepts_typed_arrays(name: str) -> None:
    fmt = rm.FORMATS[name]
    codes = all_codes(name)
    a = pp.decode(codes, name).view(np.uint32)
    b = pp.decode(codes.view(fmt.dtype), name).view(np.uint32)
    assert np.array_equal(a, b)
