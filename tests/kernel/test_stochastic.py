"""§2 stochastic rounding: exact threshold, properties, statistics, determinism."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision as pp

from . import refmodel as rm
from .isas import available
from .samples import boundary_f32_bits, f32

FMTS = rm.FORMAT_NAMES
U32 = st.integers(0, 2**32 - 1)


def _threshold(fmt: rm.Fmt, x: rm.Exact) -> int | None:
    """floor(f * 2^32) for an inexact finite x (None when x is on the grid)."""
    lo, hi = rm.neighbours(fmt, x.mag)
    if lo == x.mag:
        return None
    return math.floor((x.mag - lo) / (hi - lo) * 2**32)


@pytest.mark.parametrize("name", FMTS)
def test_threshold_is_exactly_floor_f_2_32(name: str) -> None:
    """R = t - 1 rounds up, R = t rounds down, where t = floor(f * 2^32) (§2: up iff R < t)."""
    fmt = rm.FORMATS[name]
    rng = np.random.default_rng([4, len(name)])
    cand = rng.choice(boundary_f32_bits(name), 4000)
    cand = np.concatenate([cand, rng.integers(0, 1 << 32, 2000, dtype=np.uint64).astype(np.uint32)])
    xs, rs, want = [], [], []
    for b in cand.tolist():
        x = rm.exact_from_f32_bits(b)
        if x.kind != "finite" or x.mag == 0:
            continue
        t = _threshold(fmt, x)
        if t is None:
            continue
        for r in {max(t - 1, 0), t, min(t + 1, 2**32 - 1), 0, 2**32 - 1}:
            xs.append(b)
            rs.append(r)
            want.append(rm.encode_exact(fmt, x, "stochastic", False, "ml_dtypes", r))
    for isa in available():
        got = pp.encode(f32(np.array(xs, np.uint32)), name, rounding="stochastic",
                        saturate=False, random_bits=np.array(rs, np.uint32), isa=isa)
        bad = [(hex(xs[i]), hex(rs[i]), hex(want[i]), hex(int(got[i])))
               for i in range(len(xs)) if int(got[i]) != want[i]]
        assert bad == [], isa


def test_f_below_2_pow_minus_32_never_rounds_up() -> None:
    x = np.full(4096, 1 + 2.0**-7 * 2.0**-33)  # f = 2^-33: floor(f * 2^32) = 0
    r = np.random.default_rng(1).integers(0, 1 << 32, x.size, dtype=np.uint64).astype(np.uint32)
    r[:3] = [0, 1, 2**32 - 1]
    assert np.all(pp.encode(x, "bf16", rounding="stochastic", random_bits=r) == 0x3F80)
    assert np.all(pp.encode(x, "bf16", rounding="stochastic", seed=3) == 0x3F80)


def test_f_just_below_one_rounds_up_unless_r_is_max() -> None:
    x = np.full(3, 1 + 2.0**-7 * (1 - 2.0**-34))  # floor(f * 2^32) = 2^32 - 1
    r = np.array([0, 2**32 - 2, 2**32 - 1], np.uint32)
    got = pp.encode(x, "bf16", rounding="stochastic", random_bits=r)
    assert got.tolist() == [0x3F81, 0x3F81, 0x3F80]


def _f32_finite(bits: int) -> bool:
    return (bits & 0x7F800000) != 0x7F800000


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(FMTS), data=st.lists(st.tuples(U32, U32), min_size=1, max_size=40),
       sat=st.booleans())
def test_never_leaves_lo_hi(name: str, data: list, sat: bool) -> None:
    fmt = rm.FORMATS[name]
    bits = np.array([b for b, _ in data], np.uint32)
    r = np.array([w for _, w in data], np.uint32)
    got = pp.encode(f32(bits), name, rounding="stochastic", saturate=sat, random_bits=r)
    q = pp.decode(got, name)
    for b, code, v in zip(bits.tolist(), got.tolist(), q.tolist(), strict=True):
        x = rm.exact_from_f32_bits(b)
        if x.kind != "finite":
            continue
        assert (code & fmt.sign_bit != 0) == (x.sign == 1)
        if x.mag == 0:
            assert abs(v) == 0.0
            continue
        lo, hi = rm.neighbours(fmt, x.mag)
        mx = Fraction(fmt.max_value)
        if lo >= mx or hi > mx:  # overflow region: hi (or both) beyond max
            ok = {lo, mx} if sat else {lo}
            if math.isinf(v) or math.isnan(v):
                assert not sat
                continue
            assert Fraction(abs(v)) in ok | ({hi} if hi <= mx else set())
            continue
        assert lo <= Fraction(abs(v)) <= hi


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(FMTS), codes=st.lists(st.integers(0, 2**32 - 1), min_size=1,
                                                  max_size=60),
       seed=st.integers(0, 2**63 - 1), words=st.lists(U32, min_size=60, max_size=60))
def test_exact_values_are_never_moved(name: str, codes: list, seed: int, words: list) -> None:
    fmt = rm.FORMATS[name]
    c = np.array([(v % fmt.n_codes) << fmt.shift for v in codes], np.uint64).astype(fmt.storage)
    keep = np.array([not rm.is_nan_code(fmt, int(v)) for v in c.tolist()])
    c = c[keep]
    x = pp.decode(c, name)
    assert np.array_equal(pp.encode(x, name, rounding="stochastic", seed=seed, saturate=False), c)
    r = np.array(words[: c.size], np.uint32)
    assert np.array_equal(
        pp.encode(x, name, rounding="stochastic", random_bits=r, saturate=False), c)
    assert np.array_equal(pp.encode(x.astype(np.float64), name, rounding="stochastic",
                                    seed=seed, saturate=False), c)


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(FMTS), data=st.lists(st.tuples(U32, U32), min_size=2, max_size=50),
       perm_seed=st.integers(0, 2**32 - 1))
def test_pure_function_of_x_and_r(name: str, data: list, perm_seed: int) -> None:
    bits = np.array([b for b, _ in data], np.uint32)
    r = np.array([w for _, w in data], np.uint32)
    a = pp.encode(f32(bits), name, rounding="stochastic", random_bits=r)
    b = pp.encode(f32(bits), name, rounding="stochastic", random_bits=r.copy())
    assert np.array_equal(a, b)
    p = np.random.default_rng(perm_seed).permutation(bits.size)
    c = pp.encode(f32(bits[p]), name, rounding="stochastic", random_bits=r[p])
    assert np.array_equal(c, a[p])  # element i depends on (x[i], R[i]) only
    want = [rm.encode_exact(rm.FORMATS[name], rm.exact_from_f32_bits(x), "stochastic", None,
                            "ml_dtypes", w) for x, w in zip(bits.tolist(), r.tolist(), strict=True)]
    assert a.tolist() == want


# (format, source value, dtype): f = (|x| - lo) / (hi - lo) covers middle, tiny and near-one.
FREQ_CASES = (
    ("bf16", 1 + 2.0**-8, np.float32),  # f = 1/2
    ("bf16", 1 + 2.0**-7 * 0.3, np.float64),
    ("bf16", -(1 + 2.0**-7 * 2.0**-12), np.float64),  # f = 2^-12
    ("bf16", 1 + 2.0**-7 * (1 - 2.0**-10), np.float64),
    ("fp16", 1 + 2.0**-10 * 0.125, np.float32),
    ("fp32r", 3 + 2.0**-9 * 0.7, np.float64),
    ("fp8e4", 2.0**-9 * 0.25, np.float32),  # subnormal range: between 0 and 2^-9
    ("fp8e4", 1.1, np.float32),
    ("fp8e4m3fn", 460.0, np.float32),  # between max 448 and 480: up is overflow (NaN)
    ("fp8e4", 250.0, np.float32),  # between max 240 and 256: up is overflow (inf)
    ("fp8e5", 1 + 2.0**-2 * 0.9, np.float32),
)


@pytest.mark.parametrize("case", FREQ_CASES, ids=lambda c: f"{c[0]}-{c[1]!r}")
def test_frequency_of_rounding_up(case: tuple) -> None:
    """Seeded generator: count(up) ~ Binomial(N, floor(f*2^32)/2^32), within 6 sigma."""
    name, value, dtype = case
    fmt = rm.FORMATS[name]
    n = 1 << 21
    x = np.full(n, value, dtype)
    ex = rm.exact_from_float(float(dtype(value)))
    t = _threshold(fmt, ex)
    assert t is not None
    p = t / 2**32
    up_code = rm.encode_exact(fmt, ex, "stochastic", False, "ml_dtypes", 0)
    down_code = rm.encode_exact(fmt, ex, "stochastic", False, "ml_dtypes", 2**32 - 1)
    assert up_code != down_code
    for seed in (0, 12345, 2**40 + 7):
        got = pp.encode(x, name, rounding="stochastic", seed=seed, saturate=False)
        assert np.all((got == up_code) | (got == down_code))
        ups = int(np.count_nonzero(got == up_code))
        sigma = math.sqrt(n * p * (1 - p))
        assert abs(ups - n * p) <= 6 * sigma + 1, (seed, ups, n * p, sigma)


def test_generator_has_no_neighbour_correlation() -> None:
    """With f = 1/2, adjacent elements and two seeds agree about half the time (6 sigma)."""
    n = 1 << 21
    x = np.full(n, 1 + 2.0**-8, np.float32)
    a = pp.encode(x, "bf16", rounding="stochastic", seed=99) == 0x3F81
    b = pp.encode(x, "bf16", rounding="stochastic", seed=100) == 0x3F81
    six = 6 * math.sqrt(n * 0.25)
    for agree in (np.count_nonzero(a[1:] == a[:-1]), np.count_nonzero(a == b),
                  np.count_nonzero(a[2:] == a[:-2]), np.count_nonzero(a[64:] == a[:-64])):
        assert abs(int(agree) - n / 2) <= six + 1
