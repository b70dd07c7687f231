"""The other opcodes issue 12 adds to the evaluator, each against an independent reference:
scatter / gather, sort / TopK, reduce-precision, erf, popcnt / clz, map, custom-calls."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.emulate import run_hlo
from pyprecision.emulate.shared.misc_ops import erf64
from pyprecision.errors import EmulationError

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


def run(body: str, *args: np.ndarray, comps: str = "") -> list[np.ndarray]:
    return run_hlo(hlo.parse(f"HloModule m\n\n{comps}ENTRY e {{\n{body}\n}}\n"), list(args))


ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n\n"
SET = "set {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] copy(b)\n}\n\n"


# -- scatter / gather --------------------------------------------------------------------------

@SETTINGS
@given(st.lists(st.integers(-2, 6), min_size=1, max_size=8), st.integers(0, 2**31))
def test_row_scatter_add_matches_a_loop_and_drops_windows_out_of_bounds(rows, seed) -> None:
    r = np.random.RandomState(seed)
    x = r.randint(-5, 5, (5, 3)).astype(np.float32)
    u = r.randint(-5, 5, (len(rows), 3)).astype(np.float32)
    idx = np.array(rows, np.int32)[:, None]
    want = x.copy()
    for k, row in enumerate(rows):
        if 0 <= row < 5:
            want[row] += u[k]
    body = (f"  x = f32[5,3] parameter(0)\n  i = s32[{len(rows)},1] parameter(1)\n"
            f"  u = f32[{len(rows)},3] parameter(2)\n  ROOT s = f32[5,3] scatter(x, i, u), "
            "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, to_apply=add")
    (got,) = run(body, x, idx, u, comps=ADD)
    np.testing.assert_array_equal(got, want)


def test_scatter_updates_to_one_element_apply_in_index_order() -> None:
    body = ("  x = f32[3] parameter(0)\n  i = s32[4,1] parameter(1)\n  u = f32[4] parameter(2)\n"
            "  ROOT s = f32[3] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set")
    (got,) = run(body, np.zeros(3, np.float32), np.array([[1], [0], [1], [1]], np.int32),
                 np.array([5, 6, 7, 8], np.float32), comps=SET)
    np.testing.assert_array_equal(got, [6, 8, 0])  # the last update of element 1 wins


def test_scatter_window_partly_outside_is_skipped_whole() -> None:
    body = ("  x = f32[4] parameter(0)\n  i = s32[2,1] parameter(1)\n  u = f32[2,2] parameter(2)\n"
            "  ROOT s = f32[4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add")
    (got,) = run(body, np.zeros(4, np.float32), np.array([[3], [1]], np.int32),
                 np.array([[1, 1], [2, 3]], np.float32), comps=ADD)
    np.testing.assert_array_equal(got, [0, 2, 3, 0])  # the window at 3 would need index 4


def test_gather_clamps_starts_into_the_operand() -> None:
    body = ("  x = f32[5,2] parameter(0)\n  i = s32[3] parameter(1)\n"
            "  ROOT g = f32[3,2,2] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, "
            "start_index_map={0}, index_vector_dim=1, slice_sizes={2,2}")
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    (got,) = run(body, x, np.array([-4, 1, 9], np.int32))
    np.testing.assert_array_equal(got, [x[0:2], x[1:3], x[3:5]])


# -- sort / topk -----------------------------------------------------------------------------

LEX = """lex {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT
  eq = pred[] compare(a, b), direction=EQ
  gt2 = pred[] compare(c, d), direction=GT
  both = pred[] and(eq, gt2)
  ROOT r = pred[] or(lt, both)
}

"""


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-3, 3)), min_size=1, max_size=12))
def test_sort_with_a_two_key_comparator_is_a_stable_lexicographic_sort(pairs) -> None:
    k = np.array([p[0] for p in pairs], np.int32)
    v = np.array([p[1] for p in pairs], np.float32)
    n = len(pairs)
    body = (f"  k = s32[{n}] parameter(0)\n  v = f32[{n}] parameter(1)\n"
            f"  ROOT s = (s32[{n}], f32[{n}]) sort(k, v), dimensions={{0}}, is_stable=true, "
            "to_apply=lex")
    gk, gv = run(body, k, v, comps=LEX)
    order = sorted(range(n), key=lambda i: (k[i], -v[i], i))  # key asc, value desc, stable
    np.testing.assert_array_equal(gk, k[order])
    np.testing.assert_array_equal(gv, v[order])


def test_sort_descending_simple_comparator_is_stable() -> None:
    comps = ("gt {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  c = s32[] parameter(2)\n"
             "  d = s32[] parameter(3)\n  ROOT r = pred[] compare(a, b), direction=GT\n}\n\n")
    body = ("  k = s32[2,5] parameter(0)\n  i = s32[2,5] iota(), iota_dimension=1\n"
            "  ROOT s = (s32[2,5], s32[2,5]) sort(k, i), dimensions={1}, is_stable=true, "
            "to_apply=gt")
    k = np.array([[3, 1, 3, -2147483648, 2147483647], [0, 0, 1, 0, 1]], np.int32)
    gk, gi = run(body, k, comps=comps)
    np.testing.assert_array_equal(gk, [[2147483647, 3, 3, 1, -2147483648], [1, 1, 0, 0, 0]])
    np.testing.assert_array_equal(gi, [[4, 0, 2, 1, 3], [2, 4, 0, 1, 3]])


JAX_LT = """jax_lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  ne_a = pred[] compare(a, a), direction=NE
  eq_a = pred[] compare(a, zero), direction=EQ
  sa = f32[] select(eq_a, zero, a)
  ka = f32[] select(ne_a, nan, sa)
  ne_b = pred[] compare(b, b), direction=NE
  eq_b = pred[] compare(b, zero), direction=EQ
  sb = f32[] select(eq_b, zero, b)
  kb = f32[] select(ne_b, nan, sb)
  ROOT lt = pred[] compare(ka, kb), direction=LT, type=TOTALORDER
}

"""


def test_argsort_with_jax_comparator_is_a_key_sort_even_for_long_rows() -> None:
    n = 50_000  # pairwise evaluation would need 2.5e9 comparisons: the key path must be taken
    r = np.random.RandomState(0)
    x = r.randint(-50, 50, n).astype(np.float32)
    x[::97] = np.nan
    x[1::89] = -0.0
    body = (f"  x = f32[{n}] parameter(0)\n  i = s32[{n}] iota(), iota_dimension=0\n"
            f"  ROOT s = (f32[{n}], s32[{n}]) sort(x, i), dimensions={{0}}, is_stable=true, "
            "to_apply=jax_lt")
    _, idx = run(body, x, comps=JAX_LT)
    canon = np.where(x == 0, 0.0, x)  # -0 sorts with +0; NaN last (canonical positive NaN)
    want = np.argsort(canon, kind="stable")
    np.testing.assert_array_equal(idx, want)


@pytest.mark.parametrize("form", ["op", "custom-call"])
def test_topk_breaks_ties_by_lower_index_and_puts_nan_first(form) -> None:
    call = ("topk(x), k=3, largest=true" if form == "op"
            else 'custom-call(x), custom_call_target="TopK"')
    body = f"  x = f32[2,5] parameter(0)\n  ROOT t = (f32[2,3], s32[2,3]) {call}"
    x = np.array([[1, 4, 4, 2, np.nan], [0, -1, 0, 9, 0]], np.float32)
    vals, idx = run(body, x)
    np.testing.assert_array_equal(idx, [[4, 1, 2], [3, 0, 2]])
    np.testing.assert_array_equal(vals[1], [9, 0, 0])


# -- reduce-precision, erf, popcnt, clz, map ---------------------------------------------------

@SETTINGS
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=30))
def test_reduce_precision_8_7_is_bf16_rounding(values) -> None:
    x = np.array(values, np.float32)
    body = f"  x = f32[{len(values)}] parameter(0)\n  ROOT r = f32[{len(values)}] reduce-precision(x), " \
           "exponent_bits=8, mantissa_bits=7"
    (got,) = run(body, x)
    want = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    tiny = np.abs(x) < np.finfo(np.float32).tiny  # f32 subnormals: flushed by reduce-precision
    np.testing.assert_array_equal(got[~tiny], want[~tiny])


def test_reduce_precision_5_10_flushes_f16_subnormals_and_overflows_to_inf() -> None:
    x = np.array([1.0009766, 70000.0, 65504.0, 3e-5, 6.2e-5, -1e-7, np.nan, -np.inf], np.float32)
    body = "  x = f32[8] parameter(0)\n  ROOT r = f32[8] reduce-precision(x), exponent_bits=5, " \
           "mantissa_bits=10"
    (got,) = run(body, x)
    with np.errstate(over="ignore"):
        f16 = x.astype(np.float16).astype(np.float32)
    assert got[0] == f16[0] and got[1] == np.inf and got[2] == 65504.0
    assert got[3] == 0.0 and got[4] == f16[4] and got[5] == 0.0 and np.signbit(got[5])
    assert np.isnan(got[6]) and got[7] == -np.inf


def test_erf_in_float64_is_within_16_ulp_of_math_erf() -> None:
    x = np.concatenate([np.linspace(-7, 7, 2001), [0.0, -0.0, 1e-300, 2.9999, 3.0001]])
    want = np.array([math.erf(v) for v in x])
    got = erf64(x)
    assert (np.abs(got - want) <= 16 * np.spacing(np.abs(want)) + 1e-300).all()
    assert np.signbit(erf64(np.array([-0.0])))[0] and np.isnan(erf64(np.array([np.nan])))[0]


@pytest.mark.parametrize("t,dt,bits", [("s32", np.int32, 32), ("u8", np.uint8, 8),
                                       ("s64", np.int64, 64), ("s8", np.int8, 8)])
def test_popcnt_and_clz_count_bits_in_the_type_width(t, dt, bits) -> None:
    info = np.iinfo(dt)
    x = np.array([0, 1, info.max, info.min, 5, info.max // 3], dt)
    body = f"  x = {t}[6] parameter(0)\n  p = {t}[6] popcnt(x)\n  c = {t}[6] count-leading-zeros(x)\n" \
           f"  ROOT r = ({t}[6], {t}[6]) tuple(p, c)"
    pop, clz = run(body, x)
    raw = [int(v) & ((1 << bits) - 1) for v in x]
    np.testing.assert_array_equal(pop, [bin(v).count("1") for v in raw])
    np.testing.assert_array_equal(clz, [bits - v.bit_length() for v in raw])


def test_map_applies_its_computation_elementwise() -> None:
    comps = "f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  m = f32[] multiply(a, b)\n" \
            "  ROOT s = f32[] subtract(m, a)\n}\n\n"
    body = "  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n  ROOT r = f32[4] map(x, y), " \
           "dimensions={0}, to_apply=f"
    x, y = np.array([1, 2, 3, 4], np.float32), np.array([2, 2, 0, -1], np.float32)
    (got,) = run(body, x, y, comps=comps)
    np.testing.assert_array_equal(got, x * y - x)


def test_unknown_custom_call_target_is_one_error_naming_it() -> None:
    body = '  x = f32[4] parameter(0)\n  ROOT c = f32[4] custom-call(x), custom_call_target="lapack_x"'
    with pytest.raises(EmulationError, match=r"custom_call_target='lapack_x'.*known: Sharding"):
        run(body, np.zeros(4, np.float32))


def test_sharding_custom_call_is_the_identity() -> None:
    body = '  x = f32[4] parameter(0)\n  ROOT c = f32[4] custom-call(x), custom_call_target="Sharding"'
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(run(body, x)[0], x)


def test_rng_bit_generator_advances_the_counter_by_the_blocks_used() -> None:
    body = ("  s = u64[2] parameter(0)\n  ROOT r = (u64[2], u32[3,5]) rng-bit-generator(s), "
            "algorithm=rng_philox")
    state, bits = run(body, np.array([1, 2], np.uint64))
    np.testing.assert_array_equal(state, [1, 2 + 4])  # 15 words = 4 Philox blocks
    assert bits.dtype == np.uint32 and len(set(bits.ravel().tolist())) == 15
    state, bits = run(body.replace("rng_philox", "rng_three_fry"), np.array([1, 2], np.uint64))
    np.testing.assert_array_equal(state, [1, 2 + 9])  # halves of [3,5] split on the 5: 3x3 blocks
    with pytest.raises(EmulationError, match="algorithm=rng_xyz is not supported"):
        run(body.replace("rng_philox", "rng_xyz"), np.array([1, 2], np.uint64))


@pytest.mark.parametrize("body", [
    "  a = c64[2] parameter(0)\n  ROOT b = c64[2] add(a, a)",
    "  a = c64[2] parameter(0)\n  ROOT b = f32[2] real(a)",
])
def test_complex_types_are_one_clear_error(body) -> None:
    with pytest.raises(EmulationError, match=r"not supported for this element type|unsupported "
                                             r"opcode 'real'"):
        run(body, np.zeros(2, np.complex64))


def test_bitcast_convert_between_widths_splits_and_joins_the_minor_dimension() -> None:
    x = np.array([1.5, -2.0], np.float32)
    (b,) = run("  x = f32[2] parameter(0)\n  ROOT b = u8[2,4] bitcast-convert(x)", x)
    np.testing.assert_array_equal(b, [[0, 0, 192, 63], [0, 0, 0, 192]])  # XLA:CPU's bytes
    (w,) = run("  x = u16[2,2] parameter(0)\n  ROOT b = u32[2] bitcast-convert(x)",
               np.array([[1, 2], [3, 4]], np.uint16))
    np.testing.assert_array_equal(w, [131073, 262147])
