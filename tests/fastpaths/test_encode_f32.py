"""float32 sources: every fast ISA == the reference, every format x rounding x saturate x NaN."""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import FORMATS, ROUNDINGS, encode_all_ways
from .samples import f32_bits, random_words


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_f32_stratified(fmt: str, rounding: str) -> None:
    x = f32_bits().view(np.float32)
    words = random_words(x.size) if rounding == "stochastic" else None
    for saturate in (False, True):
        for nan in ("ml_dtypes", "nvidia"):
            encode_all_ways(x, fmt, rounding, saturate, nan, words, "f32")


@pytest.mark.parametrize("fmt", FORMATS)
def test_f32_odd_lengths_and_offsets(fmt: str) -> None:
    """Block and vector tails: lengths around the 2048-element block, unaligned starts."""
    base = f32_bits().view(np.float32)
    for start in (0, 1, 3, 17):
        for n in (1, 7, 15, 16, 17, 2047, 2048, 2049, 4097):
            x = base[start:start + n]
            words = random_words(n, seed=n)
            for rounding in ("rne", "stochastic"):
                encode_all_ways(x, fmt, rounding, False, "ml_dtypes",
                                words if rounding == "stochastic" else None, f"f32[{start}:+{n}]")


@pytest.mark.parametrize("rounding", ["rne", "rtz", "rna"])
def test_fp32r_rounding_boundaries_in_every_binade(rounding: str) -> None:
    """The dedicated fp32r kernels round at bit 13 of the float32 bits: every exponent (subnormals,
    max, inf, NaN included) x both signs x low bits just below, at and above each half-quantum and
    quantum boundary, with the kept lsb odd and even, in vector-length runs."""
    low = np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2FFF, 0x3000, 0x3001,
                    0x7FFFF, 0x7F000, 0x7FFFF - 0x1000, 0x400000, 0x7FE000, 0x7FF000],
                   np.uint32)
    exps = np.arange(256, dtype=np.uint32) << 23
    bits = (exps[:, None] | low[None, :]).ravel()
    bits = np.concatenate([bits, bits | 0x80000000])
    x = bits.view(np.float32)
    for saturate in (False, True):
        for nan in ("ml_dtypes", "nvidia"):
            encode_all_ways(x, "fp32r", rounding, saturate, nan, None, "fp32r boundaries")
