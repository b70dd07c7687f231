"""The PE dot's fused tile (csrc/dot.c, decision K11): where every product of the two operands is
exact in float32, one fused multiply-add per step gives the bits of a multiply and an add. Proven
here two ways: the gate (``pp_dot_products_exact``) never admits operands with an inexact product
(checked against every product, computed exactly in float64), and on operands it admits — values
of bf16, fp16, tf32 and fp8, ±0, the edges of the normal range, sums that overflow or cancel —
``pe_dot`` equals the k loop of the definition on every instruction set."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyprecision._core import ffi, lib

from pyprecision.kernel import pe_dot

from .isas import selected
from .test_pe_dot import loop_dot, same_bits

ISAS = selected()
NARROW = [ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


def gate(a: np.ndarray, b: np.ndarray) -> bool:
    """``pp_dot_products_exact`` of two float32 arrays."""
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    return bool(lib.pp_dot_products_exact(ffi.from_buffer("float[]", a), a.size,
                                          ffi.from_buffer("float[]", b), b.size))  # fmt: skip


def every_product_exact(a: np.ndarray, b: np.ndarray) -> bool:
    """The property the gate must imply: each product a[i] * b[j] (exact in float64: 24 + 24
    significant bits) is a finite float32 value."""
    p = np.multiply.outer(a.astype(np.float64).ravel(), b.astype(np.float64).ravel())
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.all(np.isfinite(p)) and np.all(p.astype(np.float32).astype(np.float64) == p))


def narrow_values(rng: np.random.Generator, shape: tuple[int, ...], fmt: type,
                  scale: int, zeros: float) -> np.ndarray:
    """Values of ``fmt`` (as float32) spread over binades around 2**scale, with signed zeros."""
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 7, shape) * 2.0**scale
    with np.errstate(over="ignore"):
        v = x.astype(np.float32).astype(fmt).astype(np.float32)
    v[~np.isfinite(v)] = 0.0
    z = rng.random(shape) < zeros
    v[z] = np.where(rng.random(int(z.sum())) < 0.5, 0.0, -0.0)
    return v


WORDS = st.one_of(
    st.integers(0, 2**32 - 1),  # anything
    st.integers(0, 2**20 - 1).map(lambda m: (m << 12) & 0x807FF000),  # zero exponent: ±0
    st.tuples(st.integers(0, 1), st.integers(0, 255), st.integers(0, 2**11 - 1)).map(
        lambda t: (t[0] << 31) | (t[1] << 23) | (t[2] << 12)),  # 12-bit significands, any exponent
    st.sampled_from([0x3F801000, 0x3F800800, 0x00400000, 0x7F800000, 0x7FC00000, 0x80000000]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=12), st.lists(WORDS, min_size=1, max_size=12))
def test_the_gate_admits_only_exact_products(wa: list[int], wb: list[int]) -> None:
    a = np.array(wa, np.uint32).view(np.float32)
    b = np.array(wb, np.uint32).view(np.float32)
    if gate(a, b):
        assert every_product_exact(a, b)


@pytest.mark.parametrize("ea,eb,admitted", [
    (64, 64, True),    # |a*b| >= 2^-126: min exponents summing to 128
    (64, 63, False),   # 2^-127 could be a product: refused
    (190, 190, True),  # |a*b| < 2^128: max exponents summing to 380
    (190, 191, False),
])
def test_the_gate_at_the_edges_of_the_normal_range(ea: int, eb: int, admitted: bool) -> None:
    """Biased exponents at the limits of the gate, with the largest 12-bit significands."""
    a = np.array([(ea << 23) | 0x7FF000, 0x3F800000], np.uint32).view(np.float32)
    b = np.array([(eb << 23) | 0x7FF000, 0x3F800000], np.uint32).view(np.float32)
    assert gate(a, b) is admitted
    assert every_product_exact(a, b) or not admitted


@pytest.mark.parametrize("word", [0x3F800800, 0x7F800000, 0xFFC00000, 0x00000001, 0x007FF000])
def test_the_gate_refuses_a_wide_significand_inf_nan_and_subnormals(word: int) -> None:
    ok = np.ones(8, np.float32)
    bad = ok.copy()
    bad.view(np.uint32)[5] = word
    assert gate(ok, ok)
    assert not gate(bad, ok) and not gate(ok, bad)


def test_the_gate_takes_every_narrow_format_and_zeros() -> None:
    rng = np.random.default_rng(1)
    for fmt in NARROW:
        assert gate(narrow_values(rng, (40,), fmt, 0, 0.2), narrow_values(rng, (40,), fmt, 0, 0.2))
    tf32 = (rng.standard_normal(64).astype(np.float32).view(np.uint32) & 0xFFFFE000)
    assert gate(tf32.view(np.float32), np.ones(3, np.float32))
    assert gate(np.zeros(5, np.float32), np.full(5, 2.0**127, np.float32))  # all products ±0


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NARROW), st.integers(16, 40), st.integers(1, 300), st.integers(16, 70),
       st.sampled_from([(0, 0), (56, 56), (-56, -56), (20, -40)]), st.sampled_from([0, 0.3]),
       st.integers(0, 2**32 - 1))
def test_the_fused_tile_is_the_k_loop(fmt: type, m: int, k: int, n: int, scales: tuple[int, int],
                                      zeros: float, seed: int) -> None:
    """Operands the gate admits (asserted, so the fused tile runs where the CPU has FMA): every
    path equals the definition bit for bit, at 1 and 2 threads, near the top and the bottom of
    the range and with sums that cancel to ±0. (bf16 at ±56 binades may have a product outside
    the normal range: then the gate refuses and the multiply-and-add tile runs.)"""
    rng = np.random.default_rng(seed)
    a = narrow_values(rng, (m, k), fmt, scales[0], zeros)
    b = narrow_values(rng, (k, n), fmt, scales[1], zeros)
    assert gate(a, b) or (fmt is ml_dtypes.bfloat16 and abs(scales[0]) == 56)
    want = loop_dot(a, b, np.float32)
    for isa in ISAS:
        same_bits(pe_dot(a, b, isa=isa, threads=1 + seed % 2), want)


def test_batched_attention_with_masked_zeros() -> None:
    """Softmax-like probabilities (many +0) times bf16 values, batched: = the loop."""
    rng = np.random.default_rng(7)
    p = narrow_values(rng, (6, 32, 128), ml_dtypes.bfloat16, -8, 0.4)
    v = narrow_values(rng, (6, 128, 48), ml_dtypes.bfloat16, 0, 0.0)
    assert gate(p, v)
    want = loop_dot(p, v, np.float32)
    for isa in ISAS:
        same_bits(pe_dot(p, v, isa=isa, threads=2), want)


def test_a_sum_that_overflows() -> None:
    """Finite products (the gate admits them) whose running sum passes FLT_MAX: +inf, then +inf
    stays; the other row cancels exactly to +0."""
    big = np.float32(1.5 * 2.0**126)
    a = np.array([[big, big, big, -big], [big, -big, big, -big]] * 8, np.float32)
    b = np.ones((4, 16), np.float32)
    assert gate(a, b)
    want = loop_dot(a, b, np.float32)
    assert np.isinf(want[0]).all() and (want[1].view(np.uint32) == 0).all()
    for isa in ISAS:
        same_bits(pe_dot(a, b, isa=isa), want)
