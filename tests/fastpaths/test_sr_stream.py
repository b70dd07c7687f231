"""Stochastic rounding to fp32r with the fused kernel streaming its own codes (convert.c
stream_sr, kern_sr_avx512.h sr_avx512 with stream; speed.md S26) against the reference converter:
float32 and float64 sources, words seeded and given, both saturations, into destinations at every
element offset from a 64-byte boundary (an odd head with seeded words declines to the block
path), lengths around the 16- and 32-element steps, and two threads over an odd length (chunks
that start at odd indices). Nothing is written outside the destination."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, assert_same, streaming
from .samples import f32_bits, f64_bits, random_words


def _out_at(n: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """n uint32 codes starting offset elements past a 64-byte boundary, and their buffer."""
    raw = np.zeros(n * 4 + 128, np.uint8)
    base = (-raw.ctypes.data) % 64
    return np.ndarray((n,), np.uint32, buffer=raw, offset=base + 4 * offset), raw


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("source", ["f32", "f64"])
def test_every_head_offset(isa: str, source: str) -> None:
    x = f32_bits()[:40_000].view(np.float32) if source == "f32" else f64_bits()[:40_000].view(np.float64)
    words = random_words(x.size)
    for kw in ({"seed": 9}, {"random_bits": words}):
        for sat in (False, True):
            ref = pyprecision.encode(x, "fp32r", rounding="stochastic", saturate=sat,
                                     isa="reference", **kw)
            for k in range(16):
                for n in (1, 15, 16, 17, 31, 32, 33, 4099, x.size):
                    out, raw = _out_at(n, k)
                    kn = {"seed": 9} if "seed" in kw else {"random_bits": words[:n]}
                    with streaming(True):
                        pyprecision.encode(x[:n], "fp32r", rounding="stochastic", saturate=sat,
                                           isa=isa, threads=1, out=out, **kn)
                    assert_same(out, ref[:n], x[:n], f"{source} {kw.keys()} sat={sat} {isa} "
                                                     f"offset {k} n={n}")
                    lo = (-raw.ctypes.data) % 64 + 4 * k
                    assert not raw[:lo].any() and not raw[lo + 4 * n:].any()


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("source", ["f32", "f64"])
def test_two_threads_odd_length(isa: str, source: str) -> None:
    base = f32_bits().view(np.float32) if source == "f32" else f64_bits().view(np.float64)
    x = np.resize(base, 300_001)
    words = random_words(x.size)
    for kw in ({"seed": 3}, {"random_bits": words}):
        ref = pyprecision.encode(x, "fp32r", rounding="stochastic", isa="reference", **kw)
        for force in (False, True):
            with streaming(force):
                got = pyprecision.encode(x, "fp32r", rounding="stochastic", isa=isa, threads=2, **kw)
            assert_same(got, ref, x, f"{source} {kw.keys()} {isa} stream={force}")
