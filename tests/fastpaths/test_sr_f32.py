"""Stochastic rounding from float32 at its decision boundary: the fused kernels round up by a carry
(csrc/kern_sr_avx2.h: (a + rebias + 2^s0 - 1 - (R >> (32 - s0))) >> s0) or by a compare (the
subnormal path, AVX-512), the reference by R < floor(f 2^32). For every binade a format rounds
into (normal, subnormal, and far below it) and every threshold bit, values whose threshold is 2^k,
2^k - 1 or 2^k with random bits below, and the words thr - 1, thr, thr + 1: every fast ISA ==
the reference, every policy; and a large stratified sweep with uniform and threshold words."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision

from .conftest import FAST_ISAS, FORMATS, assert_same, streaming
from .samples import f32_bits, random_words

pytestmark = pytest.mark.skipif(not FAST_ISAS, reason="no fast ISA on this machine")

_U = np.uint64
POLICIES = [(sat, nan) for sat in (False, True) for nan in ("ml_dtypes", "nvidia")]


def _fmt(fmt: str) -> tuple[int, int, int]:
    """(p, emin, emax) of a format."""
    f = pyprecision.format(fmt)
    return f.mantissa_bits, 1 - f.bias, int(np.floor(np.log2(f.max)))


def thresholds(bits: np.ndarray, fmt: str) -> np.ndarray:
    """floor(f 2^32) of each float32 as pp_round_exact computes it (0 for specials and where
    s >= 96). Only picks the words."""
    p, emin, _ = _fmt(fmt)
    a = bits.astype(_U) & _U(0x7FFFFFFF)
    eb = (a >> _U(23)).astype(np.int64)
    m = (a & _U(0x7FFFFF)) | np.where(eb > 0, _U(1 << 23), _U(0))
    e = np.maximum(eb, 1) - 150
    nbits = np.where(m > 0, np.floor(np.log2(np.maximum(m, 1).astype(np.float64))), 0).astype(np.int64)
    E = e + nbits
    s = np.maximum(E, emin) - p - e
    rem = np.where(s < 64, m & ((_U(1) << np.clip(s, 0, 63).astype(_U)) - _U(1)), m)
    up = rem << np.clip(32 - s, 0, 63).astype(_U)
    down = rem >> np.clip(s - 32, 0, 63).astype(_U)
    thr = np.where(s <= 32, up, np.where(s < 96, down, _U(0)))
    thr = np.where((eb == 255) | (m == 0) | (s <= 0), _U(0), thr)
    return thr.astype(np.uint32)


@functools.lru_cache(maxsize=8)
def threshold_sample(fmt: str, seed: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """(float32 bits, words): every float32 binade from 2^-149 to two above the format's max,
    every threshold bit k the value has, three patterns, both signs, each value thrice with the
    words thr - 1, thr, thr + 1."""
    p, emin, emax = _fmt(fmt)
    rng = np.random.default_rng(seed)
    out = []
    for eb in range(0, min(emax + 3, 128) + 127):
        E = max(eb, 1) - 127
        e = max(eb, 1) - 150
        s = max(E, emin) - p - e  # dropped bits of the 24-bit m (subnormal source: fewer exist)
        lo = s - 32
        win = [(1 << (lo + j)) if 0 <= lo + j < 23 + (eb > 0) else 0 for j in range(32)]
        for pattern in range(3):
            m = rng.integers(0, 1 << 24, size=32, dtype=_U)
            clear = _U(sum(win))
            k = np.arange(32, dtype=_U)
            want = (_U(1) << k) - _U(pattern == 1)
            if pattern == 2:
                want |= rng.integers(0, 1 << 32, 32, dtype=_U) & ((_U(1) << k) - _U(1))
            put = np.zeros(32, dtype=_U)
            for j in range(32):
                put |= np.where((want >> _U(j)) & _U(1) == 1, _U(win[j]), _U(0))
            m = (m & ~clear) | put
            bits = (_U(eb) << _U(23)) | (m & _U(0x7FFFFF))
            out += [bits, bits | _U(1 << 31)]
    x = np.concatenate(out).astype(np.uint32)
    thr = thresholds(x, fmt)
    words = (np.repeat(thr.astype(np.int64), 3) + np.tile([-1, 0, 1], x.size)) & 0xFFFFFFFF
    return np.repeat(x, 3), words.astype(np.uint32)


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f32_words_at_every_threshold_bit(fmt: str, isa: str) -> None:
    """Given words thr - 1 / thr / thr + 1: the fast ISA == the reference, every policy."""
    bits, words = threshold_sample(fmt)
    x = bits.view(np.float32)
    for sat, nan in POLICIES:
        kw = dict(rounding="stochastic", random_bits=words, saturate=sat, nan=nan)
        ref = pyprecision.encode(x, fmt, isa="reference", threads=1, **kw)
        for force in (False, True):
            with streaming(force):
                got = pyprecision.encode(x, fmt, isa=isa, **kw)
            assert_same(got, ref, x, f"{fmt} thr words sat={sat} nan={nan} {isa} stream={force}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f32_threshold_sample_sits_on_the_boundary(fmt: str) -> None:
    """Under the reference, word thr - 1 rounds up where word thr rounds down, for every finite
    value below max with a threshold above 0 (so the sample tests the boundary)."""
    bits, words = threshold_sample(fmt)
    x = bits.view(np.float32)
    ref = pyprecision.encode(x, fmt, rounding="stochastic", isa="reference", random_bits=words,
                             saturate=False)
    with np.errstate(invalid="ignore"):
        live = (words[1::3] > 0) & (np.abs(x[1::3]) < pyprecision.format(fmt).max)
    assert live.sum() > 1000
    assert np.all(ref[0::3][live] != ref[1::3][live])


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f32_stratified_sweep(fmt: str, isa: str) -> None:
    """The strong float32 sample (every exponent x shift x boundary pattern, specials, 1 Mi
    random), with threshold-heavy words and with a seed, every policy."""
    x = f32_bits().view(np.float32)
    words = random_words(x.size, seed=21)
    for sat, nan in POLICIES:
        for kw in ({"random_bits": words}, {"seed": 2**63 + 5}):
            opts = dict(rounding="stochastic", saturate=sat, nan=nan, **kw)
            ref = pyprecision.encode(x, fmt, isa="reference", threads=1, **opts)
            got = pyprecision.encode(x, fmt, isa=isa, threads=1, **opts)
            assert_same(got, ref, x, f"{fmt} sweep sat={sat} nan={nan} {isa} {list(kw)}")


@settings(max_examples=300, deadline=None)
@given(bits=st.lists(st.integers(0, 2**32 - 1), max_size=200), fmt=st.sampled_from(FORMATS),
       sat=st.booleans(), nan=st.sampled_from(["ml_dtypes", "nvidia"]),
       seed=st.integers(0, 2**64 - 1), given_words=st.booleans())
def test_sr_f32_property_fast_equals_reference(bits: list[int], fmt: str, sat: bool, nan: str,
                                               seed: int, given_words: bool) -> None:
    """Any float32 bits, format, policy, seed or words: every fast ISA == the reference."""
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    kw: dict = {"random_bits": random_words(x.size, seed=seed % 1000)} if given_words else {"seed": seed}
    opts = dict(rounding="stochastic", saturate=sat, nan=nan, **kw)
    ref = pyprecision.encode(x, fmt, isa="reference", **opts)
    for isa in FAST_ISAS:
        assert_same(pyprecision.encode(x, fmt, isa=isa, **opts), ref, x, f"{fmt} {isa}")
