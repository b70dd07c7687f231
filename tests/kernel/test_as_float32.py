"""``kernel.as_float32``: ``astype(np.float32)`` bit for bit, through the core's decode (N7).

Every code of every 8- and 16-bit format, in arrays large enough to take the decode route, in
several layouts; and the claim the helper rests on, that the core's decode *is* ``astype`` on
every code of the formats in ``_DECODE_IS_ASTYPE`` (on fp16 it differs on NaN codes only)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import decode
from pyprecision.formats import formats
from pyprecision.kernel import as_float32
from pyprecision.kernel.numerics import _DECODE_IS_ASTYPE

NARROW = [f for f in formats() if f.bits <= 16]


def _every_code(f, copies: int = 1) -> np.ndarray:
    codes = np.arange(1 << f.bits, dtype=np.uint32).astype(f.storage_dtype)
    return np.tile(codes, copies).view(f.dtype)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32)


@pytest.mark.parametrize("f", NARROW, ids=lambda f: f.name)
def test_every_code_is_astype(f):
    x = _every_code(f, copies=1 if f.bits == 16 else 64)  # 65536 / 16384 elements: the core route
    got = as_float32(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_array_equal(_bits(got), _bits(x.astype(np.float32)))


@pytest.mark.parametrize("f", NARROW, ids=lambda f: f.name)
def test_layouts(f):
    """Non-contiguous, multi-dimensional and reversed inputs; the input is never written."""
    x = _every_code(f, copies=1 if f.bits == 16 else 64).reshape(-1, 256)
    before = x.copy()
    for view in (x.T, x[::-1], x[:, ::2], x.reshape(4, -1, 64)):
        np.testing.assert_array_equal(_bits(as_float32(view)), _bits(view.astype(np.float32)))
    np.testing.assert_array_equal(x.view(f.storage_dtype), before.view(f.storage_dtype))


def test_decode_claim():
    """``_DECODE_IS_ASTYPE`` lists exactly the formats whose decode equals astype on every code."""
    same = {f.name for f in NARROW
            if np.array_equal(_bits(decode(_every_code(f).view(f.storage_dtype), f.name)),
                              _bits(_every_code(f).astype(np.float32)))}
    assert same == set(_DECODE_IS_ASTYPE)


def test_other_dtypes_pass_through():
    a = np.arange(10, dtype=np.float32)
    assert as_float32(a) is a
    np.testing.assert_array_equal(as_float32(np.arange(5000, dtype=np.int32)), np.arange(5000))
    assert as_float32(np.float64(0.1)).dtype == np.float32


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(NARROW), st.integers(0, 9000), st.integers(0, 2**32 - 1))
def test_random_arrays(f, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1 << f.bits, size=n, dtype=np.uint32).astype(f.storage_dtype).view(f.dtype)
    np.testing.assert_array_equal(_bits(as_float32(x)), _bits(x.astype(np.float32)))


# -- quantize_f32: the IR evaluator's rounding, without the public API's per-call checks --------

def _stratified_f32() -> np.ndarray:
    """Every exponent and sign with the low, high and rounding-boundary mantissas, plus random
    words: 2 x 256 x 64 + 65536 float32 inputs (NaN payloads, subnormals, ±inf included)."""
    rng = np.random.default_rng(7)
    se = (np.arange(512, dtype=np.uint32) << 23)[:, None]
    mant = np.concatenate([np.arange(16), 0x7FFFFF - np.arange(16),
                           (1 << np.arange(23)) - 1, 1 << np.arange(9)]).astype(np.uint32)
    words = np.concatenate([(se | mant[None, :]).ravel(),
                            rng.integers(0, 2**32, 65536, dtype=np.uint32)])
    return words.view(np.float32)


@pytest.mark.parametrize("f", NARROW, ids=lambda f: f.name)
def test_quantize_f32_is_the_general_route(f):
    from pyprecision.kernel import quantize_f32, round_to_format

    x = _stratified_f32()
    with np.errstate(invalid="ignore"):
        x64 = np.concatenate([x.astype(np.float64),
                              np.random.default_rng(3).standard_normal(4096) * 1e3])
    clean = x[~np.isnan(x)]  # without a NaN, float32 up to SMALL_ELEMENTS takes the chain kernel
    for src in (x, x64, x.reshape(64, -1)[:, ::3], x.reshape(64, -1).T, x64[:4096].reshape(8, -1).T,
                x[:1].reshape(()), x[:0], clean, clean[:4096].reshape(64, 64).T,
                clean[:4096].reshape(64, 64)[:, ::2], clean[:1].reshape(())):
        got = quantize_f32(src, f.name)
        want = as_float32(round_to_format(src, f.name))
        assert got.dtype == np.float32 and got.shape == np.shape(src)
        np.testing.assert_array_equal(_bits(got), _bits(want))
    big = x.astype(">f4")  # a byte order the fast route does not take
    np.testing.assert_array_equal(_bits(quantize_f32(big, f.name)),
                                  _bits(as_float32(round_to_format(x, f.name))))


def test_an_encode_writes_quiet_nan_codes_only():
    """Why quantize_f32 needs no NaN patch on fp16: every NaN float32 word (2 x (2^23 - 1)) and
    its float64 widening encodes to a quiet NaN code, which decode and astype agree on."""
    from pyprecision.kernel import round_to_format

    m = np.arange(1, 1 << 23, dtype=np.uint32)
    for sign in (0, 0x80000000):
        w = (np.uint32(0x7F800000 | sign) | m).view(np.float32)
        with np.errstate(invalid="ignore"):
            sources = (w, w.astype(np.float64))
        for src in sources:
            codes = round_to_format(src, "fp16")
            np.testing.assert_array_equal(_bits(decode(codes, "fp16")),
                                          _bits(codes.astype(np.float32)))
