"""Stochastic rounding words are keyed by (seed, flat element index): the same bits whatever the
thread count, the pool's chunking (odd chunk starts) or the instruction set."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision
from pyprecision.kernel import random_words

from .conftest import FAST_ISAS, FORMATS, assert_same, streaming
from .samples import f32_bits, f64_bits

_M64 = (1 << 64) - 1


def _splitmix64(seed: int, j: int) -> int:
    """Output j (from 0) of SplitMix64 started at state `seed` (Steele, Lea & Flood 2014; Vigna's
    splitmix64.c): the state advances by the golden gamma before each output, then mix64."""
    z = (seed + (j + 1) * 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _word(seed: int, i: int) -> int:
    """Element i's word (decision K4): low half of output i // 2 for even i, high half for odd."""
    z = _splitmix64(seed, i >> 1)
    return (z >> 32) if i & 1 else z & 0xFFFFFFFF


def test_plain_python_splitmix64_matches_the_published_sequence() -> None:
    """The first outputs of splitmix64 seeded with 0, as printed by the reference splitmix64.c."""
    assert [_splitmix64(0, j) for j in range(3)] == [
        0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_words_are_splitmix64_by_element_index() -> None:
    """Odd and even offsets; element index 2^32 and pair counter 2^32 crossed; the top of the
    index range (the counter wraps modulo 2^64, as the definition's arithmetic does)."""
    for seed in (0, 1, 0x0123456789ABCDEF, 2**64 - 1):
        for first in (0, 1, 7, 2**32 - 5, 2**33 - 5, 2**33 + 3, 2**64 - 70):
            got = random_words(seed, 64, first=first)
            want = [_word(seed, first + i) for i in range(64)]
            assert got.tolist() == want, (seed, first)
    assert random_words(0, 6).tolist() == [0x7B1DCDAF, 0xE220A839, 0xA1B965F4, 0x6E789E6A,
                                           0x8009454F, 0x06C45D18]


@pytest.mark.parametrize("fmt", FORMATS)
def test_seeded_stochastic_threads_chunks_isas(fmt: str) -> None:
    """Odd length over two threads (the pool's chunks start at odd indices) and the vector
    generators' block counter == one thread of the reference."""
    base = f32_bits().view(np.float32)
    n = (1 << 20) + 3
    x = np.resize(base, n)
    ref = pyprecision.encode(x, fmt, rounding="stochastic", seed=99, isa="reference", threads=1)
    for isa in FAST_ISAS:
        for threads in (1, 2):
            with streaming(threads == 2):
                got = pyprecision.encode(x, fmt, rounding="stochastic", seed=99, isa=isa,
                                         threads=threads)
            assert_same(got, ref, x, f"SR {fmt} isa={isa} threads={threads}")


def test_words_at_every_offset_and_length() -> None:
    """The vector generator's head / body / tail split: any window equals the same slice of a
    longer run, and the plain-Python SplitMix64."""
    seed = 7
    full = random_words(seed, 300)
    for first in (0, 1, 2, 3, 5, 64, 65, 127):
        for n in (0, 1, 3, 4, 5, 31, 32, 33, 127, 128, 129, 150):
            if first + n <= full.size:
                assert random_words(seed, n, first=first).tolist() == full[first:first + n].tolist()
    want = [_word(seed, i) for i in range(300)]
    assert full.tolist() == want


@pytest.mark.parametrize("fmt", FORMATS)
def test_seeded_stochastic_equals_its_words(fmt: str) -> None:
    """seed=s gives exactly what random_bits=random_words(s, n) gives, on every ISA and on the
    reference converter, for float32 and float64 sources, at a high counter too."""
    x = np.resize(f32_bits().view(np.float32), 10001)
    with np.errstate(invalid="ignore"):
        x64 = x.astype(np.float64) * (1 + 2.0**-30)
    for seed in (2**64 - 1, 12345):
        words = random_words(seed, x.size)
        for src in (x, x64):
            for isa in ["reference", *FAST_ISAS]:
                a = pyprecision.encode(src, fmt, rounding="stochastic", seed=seed, isa=isa)
                b = pyprecision.encode(src, fmt, rounding="stochastic", random_bits=words, isa=isa)
                assert_same(a, b, src, f"seed vs words {fmt} isa={isa} {src.dtype}")


@pytest.mark.parametrize("src", ["f32", "f64"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_seeded_stochastic_strong_sample(fmt: str, src: str) -> None:
    """The fused kernels (words generated in registers) == the reference converter on the strong
    samples (float32 and float64), every saturate x NaN policy; one thread without streaming, and
    two threads streaming (an odd length makes the pool's chunks start at odd indices: the driver
    does that element alone, the kernel the rest from an even index)."""
    bits = f32_bits() if src == "f32" else f64_bits()
    bits = bits[: bits.size - 1 + bits.size % 2]
    x = bits.view(np.float32 if src == "f32" else np.float64)
    assert x.size % 2 == 1
    for saturate in (False, True):
        for nan in ("ml_dtypes", "nvidia"):
            kw = dict(rounding="stochastic", seed=31337, saturate=saturate, nan=nan)
            ref = pyprecision.encode(x, fmt, isa="reference", threads=1, **kw)
            for isa in FAST_ISAS:
                for threads in (1, 2):
                    with streaming(threads == 2):
                        got = pyprecision.encode(x, fmt, isa=isa, threads=threads, **kw)
                    assert_same(got, ref, x, f"seeded {src} {fmt} sat={saturate} nan={nan} "
                                             f"isa={isa} threads={threads}")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((-1, 4), "seed"),
        ((2**64, 4), "seed"),
        ((1.5, 4), "seed"),
        ((1, -1), "n must be"),
        ((1, 2.0), "n must be"),
        ((1, True), "n must be"),
        ((1, 4, -3), "first must be"),
        ((1, 4, 0.5), "first must be"),
        ((1, 3, 2**64 - 2), "end at 2\\*\\*64"),
        ((1, 1, 2**64), "end at 2\\*\\*64"),
    ],
)
def test_random_words_bad_arguments(args: tuple, match: str) -> None:
    with pytest.raises(pyprecision.CastError, match=match):
        random_words(*args)


def test_random_words_reach_the_last_index() -> None:
    """The last two indices of the 2**64 range are allowed and are pair 2**63 - 1's halves."""
    got = random_words(7, 2, 2**64 - 2)
    assert got.tolist() == [_word(7, 2**64 - 2), _word(7, 2**64 - 1)]
