"""Stochastic rounding from float64 (the fused kernels: csrc/kern_sr_avx2.h sr8d, kern_sr_avx512.h
sr16d) == the reference converter (pp_round_exact on the float64 value itself).

The samples are built around the 32-bit threshold: for every binade a format can round into (its
normal binades, its subnormal ones, and binades far below it where every bit is dropped), values
whose threshold floor(f 2^32) is 2^k, 2^k - 1 or 2^k with random bits below, for every bit k the
threshold uses, with random bits below the threshold's window (which it ignores: a detour through
float32 would not), and the words threshold - 1, threshold, threshold + 1."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision

from .conftest import FAST_ISAS, FORMATS, assert_same, streaming
from .samples import f64_bits, random_words

pytestmark = pytest.mark.skipif(not FAST_ISAS, reason="no fast ISA on this machine")

_U = np.uint64
_FRAC = _U((1 << 52) - 1)
_HID = _U(1 << 52)
POLICIES = [(sat, nan) for sat in (False, True) for nan in ("ml_dtypes", "nvidia")]


def _fmt(fmt: str) -> tuple[int, int, int]:
    """(p, emin, emax) of a format."""
    f = pyprecision.format(fmt)
    return f.mantissa_bits, 1 - f.bias, int(np.floor(np.log2(f.max)))


def thresholds(bits: np.ndarray, fmt: str) -> np.ndarray:
    """floor(f 2^32) of each float64 (f the dropped fraction of a quantum), as pp_round_exact
    computes it; 0 for specials and float64 subnormals (s >= 96 there). Only picks the words."""
    p, emin, _ = _fmt(fmt)
    a = bits & _U(0x7FFFFFFFFFFFFFFF)
    eb = (a >> _U(52)).astype(np.int64)
    m = (a & _FRAC) | _HID
    s = np.maximum(eb - 1023, emin) - p - eb + 1075  # q - e
    rem = np.where(s < 64, m & ((_U(1) << np.minimum(s, 63).astype(_U)) - _U(1)), m)
    thr = np.where((s > 32) & (s < 96), rem >> np.clip(s - 32, 0, 63).astype(_U), _U(0))
    thr = np.where((eb == 0) | (eb == 2047), _U(0), thr)
    return thr.astype(np.uint32)


@functools.lru_cache(maxsize=8)
def threshold_sample(fmt: str, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """(float64 bits, words): every binade E from 100 below the format's min subnormal to two
    above its max, every threshold bit k, three patterns, both signs; each value thrice, with
    the words thr - 1, thr, thr + 1."""
    p, emin, emax = _fmt(fmt)
    rng = np.random.default_rng(seed)
    out = []
    for E in range(emin - p - 100, emax + 3):
        eb = E + 1023
        s = max(E, emin) - p - E + 52  # dropped bits of m (53 bits, hidden bit set)
        k = np.arange(32)
        for pattern in range(3):
            m = rng.integers(0, 1 << 53, size=32, dtype=_U) | _HID
            lo = s - 32  # bit of m that is the threshold's bit 0
            win = np.zeros(32, dtype=_U)
            for j in range(32):  # the window's bits of m that exist
                if 0 <= lo + j < 53:
                    win[j] = _U(1) << _U(lo + j)
            clear = np.bitwise_or.reduce(win)
            if pattern == 0:
                want = _U(1) << k.astype(_U)
            elif pattern == 1:
                want = (_U(1) << k.astype(_U)) - _U(1)
            else:
                want = (_U(1) << k.astype(_U)) | (rng.integers(0, 1 << 32, 32, dtype=_U)
                                                   & ((_U(1) << k.astype(_U)) - _U(1)))
            put = np.zeros(32, dtype=_U)
            for j in range(32):
                put |= np.where((want >> _U(j)) & _U(1) == 1, win[j], _U(0))
            m = (m & ~clear) | put
            bits = (_U(eb) << _U(52)) | (m & _FRAC)
            out += [bits, bits | _U(1 << 63)]
    x = np.concatenate(out)
    thr = thresholds(x, fmt)
    x3 = np.repeat(x, 3)
    words = (np.repeat(thr.astype(np.int64), 3) + np.tile([-1, 0, 1], x.size)) & 0xFFFFFFFF
    return x3, words.astype(np.uint32)


SPECIALS = np.array(
    [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000,  # ±0, ±inf
     0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000000000001,
     0x7FF0000100000000, 0x7FF00000FFFFFFFF, 0x7FF7FFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF,
     0xFFFFFFFFFFFFFFFF, 0x7FF8000000000001, 0x7FF4000000000000,  # NaNs, payloads high and low
     1, 0x8000000000000001, 0x000FFFFFFFFFFFFF, 0x800FFFFFFFFFFFFF, 0x0008000000000000,
     0x0010000000000000, 0x8010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF],
    dtype=_U)


@functools.lru_cache(maxsize=1)
def edge_values() -> np.ndarray:
    """Specials, float64 subnormals, values beyond float32's range and far below every format's,
    and each format's max, min normal and min subnormal with their halves and neighbours."""
    vals = [3.5e38, 3.4028235e38, 3.4028236e38, 1e39, 1e100, 1e300, 1e-40, 1e-46, 1e-100, 1e-300,
            2.0**-1022, 2.0**-1074, 2.0**-149, 2.0**-150, 2.0**-126, 2.0**-127]
    for fmt in FORMATS:
        f = pyprecision.format(fmt)
        for v in (f.max, f.min_normal, f.min_subnormal):
            vals += [v, v / 2, v * 2, v * 0.75, v * 1.5]
    x = np.array(vals, dtype=np.float64).view(_U)
    near = np.concatenate([x - _U(1), x + _U(1), x, x - _U(1 << 20), x + _U(1 << 30)])
    rng = np.random.default_rng(9)
    sub = rng.integers(1, 1 << 52, size=256, dtype=_U)
    allb = np.concatenate([SPECIALS, near, sub])
    return np.concatenate([allb, allb ^ _U(1 << 63)])


def _encode_both(x: np.ndarray, fmt: str, isa: str, threads: int = 1, **kw: object):
    ref = pyprecision.encode(x, fmt, rounding="stochastic", isa="reference", threads=1, **kw)
    got = pyprecision.encode(x, fmt, rounding="stochastic", isa=isa, threads=threads, **kw)
    return ref, got


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f64_words_at_every_threshold_bit(fmt: str, isa: str) -> None:
    """Given words thr - 1 / thr / thr + 1 in every binade and at every threshold bit: the fast
    ISA == the reference, every saturate x NaN policy, streamed and not."""
    bits, words = threshold_sample(fmt)
    x = bits.view(np.float64)
    for sat, nan in POLICIES:
        for force in (False, True):
            with streaming(force):
                ref, got = _encode_both(x, fmt, isa, random_bits=words, saturate=sat, nan=nan)
            assert_same(got, ref, x, f"{fmt} thr words sat={sat} nan={nan} {isa} stream={force}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f64_threshold_sample_sits_on_the_boundary(fmt: str) -> None:
    """The sample is what it claims: under the reference, word thr - 1 rounds up where word thr
    rounds down, for every finite value below max whose threshold is not 0."""
    bits, words = threshold_sample(fmt)
    x = bits.view(np.float64)
    ref = pyprecision.encode(x, fmt, rounding="stochastic", isa="reference", random_bits=words,
                             saturate=False)
    below, at = ref[0::3], ref[1::3]
    v = x[1::3]
    thr = words[1::3]
    with np.errstate(invalid="ignore"):
        live = (thr > 0) & (np.abs(v) < pyprecision.format(fmt).max)
    assert live.sum() > 1000
    assert np.all(below[live] != at[live])


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f64_edges_every_policy(fmt: str, isa: str) -> None:
    """±0, ±inf, NaNs with payloads in either half, float64 subnormals, values beyond float32 and
    far below the format; each with many words (given) and with a seed."""
    x = np.tile(edge_values(), 40).view(np.float64)
    words = random_words(x.size)
    for sat, nan in POLICIES:
        for kw in ({"random_bits": words}, {"seed": 2**64 - 3}):
            ref, got = _encode_both(x, fmt, isa, saturate=sat, nan=nan, **kw)
            assert_same(got, ref, x, f"{fmt} edges sat={sat} nan={nan} {isa} {list(kw)}")


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f64_lengths_and_misaligned_views(fmt: str, isa: str) -> None:
    """Every length 0..70 and the vector / block edges, from views that start 0, 1 and 3
    elements into a buffer (unaligned loads), with a seed and with words."""
    base = f64_bits().view(np.float64)[:20000]
    lengths = [*range(71), 127, 128, 129, 255, 256, 257, 2047, 2048, 2049, 4099]
    for off in (0, 1, 3):
        for n in lengths:
            x = base[off:off + n]
            for kw in ({"seed": 77 + n}, {"random_bits": random_words(n, seed=n)}):
                ref, got = _encode_both(x, fmt, isa, **kw)
                assert_same(got, ref, x, f"{fmt} n={n} off={off} {isa} {list(kw)}")


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_sr_f64_threads_odd_chunk_starts(fmt: str, isa: str) -> None:
    """n = 1048581 over 2 and 3 threads: chunks of 131073 elements (odd starts, each 2048-block
    starting odd), seeded and given words, streamed: == one thread of the reference."""
    n = 1048581
    x = np.resize(f64_bits().view(np.float64), n)
    words = random_words(n, seed=11)
    for kw in ({"seed": 424242}, {"random_bits": words}):
        ref = pyprecision.encode(x, fmt, rounding="stochastic", isa="reference", threads=1, **kw)
        for threads in (2, 3):
            with streaming(threads == 3):
                got = pyprecision.encode(x, fmt, rounding="stochastic", isa=isa, threads=threads,
                                         **kw)
            assert_same(got, ref, x, f"{fmt} threads={threads} {isa} {list(kw)}")


_bits64 = st.one_of(
    st.integers(0, 2**64 - 1),
    st.floats(allow_nan=True, allow_infinity=True, width=64).map(
        lambda v: int(np.array(v, dtype=np.float64).view(_U))),
    st.builds(lambda e, m, s: (s << 63) | (e << 52) | m, st.integers(1023 - 160, 1023 + 130),
              st.integers(0, 2**52 - 1), st.integers(0, 1)),
)


@settings(max_examples=300, deadline=None)
@given(bits=st.lists(_bits64, min_size=0, max_size=200), fmt=st.sampled_from(FORMATS),
       sat=st.booleans(), nan=st.sampled_from(["ml_dtypes", "nvidia"]),
       seed=st.integers(0, 2**64 - 1), given_words=st.booleans())
def test_sr_f64_property_fast_equals_reference(bits: list[int], fmt: str, sat: bool, nan: str,
                                               seed: int, given_words: bool) -> None:
    """Any float64 bits, any format, policy, seed or words: every fast ISA == the reference."""
    x = np.array(bits, dtype=_U).view(np.float64)
    kw: dict = {"random_bits": random_words(x.size, seed=seed % 1000)} if given_words else {"seed": seed}
    for isa in FAST_ISAS:
        ref, got = _encode_both(x, fmt, isa, saturate=sat, nan=nan, **kw)
        assert_same(got, ref, x, f"{fmt} sat={sat} nan={nan} {isa}")


@settings(max_examples=100, deadline=None)
@given(bits=st.lists(_bits64, min_size=1, max_size=100), fmt=st.sampled_from(FORMATS),
       seed=st.integers(0, 2**64 - 1))
def test_sr_f64_property_seed_is_its_words(bits: list[int], fmt: str, seed: int) -> None:
    """seed=s and random_bits=random_words(s, n) give the same codes on every fast ISA (the words
    generated in the kernel's lane order are the element's words)."""
    x = np.array(bits, dtype=_U).view(np.float64)
    w = pyprecision.kernel.random_words(seed, x.size)
    for isa in FAST_ISAS:
        a = pyprecision.encode(x, fmt, rounding="stochastic", seed=seed, isa=isa)
        b = pyprecision.encode(x, fmt, rounding="stochastic", random_bits=w, isa=isa)
        assert_same(a, b, x, f"{fmt} {isa} seed vs words")
