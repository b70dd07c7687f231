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
