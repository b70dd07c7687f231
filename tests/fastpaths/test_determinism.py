"""Stochastic rounding words are keyed by (seed, flat element index): the same bits whatever the
thread count, the pool's chunking (odd chunk starts) or the instruction set."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision
from pyprecision.kernel import random_words

from .conftest import FAST_ISAS, FORMATS, assert_same, streaming
from .samples import f32_bits


def _philox4x32_10(seed: int, block: int) -> list[int]:
    """Philox4x32-10 (Salmon et al. 2011) in plain Python: counter (block lo, block hi, 0, 0)."""
    m = 0xFFFFFFFF
    c = [block & m, block >> 32, 0, 0]
    k0, k1 = seed & m, seed >> 32
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & m, (p0 >> 32) ^ c[3] ^ k1, p0 & m]
        k0, k1 = (k0 + 0x9E3779B9) & m, (k1 + 0xBB67AE85) & m
    return c


def test_words_are_philox_by_element_index() -> None:
    seed = 0x0123456789ABCDEF
    first = (1 << 32) * 4 - 6  # crosses a carry into the counter's high word
    got = random_words(seed, 64, first=first)
    want = [_philox4x32_10(seed, (first + i) >> 2)[(first + i) & 3] for i in range(64)]
    assert got.tolist() == want


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
    longer run, and the plain-Python Philox."""
    seed = 7
    full = random_words(seed, 300)
    for first in (0, 1, 2, 3, 5, 64, 65, 127):
        for n in (0, 1, 3, 4, 5, 31, 32, 33, 127, 128, 129, 150):
            if first + n <= full.size:
                assert random_words(seed, n, first=first).tolist() == full[first:first + n].tolist()
    want = [_philox4x32_10(seed, i >> 2)[i & 3] for i in range(300)]
    assert full.tolist() == want


def test_seeded_stochastic_equals_its_words() -> None:
    """seed=s gives exactly what random_bits=random_words(s, n) gives, at a high counter too."""
    x = np.resize(f32_bits().view(np.float32), 10001)
    for isa in FAST_ISAS:
        a = pyprecision.encode(x, "fp8e4", rounding="stochastic", seed=2**64 - 1, isa=isa)
        words = random_words(2**64 - 1, x.size)
        b = pyprecision.encode(x, "fp8e4", rounding="stochastic", random_bits=words, isa=isa)
        assert_same(a, b, x, f"seed vs words isa={isa}")
