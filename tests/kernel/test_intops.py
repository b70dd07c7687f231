"""§8 float -> int (XLA convert) and int_dot (the HLO integer-dot rewrite through F32)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pyprecision as pp
from pyprecision.errors import PyPrecisionError

from . import refmodel as rm
from . import refmodel_np as rn

INTS = rm.INT_DTYPES


def _f2i_inputs() -> np.ndarray:
    """float64 values: every power of two ±small offsets (integer boundaries of every dtype),
    fractions, negatives, specials, random magnitudes."""
    rng = np.random.default_rng(17)
    p = 2.0 ** np.arange(-3, 70)
    around = np.concatenate([p, p - 1, p + 1, p - 0.5, p + 0.5, np.nextafter(p, 0),
                             np.nextafter(p, np.inf), p - 2**-20 * p])
    rnd = rng.standard_normal(20000) * 10.0 ** rng.integers(-2, 22, 20000)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, -0.5, 0.5, -0.99, 0.99, -1.0,
                        -1.5, 2147483520.0, 2147483647.0, 2147483648.0, 4294967295.0,
                        9223372036854774784.0, 1.8446744073709550e19, 1e300, -1e300])
    return np.concatenate([around, -around, rnd, special])


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("src", [np.float64, np.float32, np.float16, ml_dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
def test_float_to_int_against_model(dtype: type, src: type) -> None:
    with np.errstate(all="ignore"):
        x = _f2i_inputs().astype(src)
    got = pp.float_to_int(x, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    want = rn.float_to_int_np(x.astype(np.float64), dtype)  # widening is exact
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(repr(x[i]), int(want[i]), int(got[i])) for i in bad[:8]]


F2I_ROWS = (
    (np.nan, np.int32, 0), (-np.nan, np.uint8, 0), (np.inf, np.int32, 2**31 - 1),
    (-np.inf, np.int32, -(2**31)), (-np.inf, np.uint16, 0), (np.inf, np.uint64, 2**64 - 1),
    (-3.7, np.int32, -3), (3.7, np.int8, 3), (-3.7, np.uint32, 0), (-0.9, np.int64, 0),
    (2.0**31, np.int32, 2**31 - 1), (-(2.0**31), np.int32, -(2**31)), (2147483520.0, np.int32,
                                                                       2147483520),
    (1e10, np.uint32, 2**32 - 1), (2.0**63, np.int64, 2**63 - 1), (2.0**64, np.uint64, 2**64 - 1),
    (2.0**63, np.uint64, 2**63), (-(2.0**63), np.int64, -(2**63)), (300.0, np.uint8, 255),
    (-129.5, np.int8, -128), (127.99, np.int8, 127), (65535.5, np.uint16, 65535),
)


@pytest.mark.parametrize("row", F2I_ROWS, ids=lambda r: f"{r[0]!r}-{np.dtype(r[1]).name}")
def test_float_to_int_literal_rows(row: tuple) -> None:
    v, dtype, want = row
    for src in (np.float64, np.float32):
        if np.isfinite(v) and float(src(v)) != v:
            continue
        assert int(pp.float_to_int(np.array([v], src), dtype)[0]) == want


def test_float_to_int_accepts_dtype_names() -> None:
    x = np.array([1.5, -2.5, 1e12])
    assert np.array_equal(pp.float_to_int(x, "int32"), pp.float_to_int(x, np.int32))


# ----------------------------------------------------------------------------- int_dot


def _exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(object) @ b.astype(object)  # Python ints: no overflow


def _check_dot(a: np.ndarray, b: np.ndarray, out_dtype: type) -> tuple:
    got, rep = pp.int_dot(a, b, out_dtype=out_dtype, report=True)
    plain = pp.int_dot(a, b, out_dtype=out_dtype)
    assert np.array_equal(got, plain)
    assert got.dtype == np.dtype(out_dtype) and got.shape == (a.shape[0], b.shape[1])
    want = rn.int_dot_model(a, b, out_dtype)
    bad = np.argwhere(got != want)
    assert bad.size == 0, [(tuple(i), int(want[tuple(i)]), int(got[tuple(i)])) for i in bad[:5]]
    exact = _exact(a, b)
    diff = np.argwhere(got.astype(object) != exact)
    first = None if len(diff) == 0 else tuple(int(v) for v in diff[0])
    assert (rep.changed, rep.first) == (len(diff), first)
    rexact = np.asarray(rep.exact).astype(object)
    wrong = [tuple(int(v) for v in i) for i in np.argwhere(rexact != exact)]
    assert not wrong, (f"report.exact ({np.asarray(rep.exact).dtype}) differs from the exact "
                       f"product at {len(wrong)} elements, e.g. {wrong[0]}: "
                       f"{rexact[wrong[0]]} != {exact[wrong[0]]}")
    if hasattr(rep, "max_abs_diff"):
        d = np.abs(got.astype(object) - exact)
        assert rep.max_abs_diff == (max(d.ravel()) if d.size else 0)
    return got, rep


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16],
                         ids=lambda d: np.dtype(d).name)
def test_int_dot_is_exact_within_2_24(dtype: type) -> None:
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    info = np.iinfo(dtype)
    lim = min(64, int(info.max))
    for m, k, n in ((1, 1, 1), (7, 300, 5), (33, 1024, 17)):
        a = rng.integers(max(-lim, int(info.min)), lim + 1, (m, k)).astype(dtype)
        b = rng.integers(max(-lim, int(info.min)), lim + 1, (k, n)).astype(dtype)
        got, rep = _check_dot(a, b, np.int32)
        assert rep.changed == 0 and rep.first is None
        assert np.array_equal(got.astype(object), _exact(a, b))


@pytest.mark.parametrize("out_dtype", [np.int32, np.int64, np.int16, np.uint32],
                         ids=lambda d: np.dtype(d).name)
def test_int_dot_reproduces_and_reports_the_loss_beyond_2_24(out_dtype: type) -> None:
    rng = np.random.default_rng(3)
    for bits_a, bits_b, k in ((20, 8, 64), (27, 27, 16), (12, 12, 256), (31, 2, 8)):
        a = rng.integers(-(2**bits_a), 2**bits_a, (9, k)).astype(np.int64)
        b = rng.integers(-(2**bits_b), 2**bits_b, (k, 11)).astype(np.int64)
        _, rep = _check_dot(a, b, out_dtype)
        if out_dtype == np.int64:
            assert rep.changed > 0  # these sizes always lose low bits somewhere


INT_DOT_ROWS = (
    # sequential K order: 2^24 + 1 + 1 stays 2^24 (each +1 is a tie to even)
    ([[2**24, 1, 1]], [[1], [1], [1]], 16777216, 16777218),
    ([[1, 1, 2**24]], [[1], [1], [1]], 16777218, 16777218),  # small terms first: exact
    # no FMA: 4097*4097 rounds to 16785408 before the add, so the sum is 0, not 1
    ([[-4096, 4097]], [[4098], [4097]], 0, 1),
    ([[2**24 + 1]], [[1]], 16777216, 16777217),  # operand rounded to f32 first (RNE)
    ([[2**24 + 3]], [[1]], 16777220, 16777219),
    ([[2**16]], [[2**16]], 2**31 - 1, 2**32),  # saturates to int32 max; exact is 2^32
    ([[-(2**16)]], [[2**16]], -(2**31), -(2**32)),
)


@pytest.mark.parametrize("row", INT_DOT_ROWS, ids=lambda r: str(r[0]))
def test_int_dot_literal_rows(row: tuple) -> None:
    a, b, want, exact = row
    got, rep = pp.int_dot(np.array(a, np.int64), np.array(b, np.int64), report=True)
    assert int(got[0, 0]) == want
    assert rep.changed == (0 if want == exact else 1)
    assert rep.first == (None if want == exact else (0, 0))
    assert int(np.asarray(rep.exact)[0, 0]) == exact


def test_int_dot_threads_and_layout_do_not_matter() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(-(2**20), 2**20, (64, 200)).astype(np.int32)
    b = rng.integers(-(2**12), 2**12, (200, 48)).astype(np.int32)
    ref = pp.int_dot(a, b, threads=1)
    assert np.array_equal(pp.int_dot(a, b, threads=2), ref)
    assert np.array_equal(pp.int_dot(np.asfortranarray(a), b[:, ::-1][:, ::-1]), ref)
    assert np.array_equal(pp.int_dot(a[::2], b), ref[::2])


def test_int_dot_refuses_mismatched_shapes() -> None:
    with pytest.raises(PyPrecisionError, match="shape|inner|dimension|K"):
        pp.int_dot(np.ones((2, 3), np.int32), np.ones((4, 2), np.int32))
