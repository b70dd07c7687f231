"""Decision EM-23: a unary op on an operand of a narrow format (bf16, fp16, the fp8s) looks its
results up in a table of the op on every code of the format; the lookup must equal the float64
route (``round_to(unary_float(kind, x), dt)``) bit for bit, on every code, for every result dtype,
and give the NaN lanes their float64-route payloads."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.emulate.ir import ops
from pyprecision.emulate.ir.numbers import round_to
from pyprecision.emulate.ir.ops import unary_float, unary_rounded
from pyprecision.formats import format as format_of
from pyprecision.kernel import decode

SOURCES = [ir.bfloat16, ir.float16, ir.float8e4, ir.float8e4m3fn, ir.float8_e5m2]
KINDS = sorted(ops._TABLED)


def _values(src: ir.DType) -> np.ndarray:
    """Every non-NaN value of ``src``'s format, repeated to at least TABLE_MIN elements."""
    f = format_of(src.fmt)
    v = np.asarray(decode(np.arange(1 << f.bits, dtype=f.storage_dtype), src.fmt), np.float32)
    v = v[~np.isnan(v)]
    return np.resize(v, max(v.size, ops.TABLE_MIN))


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)  # the layouts may differ
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
        x.view(np.uint8), y.view(np.uint8))


def _float64_route(kind: str, x: np.ndarray, dt: ir.DType) -> np.ndarray:
    return round_to(unary_float(kind, x), dt)


@pytest.mark.parametrize("src", SOURCES, ids=lambda d: d.fmt)
@pytest.mark.parametrize("kind", KINDS)
def test_every_code_equals_the_float64_route(src: ir.DType, kind: str) -> None:
    """Every code of the format, to the same format, to float32 and to bf16; the table is used
    (its cache grows), so a table that is never consulted cannot pass this."""
    x = _values(src)
    for dt in {src, ir.float32, ir.bfloat16}:
        before = ops._unary_table.cache_info()
        got = unary_rounded(kind, x, dt, src)
        after = ops._unary_table.cache_info()
        assert after.hits + after.misses == before.hits + before.misses + 1
        assert _same(got, _float64_route(kind, x, dt)), (kind, src.fmt, dt)


@pytest.mark.parametrize("src", [ir.bfloat16, ir.float16, ir.float8e4], ids=lambda d: d.fmt)
def test_a_nan_lane_keeps_the_float64_route(src: ir.DType) -> None:
    """A NaN anywhere sends the array down the float64 route, so every NaN keeps the payload
    that route gives it (a table has one entry per NaN code, not per payload)."""
    x = _values(src)
    x[[3, 500, x.size - 1]] = np.array([0x7FC00001, 0xFFC12345, 0x7F800001], np.uint32).view(
        np.float32)  # quiet with payloads, and a signalling one
    for kind in ("exp", "tanh"):
        assert _same(unary_rounded(kind, x, src, src), _float64_route(kind, x, src))


def test_small_operands_and_wide_sources_take_the_float64_route() -> None:
    """Below TABLE_MIN, and from float32 operands (2^32 values: no table), nothing is looked up."""
    before = ops._unary_table.cache_info()
    x = _values(ir.bfloat16)
    small = x[: ops.TABLE_MIN - 1]
    assert _same(unary_rounded("exp", small, ir.bfloat16, ir.bfloat16),
                 _float64_route("exp", small, ir.bfloat16))
    assert _same(unary_rounded("exp", x, ir.bfloat16, ir.float32),
                 _float64_route("exp", x, ir.bfloat16))
    after = ops._unary_table.cache_info()
    assert after.hits + after.misses == before.hits + before.misses


@settings(max_examples=40, deadline=None)
@given(src=st.sampled_from(SOURCES), kind=st.sampled_from(KINDS),
       shape=st.sampled_from([(4096,), (64, 65), (3, 40, 37)]), transpose=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_random_arrays_and_layouts(src: ir.DType, kind: str, shape: tuple[int, ...],
                                   transpose: bool, seed: int) -> None:
    """Random codes in C- and transposed (non-contiguous) layouts: the table's result has the
    operand's shape and the float64 route's bits."""
    x = np.random.default_rng(seed).choice(_values(src), size=shape)
    if transpose:
        x = x.T
    got = unary_rounded(kind, x, src, src)
    assert _same(got, _float64_route(kind, x, src))
