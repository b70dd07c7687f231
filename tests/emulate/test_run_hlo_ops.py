"""run_hlo on small hand-written modules: input checks, errors, and the numeric rules of
docs/decisions/hlo-eval.md (per-op rounding, sequential f32 dots and reduces, XLA integer and
convert semantics). Expected values are worked out by hand in the comments."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.emulate import run_hlo
from pyprecision.errors import EmulationError

BF16 = ml_dtypes.bfloat16


def run(body: str, *args: object, comps: str = "") -> list[np.ndarray]:
    text = f"HloModule m\n\n{comps}ENTRY main {{\n{body}\n}}\n"
    return run_hlo(hlo.parse(text), list(args))  # type: ignore[arg-type]


# -- inputs and errors -----------------------------------------------------------------------
ADD = """  a = f32[2]{0} parameter(0)
  b = f32[2]{0} parameter(1)
  ROOT c = f32[2]{0} add(a, b)"""


def test_input_count_mismatch() -> None:
    with pytest.raises(EmulationError, match=r"takes 2 parameter\(s\), got 1 input"):
        run(ADD, np.zeros(2, np.float32))


def test_input_shape_mismatch() -> None:
    with pytest.raises(EmulationError, match=r"parameter 1 \(b\): expected shape f32\[2\]"):
        run(ADD, np.zeros(2, np.float32), np.zeros(3, np.float32))


def test_input_dtype_mismatch() -> None:
    with pytest.raises(EmulationError, match=r"parameter 0 \(a\): expected f32\[2\] \(float32\), "
                                             r"got dtype float64"):
        run(ADD, np.zeros(2, np.float64), np.zeros(2, np.float32))


def test_bf16_input_must_be_ml_dtypes() -> None:
    body = "  ROOT a = bf16[2]{0} parameter(0)"
    with pytest.raises(EmulationError, match=r"bfloat16"):
        run(body, np.zeros(2, np.uint16))
    (out,) = run(body, np.array([1.5, -2], BF16))
    assert out.dtype == BF16


def test_s4_input_range_checked() -> None:
    body = "  ROOT a = s4[2]{0} parameter(0)"
    with pytest.raises(EmulationError, match=r"\[-8, 7\]"):
        run(body, np.array([3, 9], np.int8))


def test_unknown_opcode_names_opcode_and_instruction() -> None:
    body = """  a = f32[2,2]{1,0} parameter(0)
  ROOT s = f32[2,2]{1,0} cholesky(a), lower=true"""
    with pytest.raises(EmulationError, match=r"unsupported opcode 'cholesky' in instruction s"):
        run(body, np.zeros((2, 2), np.float32))


def test_tuple_parameter_and_nested_tuple_result_flatten_in_order() -> None:
    body = """  p = (f32[2]{0}, s32[]) parameter(0)
  x = f32[2]{0} get-tuple-element(p), index=0
  i = s32[] get-tuple-element(p), index=1
  inner = (s32[], f32[2]{0}) tuple(i, x)
  ROOT t = (f32[2]{0}, (s32[], f32[2]{0}), s32[]) tuple(x, inner, i)"""
    x, i = np.array([1, 2], np.float32), np.array(7, np.int32)
    out = run(body, (x, i))
    assert [o.tolist() for o in out] == [[1, 2], 7, [1, 2], 7]
    with pytest.raises(EmulationError, match=r"expected a tuple of 2 arrays"):
        run(body, x)


# -- rounding of every result ------------------------------------------------------------------

def test_bf16_chain_rounds_after_every_op() -> None:
    # 1 + 2^-9 rounds back to 1 in bf16 (ulp 2^-7), three times: 1. Without per-op rounding
    # the f32 sum 1 + 3·2^-9 would round to 1 + 2^-7.
    body = """  a = bf16[] parameter(0)
  d = bf16[] parameter(1)
  s1 = bf16[] add(a, d)
  s2 = bf16[] add(s1, d)
  ROOT s3 = bf16[] add(s2, d)"""
    (out,) = run(body, np.array(1, BF16), np.array(2.0 ** -9, BF16))
    assert float(out) == 1.0


def test_f64_to_bf16_convert_rounds_once() -> None:
    # 1 + 2^-8 + 2^-40 is just above the bf16 tie: once → 1 + 2^-7; via f32 (1 + 2^-8, a tie
    # that goes to even) it would be 1.
    body = """  a = f64[] parameter(0)
  ROOT c = bf16[] convert(a)"""
    (out,) = run(body, np.array(1 + 2.0 ** -8 + 2.0 ** -40))
    assert float(out) == 1 + 2.0 ** -7


def test_s32_to_bf16_convert_rounds_once() -> None:
    # 2^24 + 2^16 + 1 is above the bf16 half-ulp (2^16): once → 2^24 + 2^17. Through f32 it
    # would first become 2^24 + 2^16 (tie to even), then tie to even again → 2^24.
    body = """  a = s32[] parameter(0)
  ROOT c = bf16[] convert(a)"""
    (out,) = run(body, np.array(2 ** 24 + 2 ** 16 + 1, np.int32))
    assert float(out) == 2 ** 24 + 2 ** 17


def test_fp8_converts_do_not_saturate() -> None:
    # XLA's convert: f8e4m3fn has no inf, overflow → NaN; f8e5m2 overflow → inf
    body = """  a = f32[3]{0} parameter(0)
  e4 = f8e4m3fn[3]{0} convert(a)
  e5 = f8e5m2[3]{0} convert(a)
  ROOT t = (f8e4m3fn[3]{0}, f8e5m2[3]{0}) tuple(e4, e5)"""
    e4, e5 = run(body, np.array([1000, 1e6, 0.3], np.float32))
    assert e4.dtype == ml_dtypes.float8_e4m3fn and e5.dtype == ml_dtypes.float8_e5m2
    assert np.isnan(float(e4[0])) and np.isnan(float(e4[1])) and float(e4[2]) == 0.3125
    assert float(e5[1]) == np.inf and float(e5[0]) == 1024.0 and float(e5[2]) == 0.3125


def test_float_to_int_convert_truncates_saturates_nan_to_zero() -> None:
    body = """  a = f32[6]{0} parameter(0)
  i = s32[6]{0} convert(a)
  u = u8[6]{0} convert(a)
  ROOT t = (s32[6]{0}, u8[6]{0}) tuple(i, u)"""
    i, u = run(body, np.array([-2.7, 2.7, np.nan, 3e9, -np.inf, 300], np.float32))
    assert i.tolist() == [-2, 2, 0, 2147483647, -2147483648, 300]
    assert u.tolist() == [0, 2, 0, 255, 0, 255]


# -- integers ------------------------------------------------------------------------------------

def test_integer_wraparound_division_remainder() -> None:
    body = """  a = s32[4]{0} parameter(0)
  b = s32[4]{0} parameter(1)
  s = s32[4]{0} add(a, b)
  q = s32[4]{0} divide(a, b)
  r = s32[4]{0} remainder(a, b)
  ROOT t = (s32[4]{0}, s32[4]{0}, s32[4]{0}) tuple(s, q, r)"""
    mn = -2 ** 31
    a = np.array([2 ** 31 - 1, mn, -7, 5], np.int32)
    b = np.array([1, -1, 2, 0], np.int32)
    s, q, r = run(body, a, b)
    assert s.tolist() == [mn, 2 ** 31 - 1, -5, 5]     # both ends wrap around
    assert q.tolist() == [2 ** 31 - 1, mn, -3, -1]   # truncation; INT_MIN/-1 = INT_MIN; x/0 = -1
    assert r.tolist() == [0, 0, -1, 5]               # sign of dividend; x%0 = x


def test_unsigned_divide_by_zero_and_shifts() -> None:
    body = """  a = u32[3]{0} parameter(0)
  b = u32[3]{0} parameter(1)
  q = u32[3]{0} divide(a, b)
  l = u32[3]{0} shift-left(a, b)
  ROOT t = (u32[3]{0}, u32[3]{0}) tuple(q, l)"""
    q, sl = run(body, np.array([7, 1, 3], np.uint32), np.array([0, 31, 32], np.uint32))
    assert q.tolist() == [0xFFFFFFFF, 0, 0]
    assert sl.tolist() == [7, 0x80000000, 0]         # shift by >= width gives 0


def test_s4_arithmetic_wraps_in_four_bits() -> None:
    body = """  a = s4[3]{0} parameter(0)
  b = s4[3]{0} parameter(1)
  ROOT c = s4[3]{0} add(a, b)"""
    (out,) = run(body, np.array([7, -8, 3], np.int8), np.array([1, -1, 2], np.int8))
    assert out.dtype == np.int8 and out.tolist() == [-8, 7, 5]


# -- dots ----------------------------------------------------------------------------------------

def test_f32_dot_accumulates_sequentially_without_fma() -> None:
    # k order: 1e8 + 1 = 1e8 (f32), - 1e8 = 0, + 1 = 1; an exact or pairwise sum would differ
    body = """  a = f32[1,4]{1,0} parameter(0)
  b = f32[4,1]{1,0} parameter(1)
  ROOT d = f32[1,1]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""
    (out,) = run(body, np.array([[1e8, 1, -1e8, 1]], np.float32), np.ones((4, 1), np.float32))
    assert out.tolist() == [[1.0]]


def test_bf16_dot_is_f32_dot_rounded_once() -> None:
    # (1+2^-7)^2 - (1+2^-7) = 2^-7 + 2^-14 exactly in f32, representable in bf16; rounding the
    # product to bf16 first would lose the 2^-14.
    body = """  a = bf16[1,2]{1,0} parameter(0)
  b = bf16[2,1]{1,0} parameter(1)
  ROOT d = bf16[1,1]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""
    v = 1 + 2.0 ** -7
    (out,) = run(body, np.array([[v, v]], BF16), np.array([[v], [-1]], BF16))
    assert float(out[0, 0]) == 2.0 ** -7 + 2.0 ** -14


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_dot_general_dimension_numbers_match_einsum(seed: int) -> None:
    # lhs [b=2, k=4, m=3], rhs [n=5, b=2, k=4]: 'bkm,nbk->bmn'
    body = """  a = s32[2,4,3]{2,1,0} parameter(0)
  b = s32[5,2,4]{2,1,0} parameter(1)
  ROOT d = s32[2,3,5]{2,1,0} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={1}, rhs_contracting_dims={2}"""
    r = np.random.default_rng(seed)
    a = r.integers(-2 ** 31, 2 ** 31, (2, 4, 3)).astype(np.int32)
    b = r.integers(-2 ** 31, 2 ** 31, (5, 2, 4)).astype(np.int32)
    (out,) = run(body, a, b)
    want = np.einsum("bkm,nbk->bmn", a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(out, want)  # exact, wrapped once to s32


# -- reduce, while, call, shape ops ------------------------------------------------------------

REDUCER = """add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

"""


def test_reduce_is_sequential_from_init() -> None:
    # init 0: 0 + 1e8 + 1 (lost) - 1e8 + 1 = 1, per row; a pairwise sum gives 0
    body = """  a = f32[2,4]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2]{0} reduce(a, z), dimensions={1}, to_apply=add_f32"""
    row = [1e8, 1, -1e8, 1]
    (out,) = run(body, np.array([row, row], np.float32), comps=REDUCER)
    assert out.tolist() == [1.0, 1.0]


def test_while_counts_and_call() -> None:
    comps = """cond {
  p = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}

twice {
  v = f32[] parameter(0)
  ROOT m = f32[] add(v, v)
}

body {
  p = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[] call(v), to_apply=twice
  ROOT t = (s32[], f32[]) tuple(j, w)
}

"""
    body = """  v = f32[] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[]) tuple(z, v)
  ROOT w = (s32[], f32[]) while(init), condition=cond, body=body"""
    i, v = run(body, np.array(1.5, np.float32), comps=comps)
    assert int(i) == 5 and float(v) == 1.5 * 32


def test_shape_ops() -> None:
    body = """  a = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{1,0} transpose(a), dimensions={1,0}
  r = f32[6]{0} reshape(a)
  s = f32[2,2]{1,0} slice(a), slice={[0:2], [0:3:2]}
  c = f32[4,3]{1,0} concatenate(a, a), dimensions={0}
  b = f32[2,4,3]{2,1,0} broadcast(a), dimensions={0,2}
  i = s32[2,3]{1,0} iota(), iota_dimension=1
  zero = f32[] constant(0)
  p = f32[2,6]{1,0} pad(a, zero), padding=0_0x1_0_1
  v = f32[2,3]{1,0} reverse(a), dimensions={1}
  ROOT out = (f32[3,2]{1,0}, f32[6]{0}, f32[2,2]{1,0}, f32[4,3]{1,0}, f32[2,4,3]{2,1,0}, s32[2,3]{1,0}, f32[2,6]{1,0}, f32[2,3]{1,0}) tuple(t, r, s, c, b, i, p, v)"""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t, r, s, c, b, i, p, v = run(body, a)
    assert t.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert r.tolist() == [0, 1, 2, 3, 4, 5]
    assert s.tolist() == [[0, 2], [3, 5]]
    assert c.tolist() == [[0, 1, 2], [3, 4, 5], [0, 1, 2], [3, 4, 5]]
    assert b[:, 2, :].tolist() == [[0, 1, 2], [3, 4, 5]] and b.shape == (2, 4, 3)
    assert i.tolist() == [[0, 1, 2], [0, 1, 2]]
    assert p.tolist() == [[0, 0, 0, 1, 0, 2], [0, 3, 0, 4, 0, 5]]  # low 1, interior 1
    assert v.tolist() == [[2, 1, 0], [5, 4, 3]]


def test_compare_select_with_nan() -> None:
    body = """  a = f32[3]{0} parameter(0)
  b = f32[3]{0} parameter(1)
  lt = pred[3]{0} compare(a, b), direction=LT
  ne = pred[3]{0} compare(a, b), direction=NE
  m = f32[3]{0} maximum(a, b)
  s = f32[3]{0} select(lt, a, b)
  ROOT t = (pred[3]{0}, pred[3]{0}, f32[3]{0}, f32[3]{0}) tuple(lt, ne, m, s)"""
    lt, ne, m, s = run(body, np.array([1, np.nan, 3], np.float32),
                       np.array([2, 0, 3], np.float32))
    assert lt.tolist() == [True, False, False] and ne.tolist() == [True, True, False]
    assert m[0] == 2 and np.isnan(m[1]) and m[2] == 3    # maximum propagates NaN
    assert s.tolist() == [1, 0, 3]


def test_batch_norm_inference() -> None:
    body = """  x = f32[2,2]{1,0} parameter(0)
  s = f32[2]{0} constant({2, 1})
  o = f32[2]{0} constant({0, 10})
  m = f32[2]{0} constant({1, 0})
  v = f32[2]{0} constant({3.999, 0.999})
  ROOT y = f32[2,2]{1,0} batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1"""
    (y,) = run(body, np.array([[3, 2], [-1, -2]], np.float32))
    # feature 0: 2*(x-1)/2 → [2, -2]; feature 1: (x-0)/1 + 10 → [12, 8] (within f32 rounding of
    # epsilon = 0.001f)
    np.testing.assert_allclose(y, [[2, 12], [-2, 8]], rtol=1e-6)


def test_fp8_e5m2_operands_widen_exactly() -> None:
    # ml_dtypes gives float8_e5m2 dtype kind 'f' (the other fp8 types 'V'): same treatment
    body = """  a = f8e5m2[3]{0} parameter(0)
  i = s32[3]{0} convert(a)
  f = f32[3]{0} convert(a)
  s = f8e5m2[3]{0} add(a, a)
  ROOT t = (s32[3]{0}, f32[3]{0}, f8e5m2[3]{0}) tuple(i, f, s)"""
    i, f, s = run(body, np.array([1.5, -3.5, 57344], ml_dtypes.float8_e5m2))
    assert i.tolist() == [1, -3, 57344] and f.tolist() == [1.5, -3.5, 57344]
    assert s.dtype == ml_dtypes.float8_e5m2
    assert [float(v) for v in s] == [3.0, -7.0, np.inf]   # 114688 overflows e5m2 to inf


def test_conditional_pred_and_index_forms() -> None:
    comps = """neg {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}

dbl {
  p = f32[] parameter(0)
  ROOT d = f32[] add(p, p)
}

"""
    body = """  c = pred[] parameter(0)
  k = s32[] parameter(1)
  x = f32[] parameter(2)
  a = f32[] conditional(c, x, x), true_computation=dbl, false_computation=neg
  b = f32[] conditional(k, x, x), branch_computations={neg, dbl}
  ROOT t = (f32[], f32[]) tuple(a, b)"""
    x = np.array(3, np.float32)
    for c, k, want in ((True, 0, [6, -3]), (False, 1, [-3, 6]), (False, 7, [-3, 6]),
                       (True, -1, [6, 6])):   # an index out of range takes the last branch
        got = run(body, np.array(c), np.array(k, np.int32), x, comps=comps)
        assert [float(g) for g in got] == want


def _reduce_module(t: str, op: str, n: int, decoy: bool) -> str:
    # decoy: an unused constant in the reducer, which forces the general (per-element) path
    extra = f"  z = {t}[] constant(0)\n" if decoy else ""
    return f"""HloModule m

red {{
  x = {t}[] parameter(0)
  y = {t}[] parameter(1)
{extra}  ROOT r = {t}[] {op}(y, x)
}}

ENTRY main {{
  a = {t}[3,{n}]{{1,0}} parameter(0)
  i = {t}[] parameter(1)
  ROOT r = {t}[3]{{0}} reduce(a, i), dimensions={{1}}, to_apply=red
}}
"""


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([("f32", "add"), ("f32", "multiply"), ("f32", "maximum"),
                        ("f64", "add"), ("s32", "add"), ("s32", "multiply"), ("u8", "add"),
                        ("s32", "minimum"), ("s32", "and"), ("pred", "or"), ("bf16", "add"),
                        ("bf16", "maximum")]),
       st.integers(1, 40), st.integers(0, 2 ** 32 - 1))
def test_reduce_fast_paths_equal_the_sequential_fold(kind: tuple[str, str], n: int,
                                                     seed: int) -> None:
    t, op = kind
    r = np.random.default_rng(seed)
    dt = hlo.numpy_dtype(hlo.parse_shape(f"{t}[]").element_type)
    if t == "pred":
        a, i = r.integers(0, 2, (3, n)).astype(bool), np.array(False)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = r.integers(info.min, info.max, (3, n), endpoint=True).astype(dt)
        i = np.array(r.integers(info.min, info.max, endpoint=True)).astype(dt)
    else:
        scale = 1.1 if op == "multiply" else 1e4
        a = (r.standard_normal((3, n)) * scale).astype(np.float32).astype(dt)
        i = np.array(r.standard_normal()).astype(np.float32).astype(dt)
    fast = run_hlo(hlo.parse(_reduce_module(t, op, n, decoy=False)), [a, i])[0]
    slow = run_hlo(hlo.parse(_reduce_module(t, op, n, decoy=True)), [a, i])[0]
    assert fast.dtype == slow.dtype
    np.testing.assert_array_equal(fast.view(np.uint8), slow.view(np.uint8))


_ML_TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16,
             "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(_ML_TYPES)), st.sampled_from(["add", "subtract", "multiply",
                                                              "divide"]),
       st.integers(0, 2 ** 32 - 1))
def test_low_precision_arithmetic_matches_ml_dtypes(t: str, op: str, seed: int) -> None:
    # ml_dtypes (and numpy's float16) compute in f32 and round to nearest even, overflowing to
    # inf (NaN for f8e4m3fn) — the same rule as the evaluator's per-op rounding, independently
    # implemented
    dt = _ML_TYPES[t]
    r = np.random.default_rng(seed)
    a = (r.standard_normal(64) * 10 ** r.uniform(-3, 4, 64)).astype(np.float32).astype(dt)
    b = (r.standard_normal(64) * 10 ** r.uniform(-3, 4, 64)).astype(np.float32).astype(dt)
    body = f"""  a = {t}[64]{{0}} parameter(0)
  b = {t}[64]{{0}} parameter(1)
  ROOT c = {t}[64]{{0}} {op}(a, b)"""
    (got,) = run(body, a, b)
    fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}[op]
    with np.errstate(all="ignore"):
        want = fn(a.astype(np.float32), b.astype(np.float32)).astype(dt)
    assert got.dtype == want.dtype
    g, w = got.astype(np.float32), want.astype(np.float32)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])


def test_compare_totalorder() -> None:
    # XLA's total order: -NaN < -inf < -1 < -0 < +0 < 1 < inf < NaN
    body = """  a = f32[4]{0} parameter(0)
  b = f32[4]{0} parameter(1)
  ROOT lt = pred[4]{0} compare(a, b), direction=LT, type=TOTALORDER"""
    a = np.array([-0.0, 1, np.inf, -np.nan], np.float32)
    b = np.array([0.0, np.nan, np.nan, -np.inf], np.float32)
    (lt,) = run(body, a, b)
    assert lt.tolist() == [True, True, True, True]
    (gt,) = run(body, b, a)
    assert gt.tolist() == [False, False, False, False]
