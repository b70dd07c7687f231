"""The IR evaluator's float32 fast paths (decision EM-10) equal the float64 route they replace,
bit for bit, on adversarial float32 bit patterns: NaNs with payloads (quiet and signalling, both
signs), ±inf, ±0, subnormals, the extremes of the normal range and random words."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.emulate.ir.numbers import round_to
from pyprecision.emulate.ir.ops import binary_rounded, binary_values, unary_float, unary_rounded
from pyprecision.emulate.shared.numeric import first_nan
from pyprecision.errors import CastError

SPECIAL = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                    0x7FC00001, 0x7F800001, 0xFFA00005, 0x00000001, 0x80000001, 0x007FFFFF,
                    0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0x3F800001, 0x33800000,
                    0x4B000000, 0x5F000000, 0x1F000000, 0x0C000000], dtype=np.uint32)
words = st.one_of(st.sampled_from(SPECIAL.tolist()), st.integers(0, 2**32 - 1))
arrays = st.lists(words, min_size=1, max_size=64).map(
    lambda w: np.array(w, dtype=np.uint32).view(np.float32))


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype == np.float32 and np.array_equal(x.view(np.uint32), y.view(np.uint32))


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div", "max", "min", "pow", "rem"])
@settings(max_examples=120, deadline=None)
@given(a=arrays, b=arrays)
def test_binary_fp32_result_equals_the_float64_route(kind: str, a: np.ndarray,
                                                     b: np.ndarray) -> None:
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    want = round_to(binary_values(kind, a, b, True), ir.float32)
    assert _same(binary_rounded(kind, a, b, True, ir.float32), want)


def test_every_special_pair_of_the_fast_binary_kinds() -> None:
    """All 22 x 22 special operand pairs, each IEEE kind, both operand orders."""
    s = SPECIAL.view(np.float32)
    a, b = (x.ravel() for x in np.meshgrid(s, s))
    for kind in ("add", "sub", "mul", "div", "max", "min"):
        want = round_to(binary_values(kind, a, b, True), ir.float32)
        assert _same(binary_rounded(kind, a, b, True, ir.float32), want), kind


@pytest.mark.parametrize("kind", ["sqrt", "square", "reciprocal", "neg", "abs", "exp"])
@settings(max_examples=120, deadline=None)
@given(x=arrays)
def test_unary_fp32_result_equals_the_float64_route(kind: str, x: np.ndarray) -> None:
    want = round_to(unary_float(kind, x), ir.float32)
    assert _same(unary_rounded(kind, x, ir.float32), want)


@settings(max_examples=60, deadline=None)
@given(a=arrays, b=arrays)
def test_a_narrow_result_still_rounds_once_from_the_exact_value(a: np.ndarray,
                                                                b: np.ndarray) -> None:
    """bf16 = round(exact a + b), never round(round_fp32(a + b)): the fast path is fp32 only."""
    n = min(a.size, b.size)
    a, b = a[:n], b[:n]
    got = binary_rounded("add", a, b, True, ir.bfloat16)
    with np.errstate(all="ignore"):  # NaN + NaN: the first operand's payload (OP12), which
        exact = first_nan(a.astype(np.float64) + b.astype(np.float64), a, b)  # NumPy may swap
    want = round_to(exact, ir.bfloat16)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert got.dtype == np.float32
    finite = np.isfinite(exact)
    assert np.array_equal(got[finite].astype(ml_dtypes.bfloat16).astype(np.float32),
                          got[finite])  # representable in bf16


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 300), pos=st.integers(0, 299), dt=st.sampled_from([np.float32, np.float64]),
       nan=st.sampled_from([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA00005, 0x7FC00001]),
       infs=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_min_and_max_reductions_see_every_nan(n, pos, dt, nan, infs, seed):
    """The early exits of first_nan (has_nan) and of the EM-11 finite check rest on NumPy's
    min / max reductions propagating a NaN from any position, beside ±inf too."""
    from pyprecision.emulate.shared.numeric import has_nan

    x = np.random.default_rng(seed).standard_normal(n).astype(dt)
    if infs:
        x[:: 7] = np.inf
        x[3:: 11] = -np.inf
    assert not has_nan(x)
    x[pos % n] = np.array(nan, np.uint32).view(np.float32).astype(dt)
    assert has_nan(x)
    assert np.isnan(np.maximum.reduce(x, axis=None))


_SMALL = st.floats(-4, 4, width=32).map(lambda v: int(np.float32(v).view(np.uint32)))
FOLD_WORDS = st.one_of(_SMALL, _SMALL, _SMALL, st.integers(0, 2**32 - 1),
                       st.sampled_from([0x00000000, 0x80000000, 0x7F800000, 0xFF800000,
                                        0x00000001, 0x80000001, 0x7F7FFFFF, 0xFF7FFFFF,
                                        0x3F800000, 0x7FC00000, 0xFFA00005]))


@pytest.mark.parametrize("kind", ["add", "mul", "max", "min"])
@settings(max_examples=120, deadline=None)
@given(data=st.data(), rows=st.integers(1, 5), k=st.integers(1, 24))
def test_the_float32_fold_is_the_steps(kind, data, rows, k):
    """``float32_fold`` (one NumPy call) gives the bits of reduce's steps, or declines (None):
    inf - inf and 0 x inf made mid-fold, ±0 ties of max / min, every other word; a NaN operand
    declines."""
    from pyprecision.emulate.ir.reduce import float32_fold

    words = data.draw(st.lists(FOLD_WORDS, min_size=rows * k, max_size=rows * k))
    x = np.array(words, np.uint32).view(np.float32).reshape(rows, k)
    acc = np.array(data.draw(st.lists(FOLD_WORDS, min_size=rows, max_size=rows)),
                   np.uint32).view(np.float32)
    got = float32_fold(kind, acc, x)
    if np.isnan(x).any() or np.isnan(acc).any():
        assert got is None
        return
    want = acc
    for j in range(k):
        want = round_to(binary_values(kind, want, x[:, j], True), ir.float32)
    assert got is not None and _same(np.asarray(got), want)


_NARROW_ACC = [ir.bfloat16, ir.float16, ir.float8e4, ir.float8e4m3fn, ir.float8_e5m2]


@pytest.mark.parametrize("dt", _NARROW_ACC, ids=lambda d: d.name)
@pytest.mark.parametrize("kind", ["add", "mul", "max", "min"])
@settings(max_examples=60, deadline=None)
@given(data=st.data(), rows=st.integers(1, 19), k=st.integers(1, 40))
def test_the_narrow_fold_is_the_steps(dt, kind, data, rows, k):
    """``narrow_fold`` (one C call, decision EM-21) gives the bits of reduce's steps in a narrow
    accumulation dtype, each step the exact operation rounded to ``dt`` (the float64 route), or
    declines (None): overflow to ±inf or to ±max, inf - inf and 0 x inf made mid-fold, ±0, every
    other value of ``dt``; a NaN operand declines, as does a step that makes one. Row counts that
    are not a multiple of the C fold's group of eight too."""
    from pyprecision.emulate.ir.reduce import narrow_fold

    def values(n):
        words = data.draw(st.lists(FOLD_WORDS, min_size=n, max_size=n))
        return round_to(np.array(words, np.uint32).view(np.float32), dt)

    x = values(rows * k).reshape(rows, k)
    acc = values(rows)
    want = acc
    nan = False
    for j in range(k):
        want = round_to(binary_values(kind, want, x[:, j], True), dt)
        nan |= bool(np.isnan(want).any())
    got = narrow_fold(kind, acc, x, dt)
    if np.isnan(x).any() or np.isnan(acc).any():
        assert got is None
        return
    if got is None:
        assert nan and kind in ("add", "mul")
        return
    _FOLDED.append(kind)
    assert _same(np.asarray(got), want)


_FOLDED: list[str] = []


def test_the_narrow_fold_folded():
    """The property above compared folds the C core made (not only declines)."""
    if not _FOLDED:
        pytest.skip("run with test_the_narrow_fold_is_the_steps")
    assert {"add", "mul"} <= set(_FOLDED)


@pytest.mark.parametrize("rounding", ["bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5"])
def test_the_rounded_fold_is_the_same_at_every_thread_count(rounding):
    """Rows split between threads: the same bits as on one thread; an unknown rounding is a
    CastError naming the valid ones."""
    from pyprecision.kernel import fold_f32

    dt = {"bf16": ir.bfloat16, "fp16": ir.float16, "fp8e4": ir.float8e4,
          "fp8e4m3fn": ir.float8e4m3fn, "fp8e5": ir.float8_e5m2}[rounding]
    rng = np.random.default_rng(7)
    x = round_to(rng.standard_normal((3001, 64)).astype(np.float32), dt)
    init = round_to(rng.standard_normal(3001).astype(np.float32), dt)
    one = fold_f32("add", x, init, rounding=rounding, threads=1)
    two = fold_f32("add", x, init, rounding=rounding, threads=2)
    assert one is not None and two is not None and _same(one, two)
    with pytest.raises(CastError, match="bf16, fp16"):
        fold_f32("add", x, init, rounding="fp32r")


def test_the_narrow_fold_declines_what_it_does_not_round():
    """fp32r, integers and a shape with nothing to fold are the steps' (None)."""
    from pyprecision.emulate.ir.reduce import narrow_fold

    x = np.ones((2, 3), np.float32)
    assert narrow_fold("add", np.zeros(2, np.float32), x, ir.float32r) is None
    assert narrow_fold("add", np.zeros(2, np.float32), x, ir.int32) is None
    assert narrow_fold("and", np.zeros(2, np.float32), x, ir.bfloat16) is None
    assert narrow_fold("add", np.zeros(2, np.float32), x[:, :0], ir.bfloat16) is None
