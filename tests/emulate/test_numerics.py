"""pyprecision.kernel's shared numerics against independent oracles (Python ints, scalar NumPy
loops, ml_dtypes), and the one rule for the sign of a zero dot sum in both evaluators
(docs/decisions/numerics.md N3-N5)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision as pp
from pyprecision import hlo, ir
from pyprecision.emulate import run_hlo, run_ir
from pyprecision.kernel import (
    int_dot,
    is_nan_code,
    ordered_codes,
    pe_matmul,
    round_to_format,
    wrap_int,
)


def scalar_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Oracle: r[i,j] = Σ_k a[i,k]·b[k,j] one scalar at a time, fp32 products, fp32 sum from +0."""
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    with np.errstate(all="ignore"):
        for i in range(a.shape[0]):
            for j in range(b.shape[1]):
                acc = np.float32(0.0)
                for k in range(a.shape[1]):
                    acc = np.float32(acc + np.float32(np.float32(a[i, k]) * np.float32(b[k, j])))
                out[i, j] = acc
    # N6: a NaN the sum produces (inf - inf after an overflow) is the positive quiet NaN; the x86
    # scalar oracle would give its default NaN, 0xffc00000
    out.view(np.uint32)[np.isnan(out)] = 0x7FC00000
    return out


# -- the PE matmul ---------------------------------------------------------------------------

f32s = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(0, 5), st.integers(1, 4), st.data())
def test_pe_matmul_is_the_scalar_sequential_sum(m: int, k: int, n: int, data: st.DataObject) -> None:
    a = np.array(data.draw(st.lists(f32s, min_size=m * k, max_size=m * k)), np.float32)
    b = np.array(data.draw(st.lists(f32s, min_size=k * n, max_size=k * n)), np.float32)
    a, b = a.reshape(m, k), b.reshape(k, n)
    got = pe_matmul(a, b)
    want = scalar_matmul(a, b)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_pe_matmul_rounds_each_product_and_sum_without_fma() -> None:
    e = np.float32(1.0 + 2.0**-12)
    # e*e = 1 + 2^-11 + 2^-24: the product rounds to 1 + 2^-11, so the sum is 2^-11 (FMA: + 2^-24)
    assert pe_matmul(np.array([[e, -1]], np.float32), np.array([[e], [1]], np.float32))[0, 0] \
        == np.float32(2.0**-11)
    # k order: (1e8 + 1) rounds back to 1e8; a pairwise or exact sum would give 1
    got = pe_matmul(np.array([[1e8, 1, -1e8]], np.float32), np.ones((3, 1), np.float32))
    assert got[0, 0] == 0.0


def test_ZERO_SUM_SIGN_a_sum_of_negative_zeros_is_positive_zero() -> None:
    """N5: the accumulator starts at +0, so (-0)·1 and (-0)·1 + (-0)·1 are +0, not -0."""
    for k in (1, 2, 5):
        got = pe_matmul(np.full((1, k), -0.0, np.float32), np.ones((k, 1), np.float32))
        assert got[0, 0] == 0 and not np.signbit(got[0, 0]), k
    empty = pe_matmul(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32))
    assert empty.shape == (2, 3) and not np.signbit(empty).any()


def test_pe_matmul_batches_and_accumulates_in_the_given_type() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal((2, 4, 5))
    got = pe_matmul(a, b, np.float64)
    assert got.dtype == np.float64 and got.shape == (2, 3, 5)
    for i in range(2):
        want = np.zeros((3, 5))
        for k in range(4):
            want = want + np.multiply.outer(a[i, :, k], b[i, k, :])
        np.testing.assert_array_equal(got[i], want)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_c_int_dot_f32_route_is_pe_matmul(m: int, k: int, n: int, seed: int) -> None:
    """The C core's int_dot F32 route (csrc/intops.c) is the same sum as pe_matmul."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-(2**28), 2**28, (m, k), dtype=np.int64)
    b = rng.integers(-(2**10), 2**10, (k, n), dtype=np.int64)
    want = pp.float_to_int(pe_matmul(a.astype(np.float32), b.astype(np.float32)), np.int64)
    np.testing.assert_array_equal(int_dot(a, b, np.int64), want)


# -- the sign of a zero sum in both evaluators ------------------------------------------------

IR_MATMUL = """func @main {{
  tensor @s : input float32[{k},1]
  tensor @m : input float32[{k},1]
  tensor @y : output float32[1,1]
  %s = affine_load @s : float32[{k},1]
  %m = affine_load @m : float32[{k},1]
  %p = matmul %s, %m : float32[1,1]
  affine_store %p, @y
}}
"""

HLO_DOT = """HloModule m

ENTRY main {{
  a = f32[1,{k}]{{1,0}} parameter(0)
  b = f32[{k},1]{{1,0}} parameter(1)
  ROOT d = f32[1,1]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


@pytest.mark.parametrize("k", [1, 3])
def test_ZERO_SUM_SIGN_ir_matmul_of_negative_zero_is_positive_zero(k: int) -> None:
    got = run_ir(ir.parse(IR_MATMUL.format(k=k)),
                 {"s": np.full((k, 1), -0.0, np.float32), "m": np.ones((k, 1), np.float32)})
    y = got["y"][0, 0]
    assert y == 0 and not np.signbit(y)


@pytest.mark.parametrize("k", [1, 3])
def test_ZERO_SUM_SIGN_hlo_dot_of_negative_zero_is_positive_zero(k: int) -> None:
    (out,) = run_hlo(hlo.parse(HLO_DOT.format(k=k)),
                     [np.full((1, k), -0.0, np.float32), np.ones((k, 1), np.float32)])
    assert out[0, 0] == 0 and not np.signbit(out[0, 0])


def test_hlo_bf16_dot_of_negative_zero_is_positive_zero() -> None:
    text = HLO_DOT.format(k=2).replace("f32", "bf16")
    (out,) = run_hlo(hlo.parse(text), [np.full((1, 2), -0.0, ml_dtypes.bfloat16),
                                       np.ones((2, 1), ml_dtypes.bfloat16)])
    assert out.dtype == ml_dtypes.bfloat16
    assert not np.signbit(out.astype(np.float32)[0, 0])


# -- integer wrap ------------------------------------------------------------------------------

def wrapped(v: int, bits: int, signed: bool) -> int:
    r = v % (1 << bits)
    return r - (1 << bits) if signed and r >= 1 << (bits - 1) else r


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16, 32]), st.booleans(),
       st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=8))
def test_wrap_int_is_modular_arithmetic(bits: int, signed: bool, vals: list[int]) -> None:
    got = wrap_int(np.array(vals, np.int64), bits, signed)
    assert got.dtype == np.int64
    assert got.tolist() == [wrapped(v, bits, signed) for v in vals]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([8, 32, 64]), st.booleans(),
       st.lists(st.integers(-(2**80), 2**80), min_size=1, max_size=6))
def test_wrap_int_of_python_ints(bits: int, signed: bool, vals: list[int]) -> None:
    got = wrap_int(np.array(vals, dtype=object), bits, signed)
    assert got.dtype == (np.uint64 if bits == 64 and not signed else np.int64)
    assert [int(v) for v in got] == [wrapped(v, bits, signed) for v in vals]


def test_wrap_int_64_bit_reinterprets() -> None:
    assert wrap_int(np.array([-1], np.int64), 64, False).tolist() == [2**64 - 1]
    assert wrap_int(np.array([2**64 - 1], np.uint64), 64, True).tolist() == [-1]


# -- ULP ordering and NaN codes ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5"])
def test_ordered_codes_follow_the_values(name: str) -> None:
    f = pp.format(name)
    codes = np.arange(1 << f.bits, dtype=np.int64).astype(f.storage_dtype)
    with np.errstate(invalid="ignore"):
        values = codes.view(f.dtype).astype(np.float64)  # ml_dtypes / numpy decode: the oracle
    keep = ~np.isnan(values)
    pos = ordered_codes(codes[keep], f.bits, f.storage_shift)
    order = np.argsort(pos, kind="stable")
    assert (np.diff(values[keep][order]) >= 0).all()  # positions sort the values
    # neighbouring values are one step apart; only +0 and -0 share a position
    distinct = np.unique(pos)
    assert distinct.size == keep.sum() - 1
    assert (np.diff(distinct) == 1).all()


def test_ordered_codes_count_fp32r_steps() -> None:
    f = pp.format("fp32r")
    one = np.float32(1).view(np.uint32)
    nxt = one + (1 << f.storage_shift)
    neg = one | np.uint32(1 << 31)
    got = ordered_codes(np.array([one, nxt, neg], np.uint32), f.bits, f.storage_shift)
    assert got[1] - got[0] == 1 and got[2] == -got[0]


@pytest.mark.parametrize("name", ["bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5"])
def test_is_nan_code_matches_ml_dtypes(name: str) -> None:
    f = pp.format(name)
    codes = np.arange(1 << f.bits, dtype=np.int64).astype(f.storage_dtype)
    np.testing.assert_array_equal(is_nan_code(codes, f),
                                  np.isnan(codes.view(f.dtype).astype(np.float32)))


def test_is_nan_code_of_float32_bits() -> None:
    bits = np.array([0x7FC00000, 0xFF800001, 0x7F800000, 0], np.uint32)
    assert is_nan_code(bits).tolist() == [True, True, False, False]


# -- rounding to a format ----------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(width=32), min_size=1, max_size=16))
def test_round_to_format_is_ml_dtypes_rne(vals: list[float]) -> None:
    x = np.array(vals, np.float32)
    for name, dt in (("bf16", ml_dtypes.bfloat16), ("fp16", np.float16)):
        got = round_to_format(x, name, saturate=False)
        assert got.dtype == np.dtype(dt) and got.shape == x.shape
        with np.errstate(over="ignore"):
            want = x.astype(dt)
        np.testing.assert_array_equal(np.isnan(got.astype(np.float32)),
                                      np.isnan(want.astype(np.float32)))
        ok = ~np.isnan(want.astype(np.float32))
        np.testing.assert_array_equal(got[ok].view(np.uint16), want[ok].view(np.uint16))


def test_round_to_format_saturation_default_is_neurons() -> None:
    x = np.array([1e6, -1e6], np.float32)
    assert round_to_format(x, "fp8e4m3fn").astype(np.float32).tolist() == [448.0, -448.0]
    assert np.isnan(round_to_format(x, "fp8e4m3fn", saturate=False).astype(np.float32)).all()
    assert np.isinf(round_to_format(x, "fp16").astype(np.float32)).tolist() == [True, True]


def test_round_to_format_widens_narrow_sources_and_counts_bools() -> None:
    src = np.array([1.5, -2.25], ml_dtypes.bfloat16)
    assert round_to_format(src, "fp16").tolist() == [1.5, -2.25]
    assert round_to_format(np.array([True, False]), "fp8e5").astype(np.float32).tolist() == [1, 0]
    assert round_to_format(np.zeros((2, 3), np.float64), "bf16").shape == (2, 3)


def test_pe_matmul_c_route_equals_the_sequential_numpy_loop():
    """pe_matmul (the C core's dot, 2-D and batched) equals the sequential NumPy loop over k
    written here, on hard inputs (cancellation, ±0, inf, NaN, subnormals), bit for bit."""
    from pyprecision.kernel.numerics import pe_matmul

    rng = np.random.default_rng(7)
    for m, k, n in [(1, 1, 1), (3, 17, 5), (16, 300, 9), (2, 0, 3)]:
        a = (rng.standard_normal((m, k)) * 10.0 ** rng.integers(-40, 38, (m, k))).astype(np.float32)
        b = (rng.standard_normal((k, n)) * 10.0 ** rng.integers(-40, 38, (k, n))).astype(np.float32)
        if a.size:
            a.flat[:: 7] = -0.0
            a.flat[1:: 11] = np.inf
            b.flat[2:: 13] = np.nan
        c = pe_matmul(a, b)
        batched = pe_matmul(np.stack([b.T, b.T]), np.stack([a.T, a.T]))  # the general batch path
        loop = np.zeros((m, n), np.float32)
        with np.errstate(all="ignore"):
            for kk in range(k):
                loop = loop + a[:, kk:kk + 1] * b[kk:kk + 1, :]
        loop[np.isnan(loop)] = np.nan
        assert c.dtype == np.float32
        assert np.array_equal(c.view(np.uint32), loop.view(np.uint32))
        for t in batched:
            assert np.array_equal(t.T.view(np.uint32), loop.view(np.uint32))
