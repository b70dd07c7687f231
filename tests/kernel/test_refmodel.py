"""Evidence that the reference model itself is right (no pyprecision involved).

The Fraction model reproduces every literal row of the spec; the vectorized model equals the
Fraction model on boundary-heavy samples in every mode, and equals ml_dtypes / numpy (rne,
saturate=False) on millions of float32 inputs.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import refmodel as rm
from . import refmodel_np as rn
from .edge_table import COLUMNS, EDGE_TABLE, MODE_ROWS, OVERFLOW_ROWS, SATURATE_ROWS
from .mlref import ml_reference
from .samples import SPECIAL_F32_BITS, boundary_f32_bits, f32, stratified_f32_bits

FMTS = rm.FORMAT_NAMES


@pytest.mark.parametrize("row", EDGE_TABLE, ids=[r[0] for r in EDGE_TABLE])
def test_model_reproduces_edge_table(row: tuple) -> None:
    _, bits, codes = row
    for name, want in zip(COLUMNS, codes, strict=True):
        fmt = rm.FORMATS[name]
        assert rm.encode_exact(fmt, rm.exact_from_f32_bits(bits)) == want, name
        assert int(rn.encode_f32_bits_np(name, np.array([bits]))[0]) == want, name


def test_model_reproduces_saturate_overflow_and_mode_rows() -> None:
    for name, bits, want in SATURATE_ROWS:
        x = rm.exact_from_f32_bits(bits)
        assert rm.encode_exact(rm.FORMATS[name], x, saturate=True) == want
    for name, bits, want in OVERFLOW_ROWS:
        assert rm.encode_exact(rm.FORMATS[name], rm.exact_from_f32_bits(bits)) == want
    for name, rnd, bits, want in MODE_ROWS:
        got = rm.encode_exact(rm.FORMATS[name], rm.exact_from_f32_bits(bits), rnd)
        assert got == want, (name, rnd, hex(bits))


def _mixed_sources(name: str, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """float32 boundary points, float64 near-ties, and integers near ties, for one format."""
    fmt = rm.FORMATS[name]
    b = rng.choice(boundary_f32_bits(name, 1), n)
    f32s = np.concatenate([SPECIAL_F32_BITS, b]).view(np.float32)
    mids = f32(rng.choice(boundary_f32_bits(name, 0), n)).astype(np.float64)
    eps = rng.choice([0.0, 2.0**-40, -(2.0**-40), 2.0**-60, 2.0**-52, -(2.0**-53)], n)
    f64s = np.concatenate([mids * (1 + eps), [np.inf, -np.inf, np.nan, 1e300, -1e-300, 5e-324]])
    k = rng.integers(0, 64, n)
    shift = (62 - np.minimum(k, 62)).astype(np.uint64)
    big = rng.integers(0, 1 << 62, n).astype(np.uint64) >> shift
    tie = (np.uint64(1) << k.astype(np.uint64)) + (np.uint64(1) << np.maximum(
        k - fmt.mantissa_bits - 1, 0).astype(np.uint64))
    fixed = np.array([0, 2**64 - 1, 2**63, 2**63 - 1, 255, 256], dtype=np.uint64)
    ints = np.concatenate([big, tie, tie + np.uint64(1), tie - np.uint64(1), fixed])
    assert ints.dtype == np.uint64
    signed = ints.view(np.int64)
    return [f32s, f64s, ints, signed, signed.astype(np.int8), signed.astype(np.uint16)]


@pytest.mark.parametrize("name", FMTS)
@pytest.mark.parametrize("rounding", rm.ROUNDINGS)
def test_vectorized_model_equals_fraction_model(name: str, rounding: str) -> None:
    fmt = rm.FORMATS[name]
    rng = np.random.default_rng([11, len(name), len(rounding)])
    for sat, nan in ((False, "ml_dtypes"), (True, "nvidia"), (None, "ml_dtypes")):
        for src in _mixed_sources(name, rng, 120):
            r = rng.integers(0, 1 << 32, src.size, dtype=np.uint64).astype(np.uint32)
            got = rn.encode_np(fmt, src, rounding, sat, nan, r)
            for i, v in enumerate(src.tolist()):
                x = rm.exact_from_int(v) if src.dtype.kind in "iu" else rm.exact_from_float(v)
                want = rm.encode_exact(fmt, x, rounding, sat, nan, int(r[i]))
                assert int(got[i]) == want, (name, rounding, sat, nan, src.dtype, v, int(r[i]))


@pytest.mark.parametrize("name", FMTS)
def test_vectorized_model_equals_mldtypes(name: str) -> None:
    bits = stratified_f32_bits(name)[: 1 << 22]
    want = ml_reference(name, bits)
    got = rn.encode_f32_bits_np(name, bits)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(bits[i]), hex(want[i]), hex(got[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", ["bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5"])
def test_decode_model_every_code(name: str) -> None:
    fmt = rm.FORMATS[name]
    codes = np.arange(fmt.n_codes, dtype=np.int64)
    got = rn.decode_np(fmt, codes.astype(fmt.storage))
    step = 1 if fmt.bits == 8 else 7  # the Fraction model on every 7th 16-bit code
    for c in codes[::step].tolist():
        assert int(got[c]) == rm.decode_bits(fmt, c), (name, hex(c))
    lib = codes.astype(fmt.storage).view(fmt.dtype).astype(np.float32)
    libbits = lib.view(np.uint32)
    notnan = ~np.isnan(lib)
    assert np.array_equal(got[notnan], libbits[notnan])
    assert np.array_equal(np.isnan(got.view(np.float32)), ~notnan)


def test_decode_model_spec_examples() -> None:
    assert rm.decode_bits(rm.FORMATS["bf16"], 0x7F81) == 0x7F810000
    assert rm.decode_bits(rm.FORMATS["fp8e4"], 0x78) == 0x7F800000
    assert rm.decode_bits(rm.FORMATS["fp8e4m3fn"], 0x78) == 0x43800000  # 256
    assert rm.decode_bits(rm.FORMATS["fp8e4m3fn"], 0xFF) == 0xFFC00000
    assert rm.decode_bits(rm.FORMATS["fp16"], 0x7C01) == 0x7FC00000


def test_float_to_int_model() -> None:
    rng = np.random.default_rng(5)
    vals = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(0, 21, 300),
                           [np.nan, np.inf, -np.inf, -0.5, 0.5, -1.5, 2.0**63, 2.0**64, -2.0**63,
                            2.0**31, -2.0**31 - 1, 255.9, 256.0, -129.0, 1e30, -1e30]])
    for src in (vals, vals.astype(np.float32)):
        for dt in rm.INT_DTYPES:
            got = rn.float_to_int_np(src, dt)
            for v, g in zip(src.tolist(), got.tolist(), strict=True):
                assert g == rm.float_to_int_exact(rm.exact_from_float(v), dt), (v, dt)


def test_int_to_f32_model_matches_numpy() -> None:
    rng = np.random.default_rng(9)
    x = rng.integers(-(2**63), 2**63 - 1, 100000, dtype=np.int64) >> rng.integers(0, 63, 100000)
    assert np.array_equal(rn.int_to_f32_np(x).view(np.uint32), x.astype(np.float32).view(np.uint32))


def test_mldtypes_formats_match_spec_table() -> None:
    for name in ("bf16", "fp8e4", "fp8e4m3fn", "fp8e5"):
        fmt = rm.FORMATS[name]
        assert float(ml_dtypes.finfo(fmt.dtype).max) == fmt.max_value
        mx = np.array([fmt.max_bits], fmt.storage).view(fmt.dtype).astype(np.float64)[0]
        assert mx == fmt.max_value


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(FMTS), rounding=st.sampled_from(rm.ROUNDINGS),
       sat=st.sampled_from((None, False, True)), nan=st.sampled_from(rm.NAN_POLICIES),
       f64=st.lists(st.floats(), min_size=1, max_size=20),
       ints=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20),
       r=st.integers(0, 2**32 - 1))
def test_vectorized_model_equals_fraction_model_hypothesis(
        name: str, rounding: str, sat: bool | None, nan: str, f64: list, ints: list,
        r: int) -> None:
    fmt = rm.FORMATS[name]
    with np.errstate(over="ignore"):
        f32s = np.array(f64, np.float64).astype(np.float32)
    for src, conv in ((np.array(f64), rm.exact_from_float), (f32s, rm.exact_from_float),
                      (np.array(ints, np.int64), rm.exact_from_int)):
        words = np.full(src.size, r, np.uint32)
        got = rn.encode_np(fmt, src, rounding, sat, nan, words)
        for v, g in zip(src.tolist(), got.tolist(), strict=True):
            assert g == rm.encode_exact(fmt, conv(v), rounding, sat, nan, r), (v, g)


@pytest.mark.parametrize("name", FMTS)
def test_stratified_sample_covers_what_it_claims(name: str) -> None:
    """Every exponent and sign, every grid value and midpoint ±1 ulp, all the specials."""
    fmt = rm.FORMATS[name]
    s = stratified_f32_bits(name)
    assert s.size >= 1 << 24
    assert np.unique(s >> np.uint32(23)).size == 512  # sign + exponent field
    from .samples import grid_values
    v = grid_values(fmt)
    pts = np.concatenate([v, (v[:-1] + v[1:]) / 2])
    with np.errstate(over="ignore"):
        f = pts.astype(np.float32)
    pts = f[np.isfinite(f) & (f.astype(np.float64) == pts)].view(np.uint32)
    rng = np.random.default_rng(0)
    if pts.size > 1 << 16:
        pts = rng.choice(pts, 1 << 16, replace=False)
    need = np.concatenate([pts + d for d in (np.uint32(0), np.uint32(1))] + [pts[pts > 0] - 1])
    need = np.concatenate([need, need | np.uint32(0x80000000), SPECIAL_F32_BITS])
    srt = np.sort(s)
    pos = np.minimum(np.searchsorted(srt, need), srt.size - 1)
    assert np.all(srt[pos] == need)
