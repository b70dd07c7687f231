"""float64, integer and narrow-float sources: every fast ISA == the reference converter."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from .conftest import FAST_ISAS, FORMATS, ROUNDINGS, encode_all_ways
from .samples import f64_bits, int_values, random_words


def test_there_is_a_fast_path() -> None:
    assert "portable" in FAST_ISAS


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_f64_stratified(fmt: str, rounding: str) -> None:
    x = f64_bits().view(np.float64)
    words = random_words(x.size, seed=5) if rounding == "stochastic" else None
    for saturate in (False, True):
        for nan in ("ml_dtypes", "nvidia"):
            encode_all_ways(x, fmt, rounding, saturate, nan, words, "f64")


INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fmt", FORMATS)
def test_integers(fmt: str, dtype: type) -> None:
    x = int_values(np.dtype(dtype))
    for rounding in ROUNDINGS:
        words = random_words(x.size, seed=6) if rounding == "stochastic" else None
        for saturate in (False, True):
            encode_all_ways(x, fmt, rounding, saturate, "ml_dtypes", words, np.dtype(dtype).name)


NARROW = [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn,
          ml_dtypes.float8_e5m2]


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fmt", FORMATS)
def test_narrow_floats_every_code(fmt: str, dtype: type) -> None:
    """Every code of every narrow source type (NaN payloads included), twice over, in all modes."""
    dt = np.dtype(dtype)
    codes = np.arange(1 << (8 * dt.itemsize), dtype=np.uint64)
    raw = np.concatenate([codes, codes]).astype(np.uint8 if dt.itemsize == 1 else np.uint16)
    x = raw.view(dt)
    for rounding in ROUNDINGS:
        words = random_words(x.size, seed=7) if rounding == "stochastic" else None
        for saturate in (False, True):
            for nan in ("ml_dtypes", "nvidia"):
                encode_all_ways(x, fmt, rounding, saturate, nan, words, dt.name)
