"""§2: the seeded generator is keyed by (seed, element index) — results never depend on the
thread count, on internal chunking, on memory layout, or on call order.

What "element index" means for a user (recorded in docs/decisions/kernel-tests.md): the C-order
(row-major) position of the element in the logical array x, counted from 0 in each call.  So an
array, its reshape, its Fortran-ordered copy and its non-contiguous view encode identically with
the same seed, and encoding a prefix x[:n] gives the prefix of encoding x.  Encoding a slice
x[a:b] with a > 0 restarts the index at 0, so it is NOT expected to equal encode(x)[a:b].
"""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from .isas import available
from .refmodel_np import encode_np

N = (1 << 22) + 13  # several internal blocks, an odd tail


def _x(n: int, name: str) -> np.ndarray:
    """Values that are all inexact in `name` (every element really draws)."""
    rng = np.random.default_rng(n)
    fmt = rm.FORMATS[name]
    base = rng.uniform(1.0, 2.0, n).astype(np.float32)
    if fmt.mantissa_bits >= 10:
        base = base + np.float32(2.0**-12)  # make sure the low bits are not all zero
    return base * np.where(rng.integers(0, 2, n) == 1, -1, 1).astype(np.float32)


@pytest.fixture(scope="module")
def big() -> np.ndarray:
    return _x(N, "bf16")


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_same_seed_same_bits_for_any_thread_count(name: str) -> None:
    x = _x(N, name)
    one = pp.encode(x, name, rounding="stochastic", seed=7, threads=1)
    two = pp.encode(x, name, rounding="stochastic", seed=7, threads=2)
    auto = pp.encode(x, name, rounding="stochastic", seed=7)
    assert np.array_equal(one, two)
    assert np.array_equal(one, auto)
    for isa in available():
        assert np.array_equal(pp.encode(x, name, rounding="stochastic", seed=7, isa=isa), one), isa
    assert not np.array_equal(one, pp.encode(x, name, rounding="stochastic", seed=8, threads=2))


def test_random_bits_path_is_thread_independent(big: np.ndarray) -> None:
    r = np.random.default_rng(1).integers(0, 1 << 32, big.size, dtype=np.uint64).astype(np.uint32)
    a = pp.encode(big, "fp8e4", rounding="stochastic", random_bits=r, threads=1)
    b = pp.encode(big, "fp8e4", rounding="stochastic", random_bits=r, threads=2)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("n", [1, 2, 7, 4095, 4097, 65537, (1 << 20) + 3, (1 << 21) - 1])
def test_prefix_of_a_call_is_the_call_of_a_prefix(big: np.ndarray, n: int) -> None:
    """Different sizes are split into different internal chunks; the index keying must not care."""
    whole = pp.encode(big, "bf16", rounding="stochastic", seed=2024, threads=2)
    for threads in (1, 2):
        part = pp.encode(big[:n], "bf16", rounding="stochastic", seed=2024, threads=threads)
        assert np.array_equal(part, whole[:n])


def test_out_argument_gives_the_same_bits(big: np.ndarray) -> None:
    want = pp.encode(big, "bf16", rounding="stochastic", seed=5)
    out = np.empty(big.shape, np.uint16)
    res = pp.encode(big, "bf16", rounding="stochastic", seed=5, out=out, threads=2)
    assert np.array_equal(out, want)
    assert res is out or np.shares_memory(res, out)


def test_index_is_the_logical_c_order_position() -> None:
    x = _x(3 * 5 * 4096, "fp8e5")
    flat = pp.encode(x, "fp8e5", rounding="stochastic", seed=11)
    x3 = x.reshape(3, 5, 4096)
    assert np.array_equal(pp.encode(x3, "fp8e5", rounding="stochastic", seed=11).ravel(), flat)
    fortran = np.asfortranarray(x3)
    got = pp.encode(fortran, "fp8e5", rounding="stochastic", seed=11)
    assert np.array_equal(np.ascontiguousarray(got).ravel(), flat)


def test_non_contiguous_view_equals_its_copy() -> None:
    x = _x(1 << 16, "fp16")
    v = x[::3]
    a = pp.encode(v, "fp16", rounding="stochastic", seed=3)
    b = pp.encode(np.ascontiguousarray(v), "fp16", rounding="stochastic", seed=3)
    assert np.array_equal(a, b)
    r = np.random.default_rng(2).integers(0, 1 << 32, (v.size, 2), dtype=np.uint64)
    r = r.astype(np.uint32)[:, 0]  # a non-contiguous random_bits view
    assert np.array_equal(pp.encode(v, "fp16", rounding="stochastic", random_bits=r),
                          pp.encode(v.copy(), "fp16", rounding="stochastic", random_bits=r.copy()))


def test_call_order_does_not_matter() -> None:
    x = _x(100_000, "fp8e4")
    a1 = pp.encode(x, "fp8e4", rounding="stochastic", seed=1)
    pp.encode(x, "fp8e4", rounding="stochastic", seed=2)
    pp.encode(x[:10], "bf16", rounding="stochastic", seed=1)
    assert np.array_equal(pp.encode(x, "fp8e4", rounding="stochastic", seed=1), a1)


def test_source_dtype_does_not_change_the_words() -> None:
    """The same values as float32 and as float64 draw the same words (keyed by index only)."""
    x = _x(50_000, "bf16")
    a = pp.encode(x, "bf16", rounding="stochastic", seed=21)
    b = pp.encode(x.astype(np.float64), "bf16", rounding="stochastic", seed=21)
    assert np.array_equal(a, b)


def recover_words(seed: int, n: int) -> np.ndarray:
    """The generator's word R[i] for indices 0..n-1, found by bisection through the public API:
    x = 1 + 2^-7 (t + 1/2) / 2^32 has floor(f * 2^32) = t in bf16, and rounds up iff R < t."""
    lo = np.zeros(n, np.int64)  # invariant: R >= lo
    hi = np.full(n, 1 << 32, np.int64)  # invariant: R < hi
    while np.any(hi - lo > 1):
        t = (lo + hi) // 2
        x = 1.0 + 2.0**-7 * (t.astype(np.float64) + 0.5) / 2.0**32
        up = pp.encode(x, "bf16", rounding="stochastic", seed=seed) == 0x3F81
        hi = np.where(up, np.minimum(hi, t), hi)  # R < t
        lo = np.where(up, lo, np.maximum(lo, t))  # R >= t
    return lo.astype(np.uint32)


@pytest.fixture(scope="module")
def words() -> np.ndarray:
    return recover_words(424242, 1 << 16)


def test_seeded_path_equals_random_bits_path_with_the_generators_words(words: np.ndarray) -> None:
    """Every format, both float sources: seeded result == model(x, R) == random_bits result."""
    n = words.size
    rng = np.random.default_rng(8)
    for name in rm.FORMAT_NAMES:
        fmt = rm.FORMATS[name]
        with np.errstate(over="ignore"):
            x = (rng.uniform(-1.5, 1.5, n) * fmt.max_value).astype(np.float32)
        x[: n // 4] = rng.uniform(-4, 4, n // 4)
        x[:12] = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F800000, 0xFF800000, 0,
                           0x80000000, 1, 0x80000001, 0x7F7FFFFF, 0xFF7FFFFF, 0x80800000],
                          np.uint32).view(np.float32)
        with np.errstate(invalid="ignore"):
            x64 = x.astype(np.float64) * (1 + 2.0**-30)
        for src in (x, x64):
            seeded = pp.encode(src, name, rounding="stochastic", seed=424242, saturate=False)
            given = pp.encode(src, name, rounding="stochastic", random_bits=words, saturate=False)
            assert np.array_equal(seeded, given), name
            want = encode_np(name, src, "stochastic", False, "ml_dtypes", words)
            assert np.array_equal(seeded, want), name


def test_generator_words_look_uniform(words: np.ndarray) -> None:
    """Chi-square over the top 8 bits and the low 8 bits (255 dof; bound ~ mean + 6 sd)."""
    n = words.size
    for part in (words >> np.uint32(24), words & np.uint32(0xFF)):
        counts = np.bincount(part.astype(np.int64), minlength=256)
        chi2 = float(np.sum((counts - n / 256) ** 2 / (n / 256)))
        assert chi2 < 255 + 6 * np.sqrt(2 * 255), chi2
    assert np.unique(words).size > n - 10  # 2^16 draws from 2^32: collisions are rare
