"""The IR evaluator's routes of decisions EM-11 and EM-12 equal the routes they replace, bit for bit.

EM-11: bf16 / fp16 ``add sub mul div`` (and ``sqrt square reciprocal``) of same-format operands are
computed in float32 and rounded once, instead of rounded once from the float64 result. Checked on
every code of the format against a stratified sample of codes (specials, subnormals, both ends of
the normal range, random codes) for the binary kinds, on every code for the unary ones, and by
hypothesis on random pairs.

EM-12: a 2-D product with an identity operand (the lowering's PE transpose) is worked out without
its sums, and the per-batch products are run as one batched C dot; both against ``pe_matmul`` on
matrices holding NaNs with payloads, ±inf, ±0 and subnormals."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.emulate.ir.numbers import round_to
from pyprecision.emulate.ir.ops import (
    binary_rounded,
    binary_values,
    matmul_batched,
    matmul_fp32,
    pe_identity,
    unary_float,
    unary_rounded,
)
from pyprecision.kernel import decode, pe_matmul

FORMATS = [(ir.bfloat16, "bf16"), (ir.float16, "fp16")]


def _all_values(fmt: str) -> np.ndarray:
    """Every 16-bit code of ``fmt`` decoded to float32 (NaN codes keep their payload)."""
    return np.asarray(decode(np.arange(1 << 16, dtype=np.uint16), fmt), dtype=np.float32)


def _sample_codes(rng: np.random.Generator) -> np.ndarray:
    special = [0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x007F, 0x0080, 0x03FF, 0x0400, 0x3F80,
               0xBF80, 0x3C00, 0xBC00, 0x7F7F, 0xFF7F, 0x7BFF, 0xFBFF, 0x7F80, 0xFF80, 0x7C00,
               0xFC00, 0x7FC0, 0xFFC1, 0x7E01, 0x7C01, 0x4000, 0x3800, 0x0100, 0x4B00]
    return np.concatenate([np.array(special), rng.integers(0, 1 << 16, 35)]).astype(np.uint16)


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
        x.view(np.uint8), y.view(np.uint8))


@pytest.mark.parametrize("dt,fmt", FORMATS, ids=["bf16", "fp16"])
@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div"])
def test_every_code_against_a_stratified_sample(dt, fmt: str, kind: str) -> None:
    """Every code x as the first operand against 64 sampled codes as the second, and the reverse."""
    rng = np.random.default_rng(11)
    every = _all_values(fmt)
    some = np.asarray(decode(_sample_codes(rng), fmt), dtype=np.float32)
    a = np.repeat(every, some.size)
    b = np.tile(some, every.size)
    for x, y in ((a, b), (b, a)):
        want = round_to(binary_values(kind, x, y, True), dt)
        got = binary_rounded(kind, x, y, True, dt, (dt, dt))
        bad = ~(np.asarray(got).view(np.uint16) == np.asarray(want).view(np.uint16))
        assert not bad.any(), (kind, fmt, x[bad][:4], y[bad][:4])


@pytest.mark.parametrize("dt,fmt", FORMATS, ids=["bf16", "fp16"])
@pytest.mark.parametrize("kind", ["sqrt", "square", "reciprocal"])
def test_every_code_of_the_unary_kinds(dt, fmt: str, kind: str) -> None:
    x = _all_values(fmt)
    want = round_to(unary_float(kind, x), dt)
    assert _same(unary_rounded(kind, x, dt, dt), want)


@pytest.mark.parametrize("dt,fmt", FORMATS, ids=["bf16", "fp16"])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_random_pairs(dt, fmt: str, data) -> None:
    codes = st.lists(st.integers(0, (1 << 16) - 1), min_size=1, max_size=256)
    ca = np.array(data.draw(codes), dtype=np.uint16)
    cb = np.array(data.draw(st.lists(st.integers(0, (1 << 16) - 1), min_size=ca.size,
                                     max_size=ca.size)), dtype=np.uint16)
    a = np.asarray(decode(ca, fmt), dtype=np.float32)
    b = np.asarray(decode(cb, fmt), dtype=np.float32)
    for kind in ("add", "sub", "mul", "div"):
        want = round_to(binary_values(kind, a, b, True), dt)
        assert _same(binary_rounded(kind, a, b, True, dt, (dt, dt)), want), kind


def test_mixed_operand_formats_keep_the_float64_route() -> None:
    """EM-11 applies only when both operands are of the result's format: an fp32 operand to a
    bf16 result is rounded once from its exact float64 value (a float32 sum would round twice)."""
    a = np.array([1.0], np.float32)
    b = np.array([2.0 ** -8 + 2.0 ** -30], np.float32)  # just above half a bf16 ulp of 1.0
    got = binary_rounded("add", a, b, True, ir.bfloat16, (ir.bfloat16, ir.float32))
    want = round_to(binary_values("add", a, b, True), ir.bfloat16)
    assert _same(got, want)
    assert float(np.asarray(want, np.float32)[0]) == 1.0 + 2.0 ** -7
    # the float32 sum is the tie 1 + 2^-8, which a second rounding would take to 1.0
    assert float(np.asarray(round_to(a + b, ir.bfloat16), np.float32)[0]) == 1.0


SPECIAL32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00123, 0x7F800001,
             0x00000001, 0x80000001, 0x007FFFFF, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x40490FDB]


def matrices(k: int, c: int) -> st.SearchStrategy[np.ndarray]:
    """k x c float32 matrices of specials (NaN payloads, ±inf, ±0, subnormals), random normal
    words and small floats."""
    word = st.one_of(
        st.sampled_from(SPECIAL32),
        st.tuples(st.integers(0, 1), st.integers(1, 254), st.integers(0, (1 << 23) - 1)).map(
            lambda t: t[0] << 31 | t[1] << 23 | t[2]),
        st.floats(-4, 4, width=32).map(lambda f: int(np.float32(f).view(np.uint32))))
    return st.lists(word, min_size=k * c, max_size=k * c).map(
        lambda w: np.array(w, dtype=np.uint32).view(np.float32).reshape(k, c))


def _identity(n: int, negative_zeros: bool) -> np.ndarray:
    i = np.eye(n, dtype=np.float32)
    if negative_zeros:
        i[i == 0] = -0.0
    return i


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_pe_transpose_equals_the_dot(data) -> None:
    k = data.draw(st.integers(1, 9))
    c = data.draw(st.integers(1, 9))
    y = data.draw(matrices(k, c))
    eye = _identity(k, data.draw(st.booleans()))
    # matmul_fp32(s, m) is s.T @ m on the PE: identity as m (the transpose) and as s
    want_t = pe_matmul(y.T, eye).astype(np.float32)
    want_i = pe_matmul(eye.T, y).astype(np.float32)
    assert _same(np.ascontiguousarray(matmul_fp32(y, eye)), want_t)
    assert _same(np.ascontiguousarray(matmul_fp32(eye, y)), want_i)
    assert _same(np.ascontiguousarray(pe_identity(y)), want_i)


def test_a_near_identity_is_not_taken_for_one() -> None:
    y = np.arange(12, dtype=np.float32).reshape(3, 4)
    for bad in (np.eye(3, dtype=np.float32) * 2, np.eye(3, dtype=np.float32) + 1e-30):
        want = pe_matmul(bad.T, y).astype(np.float32)
        assert _same(np.ascontiguousarray(matmul_fp32(bad, y)), want)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_batched_products_equal_each_product(data) -> None:
    b = data.draw(st.integers(1, 5))
    k, m, n = (data.draw(st.integers(1, 7)) for _ in range(3))
    ss = [data.draw(matrices(k, m)) for _ in range(b)]
    shared = data.draw(st.booleans())
    ms = ([data.draw(matrices(k, n))] * b if shared else
          [data.draw(matrices(k, n)) for _ in range(b)])
    got = matmul_batched(ss, ms)
    for i in range(b):
        assert _same(got[i], pe_matmul(ss[i].T, ms[i]).astype(np.float32)), i


# -- EM-13: satinf of a finite value of its own dtype returns it ---------------------------------

_SATINF_DTYPES = ["float32", "bfloat16", "float16", "float8e4", "float8e4m3fn", "float8e5", "fp32r"]


@pytest.mark.parametrize("name", _SATINF_DTYPES)
@pytest.mark.parametrize("special", [None, np.inf, -np.inf, np.nan])
def test_satinf_shortcut_equals_the_general_route(name, special):
    """4096 values of ``name`` (float32 normals over 2^-30..2^30 rounded to it, so zeros,
    subnormals and max too), alone and with a special lane: the shortcut's bits equal the general
    route's (which ``src=None`` forces)."""
    from pyprecision import ir as _ir
    from pyprecision.emulate.ir.eval import saturate_inf
    from pyprecision.emulate.ir.numbers import round_to

    dt = _ir.as_dtype(name)
    rng = np.random.default_rng(13)
    raw = rng.standard_normal(4096).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 30, 4096)
    with np.errstate(over="ignore", invalid="ignore"):
        x = round_to(raw.astype(np.float64), dt)
    x = x[np.isfinite(x)]
    if special is not None:
        x = np.concatenate([x, np.array([special], np.float32)])
    want = saturate_inf(x, dt, None)
    got = saturate_inf(x, dt, dt)
    assert got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


_SELECT = """func @main {{
  tensor @p : input uint8[{n}]
  tensor @a : input {t}[{n}]
  tensor @b : input {t}[{n}]
  tensor @y : output {t}[{n}]
^bb0:
  %p = affine_load @p : uint8[{n}]
  %a = affine_load @a : {t}[{n}]
  %b = affine_load @b : {t}[{n}]
  %s = select %p, %a, %b : {t}[{n}]
  affine_store %s, @y
}}
"""


@pytest.mark.parametrize("name", ["float32", "bfloat16", "float16", "float8e4m3fn", "float8e5"])
@pytest.mark.parametrize("special", [None, np.inf, -np.inf, np.nan, "snan"])
def test_select_of_same_dtype_operands_equals_the_rounded_route(name, special):
    """EM-13's select: the selected lanes as they are where that is exact, else the float64
    route rounded to the dtype — the bits of ``round_to(where(p, a, b) in float64, dtype)``, the
    route every select took before, with a signalling NaN, ±inf, ±0 and subnormals among them."""
    from pyprecision.emulate.ir.eval import run_ir

    dt = ir.as_dtype(name)
    rng = np.random.default_rng(14)
    n = 512
    raw = rng.standard_normal(2 * n).astype(np.float32) * np.float32(2.0) ** rng.integers(-20, 20, 2 * n)
    raw[:4] = [0.0, -0.0, 2.0**-140, -(2.0**-20)]
    if special == "snan":
        raw.view(np.uint32)[7] = 0x7FA00001
    elif special is not None:
        raw[7] = special
    with np.errstate(over="ignore", invalid="ignore"):
        vals = round_to(raw.astype(np.float64), dt)
    if special == "snan" and name == "float32":
        vals.view(np.uint32)[7] = 0x7FA00001  # a float32 input keeps its signalling NaN
    a, b = vals[:n], vals[n:]
    p = (rng.integers(0, 2, n) * rng.integers(1, 255, n)).astype(np.uint8)
    p[7] = 1
    store = dt.np_dtype
    ins = {"p": p, "a": a.astype(store), "b": b.astype(store)}
    if name == "float32":
        ins["a"], ins["b"] = a.copy(), b.copy()
    got = np.asarray(run_ir(ir.parse(_SELECT.format(n=n, t=name)), ins)["y"]).astype(np.float32)
    with np.errstate(invalid="ignore"):
        av = np.asarray(ins["a"]).astype(np.float64)
        bv = np.asarray(ins["b"]).astype(np.float64)
    want = round_to(np.where(p != 0, av, bv), dt)
    assert np.array_equal(got.view(np.uint32), np.asarray(want, np.float32).view(np.uint32))


@pytest.mark.parametrize("name", ["bfloat16", "float16", "float8e5"])
def test_select_of_infinite_values_stored_without_saturation(name):
    """A ±inf value that reached memory unsaturated (an fp8e5 input holding the inf code): a
    select of it gives what the float64 route gives — ±inf where the dtype's rounding keeps it
    (bf16, fp16), ±max where it saturates (fp8e5, EM-14)."""
    import ml_dtypes

    from pyprecision.emulate.ir.eval import run_ir

    dt = ir.as_dtype(name)
    n = 8
    store = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
             "float8e5": ml_dtypes.float8_e5m2}[name]
    a = np.array([np.inf, -np.inf, 1.0, -0.0, 2.0, np.inf, 0.5, -1.0], np.float32).astype(store)
    b = np.array([0.25, 3.0, -np.inf, np.inf, 1.5, -2.0, -np.inf, 4.0], np.float32).astype(store)
    p = np.array([1, 1, 0, 0, 1, 0, 0, 1], np.uint8)
    got = np.asarray(run_ir(ir.parse(_SELECT.format(n=n, t=name)), {"p": p, "a": a, "b": b})["y"])
    with np.errstate(invalid="ignore"):
        want = round_to(np.where(p != 0, a.astype(np.float64), b.astype(np.float64)), dt)
    assert np.array_equal(got.astype(np.float32).view(np.uint32), want.view(np.uint32))
    assert np.isinf(want).any() == (name != "float8e5")


# -- EM-19: the fp8 formats take EM-11's float32 route (and the chain's fp8 roundings) ----------

FP8 = [(ir.float8e4, "fp8e4"), (ir.float8e4m3fn, "fp8e4m3fn"), (ir.float8_e5m2, "fp8e5")]


def _fp8_pairs(fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of the format's 256 codes as float32 values (NaN codes included)."""
    every = np.asarray(decode(np.arange(256, dtype=np.uint8), fmt), dtype=np.float32)
    return np.repeat(every, 256), np.tile(every, 256)


@pytest.mark.parametrize("dt,fmt", FP8, ids=[f for _, f in FP8])
@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div", "max", "min"])
def test_every_pair_of_fp8_codes(dt, fmt: str, kind: str) -> None:
    """The float32 route on all 65 536 pairs is the float64 route: every float32 result of two fp8
    values is normal (or exact), so 24 >= 2p + 2 applies; ±inf (x / 0, an inf code) saturates to
    ±max alike. The chain (float32 operation, then its saturating fp8 rounding) gives the same
    bits on every pair whose result is not a NaN (where it hands the block back)."""
    from pyprecision.kernel.chain import Program

    a, b = _fp8_pairs(fmt)
    want = np.asarray(round_to(binary_values(kind, a, b, True), dt))
    assert _same(binary_rounded(kind, a, b, True, dt, (dt, dt)), want)
    ok = ~(np.isnan(a) | np.isnan(b) | np.isnan(want))
    prog = Program([(kind, 2, 0, 1), (f"round_{fmt}", 2, 2)], 3, 2, [(2, np.float32)])
    got = prog([a[ok], b[ok]], int(ok.sum()))
    assert got is not None
    assert _same(got[0], want[ok])


@pytest.mark.parametrize("dt,fmt", FP8, ids=[f for _, f in FP8])
@pytest.mark.parametrize("kind", ["sqrt", "square", "reciprocal"])
def test_every_fp8_code_of_the_unary_kinds(dt, fmt: str, kind: str) -> None:
    x = np.asarray(decode(np.arange(256, dtype=np.uint8), fmt), dtype=np.float32)
    want = round_to(unary_float(kind, x), dt)
    assert _same(unary_rounded(kind, x, dt, dt), want)


_FOLD_FORMATS = [(ir.bfloat16, "bf16"), (ir.float16, "fp16"), (ir.float8e4, "fp8e4"),
                 (ir.float8e4m3fn, "fp8e4m3fn"), (ir.float8_e5m2, "fp8e5")]


@pytest.mark.parametrize("dt,fmt", _FOLD_FORMATS, ids=[f for _, f in _FOLD_FORMATS])
@pytest.mark.parametrize("kind", ["add", "mul"])
def test_one_step_of_the_rounded_fold_on_every_pair(dt, fmt: str, kind: str) -> None:
    """One step of ``kernel.fold_f32(..., rounding=fmt)`` (EM-21) on every pair of codes (fp8s: all
    65 536; bf16 / fp16: every code against the stratified sample, both orders): the exact result
    rounded once to the format. Pairs with a NaN operand or result are left out, since the fold
    declines them, and a fold given one of them declines (None)."""
    from pyprecision.kernel import fold_f32

    if dt.bits == 8:
        every = np.asarray(decode(np.arange(256, dtype=np.uint8), fmt), dtype=np.float32)
        a, b = np.repeat(every, 256), np.tile(every, 256)
    else:
        every = _all_values(fmt)
        some = np.asarray(decode(_sample_codes(np.random.default_rng(11)), fmt), np.float32)
        a = np.concatenate([np.repeat(every, some.size), np.tile(some, every.size)])
        b = np.concatenate([np.tile(some, every.size), np.repeat(every, some.size)])
    want = np.asarray(round_to(binary_values(kind, a, b, True), dt), np.float32)
    ok = ~(np.isnan(a) | np.isnan(b) | np.isnan(want))
    got = fold_f32(kind, b[ok][:, None], a[ok], rounding=fmt)
    assert got is not None
    assert _same(got, want[ok]), (kind, fmt)
    bad = np.flatnonzero(~ok)[:1]
    assert fold_f32(kind, b[bad][:, None], a[bad], rounding=fmt) is None
