"""Decision EM-26: a float32 operand's exp, log, tanh, sin, cos, log1p, expm1 and cbrt to a float32
result run as the ufunc's float64 loop writing float32 (``dtype=np.float64``, ``out`` float32),
without a float64 array; each must equal the float64 route (``round_to(unary_float(kind, x),
float32)``: the widened array, the ufunc, ``astype``) bit for bit, NaN payloads included."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.emulate.ir import ops
from pyprecision.emulate.ir.numbers import round_to
from pyprecision.emulate.ir.ops import unary_float, unary_rounded

KINDS = sorted(ops._F64_UFUNC)
SPECIALS = np.array([0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
                     0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FBFFFFF,
                     0x42B17218, 0x42B17217, 0xC2CFF1B5, 0xC2CFF1B4, 0x3F800000, 0xBF800000,
                     0x41100000, 0x3F317218], np.uint32)


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
        x.view(np.uint32), y.view(np.uint32))


def _route(kind: str, x: np.ndarray) -> np.ndarray:
    return round_to(unary_float(kind, x), ir.float32)


@pytest.mark.parametrize("kind", KINDS)
def test_a_stratified_sample_of_float32(kind: str) -> None:
    """Every 4099th float32 word (over a million, every binade of both signs) and the specials:
    NaN payloads quiet and signalling, ±inf, ±0, subnormals, exp's overflow and underflow
    edges."""
    words = np.concatenate([np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32),
                            SPECIALS])
    x = words.view(np.float32)
    assert _same(unary_rounded(kind, x, ir.float32, ir.float32), _route(kind, x))


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(KINDS), shape=st.sampled_from([(1,), (7, 9), (3, 40, 37)]),
       transpose=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_random_words_in_any_layout(kind: str, shape: tuple[int, ...], transpose: bool,
                                    seed: int) -> None:
    x = np.random.default_rng(seed).integers(0, 1 << 32, size=shape, dtype=np.uint32).view(
        np.float32)
    if transpose:
        x = x.T
    assert _same(unary_rounded(kind, x, ir.float32, ir.float32), _route(kind, x))


@pytest.mark.exhaustive
@pytest.mark.parametrize("kind", KINDS)
def test_every_float32(kind: str) -> None:
    """All 2^32 words, 2^26 at a time."""
    step = 1 << 26
    for start in range(0, 1 << 32, step):
        x = np.arange(start, start + step, dtype=np.uint64).astype(np.uint32).view(np.float32)
        assert _same(unary_rounded(kind, x, ir.float32, ir.float32), _route(kind, x)), start
