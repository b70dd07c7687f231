"""The C core's sums of a relative l2 error (csrc/fold.c ``pp_sqdiff_f32``, decision TU12): the
documented order, bit for bit, against a NumPy model of it; the same bits at every thread count;
within rounding of the exact sums; non-finite elements; bad arguments. ``sq_sums`` (TU23): the
same for any two real arrays, the others in float64 blocks."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision.errors import CastError
from pyprecision.kernel import SQ_BLOCK, sq_sums, sqdiff_f32

CHUNK, LANES = 1 << 16, 8


def model(x: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    """The order csrc/fold.c documents: chunks of 2^16; in a chunk element k in lane k % 8, each
    lane summed in index order (np.cumsum is sequential), the lanes added pairwise; the chunks'
    sums in chunk order. Padding with zeros adds +0.0 to sums of squares, which changes nothing."""
    xd, rd = x.reshape(-1).astype(np.float64), r.reshape(-1).astype(np.float64)
    d = xd - rd
    out = [0.0, 0.0]
    for lo in range(0, xd.size, CHUNK):
        for j, v in enumerate((rd[lo:lo + CHUNK] * rd[lo:lo + CHUNK], d[lo:lo + CHUNK] * d[lo:lo + CHUNK])):
            pad = np.zeros(-v.size % LANES)
            lanes = np.cumsum(np.concatenate([v, pad]).reshape(-1, LANES), axis=0)[-1]
            a = [float(t) for t in lanes]
            out[j] = out[j] + (((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])))
    return out[0], out[1]


floats = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(floats, floats), max_size=300), st.integers(1, 3))
def test_the_sums_are_the_documented_order(pairs: list[tuple[float, float]], threads: int) -> None:
    x = np.array([p[0] for p in pairs], np.float32)
    r = np.array([p[1] for p in pairs], np.float32)
    got = sqdiff_f32(x, r, threads=threads)
    want = model(x, r)
    assert [v.hex() for v in got] == [v.hex() for v in want]


@pytest.mark.parametrize("n", [CHUNK - 1, CHUNK, CHUNK + 3, 3 * CHUNK + 17])
def test_chunks_and_threads_give_one_answer(n: int) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * np.exp(rng.uniform(-20, 20, n))).astype(np.float32)
    r = (x * (1 + rng.standard_normal(n) * 1e-3)).astype(np.float32)
    one = sqdiff_f32(x, r, threads=1)
    assert sqdiff_f32(x, r, threads=2) == one == sqdiff_f32(x, r, threads=7)
    assert [v.hex() for v in one] == [v.hex() for v in model(x, r)]
    # within the rounding of a float64 sum of n terms of the exact sums
    exact_r = sum(Fraction(float(v)) ** 2 for v in r[:2000])
    part = sqdiff_f32(x[:2000], r[:2000])
    assert math.isclose(part[0], float(exact_r), rel_tol=1e-13)
    assert math.isclose(one[1], math.fsum(((x.astype(np.float64) - r) ** 2).tolist()),
                        rel_tol=1e-12)


def test_views_and_shapes_are_read_in_c_order() -> None:
    a = np.arange(60, dtype=np.float32).reshape(3, 20)
    b = (a * 1.5).astype(np.float32)
    assert sqdiff_f32(a[:, ::2], b[:, ::2]) == model(np.ascontiguousarray(a[:, ::2]),
                                                     np.ascontiguousarray(b[:, ::2]))
    assert sqdiff_f32(np.zeros(0, np.float32), np.zeros(0, np.float32)) == (0.0, 0.0)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("side", ["x", "r"])
def test_a_non_finite_element_makes_a_non_finite_sum(bad: float, side: str) -> None:
    x = np.ones(100, np.float32)
    r = np.full(100, 2, np.float32)
    (x if side == "x" else r)[37] = bad
    sr, sd = sqdiff_f32(x, r)
    assert not math.isfinite(sd)
    assert math.isfinite(sr) == (side == "x")


@pytest.mark.parametrize("args, match", [
    ((np.ones(3), np.ones(3, np.float32)), "float32"),
    ((np.ones(3, np.float32), np.ones(3, ">f4")), "float32"),
    ((np.ones(3, np.float32), np.ones(4, np.float32)), "one shape"),
])
def test_bad_arguments(args: tuple[np.ndarray, np.ndarray], match: str) -> None:
    with pytest.raises(CastError, match=match):
        sqdiff_f32(*args)


def test_aligned_blocks_of_the_api_chunk_sum_to_the_whole() -> None:
    """SQDIFF_CHUNK (the C API's PP_SQDIFF_CHUNK) is the documented chunk, and aligned blocks of it
    summed in order give the whole array's bits: what tune's block-by-block comparison (TU20)
    relies on. Blocks of half the chunk do not, on these values (the lanes restart)."""
    from pyprecision.kernel import SQDIFF_CHUNK

    assert SQDIFF_CHUNK == CHUNK
    n = 3 * CHUNK + 5
    rng = np.random.default_rng(20)
    x = (rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n))).astype(np.float32)
    r = (x * (1 + rng.standard_normal(n) * 1e-2)).astype(np.float32)
    whole = [v.hex() for v in sqdiff_f32(x, r)]

    def by_blocks(size: int) -> list[str]:
        s = [0.0, 0.0]
        for lo in range(0, n, size):
            a, b = sqdiff_f32(x[lo:lo + size], r[lo:lo + size])
            s = [s[0] + a, s[1] + b]
        return [v.hex() for v in s]

    assert by_blocks(SQDIFF_CHUNK) == whole
    assert by_blocks(SQDIFF_CHUNK // 2) != whole


# -- sq_sums: any two real arrays, never BLAS (decision TU23) --------------------------------------


def blocks_model(x: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    """sq_sums' documented order for a pair that is not two float32 arrays: float64 blocks of
    SQ_BLOCK elements, each block's squares summed by NumPy's pairwise reduction, the blocks'
    sums added in order from 0."""
    xd, rd = x.reshape(-1).astype(np.float64), r.reshape(-1).astype(np.float64)
    sr = sd = 0.0
    for lo in range(0, xd.size, SQ_BLOCK):
        a, b = xd[lo:lo + SQ_BLOCK], rd[lo:lo + SQ_BLOCK]
        sr += float(np.add.reduce(b * b))
        sd += float(np.add.reduce((a - b) * (a - b)))
    return sr, sd


def _exact(x: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    xd, rd = x.reshape(-1).astype(np.float64), r.reshape(-1).astype(np.float64)
    return (math.fsum(Fraction(v) ** 2 for v in rd.tolist()).__float__(),
            float(sum((Fraction(a) - Fraction(b)) ** 2 for a, b in zip(xd.tolist(), rd.tolist()))))


KINDS = ["float64", "float16", "int32", "bfloat16", "float32+float64"]


@settings(max_examples=30, deadline=None)
@given(st.data(), st.integers(0, 2 * (1 << 15) + 5), st.sampled_from(KINDS))
def test_sq_sums_is_its_documented_order_and_within_rounding_of_the_exact_sums(data, n, kind) -> None:
    """Every pair but two float32 arrays: the bits of the block model, whatever the layout (a
    transposed view), and within 1e-12 of the exact sums (by Fraction, on a sample of sizes)."""
    import ml_dtypes

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    scale = data.draw(st.sampled_from([1e-3, 1.0, 100.0 if kind == "float16" else 1e6]))
    r64 = rng.standard_normal(n) * scale  # finite in every kind: float16's max is 65504
    x64 = r64 * (1 + 1e-3 * rng.standard_normal(n))
    if kind == "float32+float64":
        x, r = x64.astype(np.float32), r64
    elif kind == "int32":
        x, r = (np.clip(v * 1e3, -2e9, 2e9).astype(np.int32) for v in (x64, r64))
    else:
        dt = ml_dtypes.bfloat16 if kind == "bfloat16" else np.dtype(kind)
        x, r = x64.astype(dt), r64.astype(dt)
    got = sq_sums(x, r)
    assert got == blocks_model(x, r)
    if n % 2 == 0 and n:
        assert sq_sums(x.reshape(2, -1).T, r.reshape(2, -1).T) == blocks_model(
            np.ascontiguousarray(x.reshape(2, -1).T), np.ascontiguousarray(r.reshape(2, -1).T))
    if n <= 3000:
        for g, want in zip(got, _exact(x, r), strict=True):
            assert g == pytest.approx(want, rel=1e-12, abs=0)


def test_sq_sums_of_two_float32_arrays_is_the_c_cores() -> None:
    rng = np.random.default_rng(5)
    x, r = rng.standard_normal((3, 70001)).astype(np.float32), rng.standard_normal((3, 70001)).astype(np.float32)
    assert sq_sums(x, r) == sqdiff_f32(x, r) == model(x, r)
    assert sq_sums(x, r, threads=1) == sq_sums(x, r, threads=2)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, 1e200])
def test_sq_sums_is_non_finite_on_a_non_finite_element_or_past_float64s_range(bad: float) -> None:
    r = np.ones(100, np.float64)
    x = r.copy()
    x[37] = bad
    assert not math.isfinite(sq_sums(x, r)[1])
    assert math.isfinite(sq_sums(r, r)[0]) and sq_sums(r, r)[1] == 0.0


@pytest.mark.parametrize("x,r,match", [
    (np.ones(3, np.complex64), np.ones(3), "real arrays"),
    (np.array([1, 2], object), np.ones(2), "real arrays"),
    (np.array(["a", "b"]), np.ones(2), "real arrays"),
    (np.ones(3), np.ones(4), "one shape"),
])
def test_sq_sums_refuses_what_is_not_two_real_arrays_of_one_shape(x, r, match) -> None:
    with pytest.raises(CastError, match=match):
        sq_sums(x, r)
