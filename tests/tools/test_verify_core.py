"""verify's comparison, ULP distance and diagnosis, through the pyprecision.verify API.

Dumps are made by encoding with a *known* policy different from the one verified against (the
injected fault); the test asserts that the diagnosis names exactly the injected difference.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision as pp
from pyprecision.errors import DumpError
from pyprecision.verify import CastPolicy, compare_codes, diagnose, ulp_histogram, verify_cast

FORMATS = ["bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"]


def _data(fmt: str, n: int = 4000, seed: int = 0) -> np.ndarray:
    """float32 data that exercises rounding, overflow, NaN/inf and exact ties of ``fmt``."""
    f = pp.format(fmt)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * f.max / 8).astype(np.float32)
    x[:200] = rng.standard_normal(200).astype(np.float32)
    # exact ties: 1 + (2k+1)/2^(m+1), halfway between two codes of the format
    k = np.arange(40)
    ties = 1 + (2 * (k % (2 ** f.mantissa_bits)) + 1) / 2.0 ** (f.mantissa_bits + 1)
    x[200:240] = ties.astype(np.float32) * np.where(k % 2, -1, 1)
    x[240:250] = np.float32(min(f.max * 3, 3e38)) * np.where(np.arange(10) % 2, -1, 1)
    x[250:254] = [np.nan, -np.nan, np.inf, -np.inf]
    x[254:400] = (rng.uniform(-1, 1, 146) * f.min_normal).astype(np.float32)  # subnormal range
    return x


# ---- compare: the ULP distance in the format's code space -------------------------------------

@pytest.mark.parametrize(("fmt", "a", "b", "dist"), [
    ("fp8e4", 0x38, 0x38, 0),
    ("fp8e4", 0x38, 0x39, 1),
    ("fp8e4", 0x38, 0x3A, 2),
    ("fp8e4", 0x00, 0x80, 1),          # +0 / -0: different bits, so at least 1 ULP
    ("fp8e4", 0x01, 0x81, 2),          # +min_sub / -min_sub straddle zero
    ("fp8e4", 0x77, 0x78, 1),          # max / inf
    ("fp8e4", 0x7C, 0xFC, 1),          # two NaN encodings
    ("fp8e4m3fn", 0x7E, 0xFE, 2 * 0x7E),
    ("bf16", 0x3F80, 0xBF80, 2 * 0x3F80),
    ("fp16", 0x3C00, 0x3C05, 5),
    ("fp32r", 0x3F800000, 0x3F802000, 1),  # one fp32r ulp is 2^13 raw steps
    ("fp32r", 0x3F800000, 0x3F806000, 3),
])
def test_ulp_distance_in_code_space(fmt: str, a: int, b: int, dist: int) -> None:
    f = pp.format(fmt)
    cmp = compare_codes(np.array([a], f.storage_dtype), np.array([b], f.storage_dtype), f)
    assert int(cmp.ulp[0]) == dist
    assert not cmp.unbounded[0]
    assert cmp.mismatches == (a != b)


def test_nan_against_number_is_unbounded() -> None:
    f = pp.format("fp8e5")
    cmp = compare_codes(np.array([0x7E, 0x3C], np.uint8), np.array([0x3C, 0x3C], np.uint8), f)
    assert cmp.unbounded.tolist() == [True, False]
    assert cmp.max_ulp() is None and cmp.max_finite_ulp() == 0
    assert not cmp.within(10**9)


def test_nan_by_class_for_value_dumps() -> None:
    f = pp.format("fp8e5")
    cmp = compare_codes(np.array([0x7E], np.uint8), np.array([0xFF], np.uint8), f, nan_by_class=True)
    assert cmp.mismatches == 0


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FORMATS), st.data())
def test_ulp_distance_is_a_metric_on_non_nan_codes(fmt: str, data: st.DataObject) -> None:
    f = pp.format(fmt)
    codes = [data.draw(st.integers(0, 2**f.bits - 1)) << 0 for _ in range(3)]
    arr = np.array(codes, np.uint64).astype(f.storage_dtype)
    if f.name == "fp32r":
        arr &= np.uint32(0xFFFFE000)
    if np.isnan(pp.decode(arr, f)).any():
        return
    a, b, c = (arr[i:i + 1] for i in range(3))

    def d(u: np.ndarray, v: np.ndarray) -> int:
        return int(compare_codes(u, v, f).ulp[0])

    assert d(a, b) == d(b, a)
    assert (d(a, b) == 0) == (int(a[0]) == int(b[0]))
    assert d(a, c) <= d(a, b) + d(b, c) + 1  # +0/-0 count 1 apart, the only non-metric step


def test_histogram_buckets() -> None:
    f = pp.format("fp16")
    exp = np.zeros(8, np.uint16) + 0x3C00
    dmp = exp + np.array([0, 0, 1, 2, 3, 4, 5, 9], np.uint16)
    rows = ulp_histogram(compare_codes(exp, dmp, f))
    assert [(r["bucket"], r["count"]) for r in rows] == [
        ("0", 2), ("1", 1), ("2", 1), ("3-4", 2), ("5-8", 1), ("9-16", 1)]


# ---- diagnosis: inject a known policy difference, expect exactly it back ----------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("inject", "changes"), [
    ({"rounding": "rtz"}, ["rounding=rtz"]),
    ({"rounding": "rna"}, ["rounding=rna"]),
])
def test_diagnosis_finds_rounding(fmt: str, inject: dict, changes: list[str]) -> None:
    x = _data(fmt)
    dump = pp.encode(x, fmt, **inject)
    rep = verify_cast(x, dump, CastPolicy(fmt))
    assert rep.comparison.mismatches > 0
    assert rep.diagnosis is not None and rep.diagnosis.exact is not None
    assert rep.diagnosis.exact.changes_from(rep.policy) == changes


@pytest.mark.parametrize("fmt", FORMATS)
def test_diagnosis_finds_saturation(fmt: str) -> None:
    x = _data(fmt)
    f = pp.format(fmt)
    dump = pp.encode(x, fmt, saturate=not f.default_saturate)
    rep = verify_cast(x, dump, CastPolicy(fmt))
    want = "saturate=off" if f.default_saturate else "saturate=on"
    assert rep.diagnosis is not None and rep.diagnosis.exact is not None
    assert rep.diagnosis.exact.changes_from(rep.policy) == [want]


@pytest.mark.parametrize("fmt", FORMATS)
def test_diagnosis_finds_nan_encoding(fmt: str) -> None:
    x = _data(fmt)
    dump = pp.encode(x, fmt, nan="nvidia")
    rep = verify_cast(x, dump, CastPolicy(fmt))
    assert rep.diagnosis is not None and rep.diagnosis.exact is not None
    assert rep.diagnosis.exact.changes_from(rep.policy) == ["nan=nvidia"]


@pytest.mark.parametrize(("fmt", "via"), [("fp8e4", "bf16"), ("fp8e5", "fp16"), ("bf16", "fp32r"),
                                          ("fp8e4m3fn", "bf16"), ("fp16", "fp32r")])
def test_diagnosis_finds_double_rounding(fmt: str, via: str) -> None:
    x = _data(fmt)
    dump = pp.encode(pp.quantize(x, via), fmt)
    rep = verify_cast(x, dump, CastPolicy(fmt))
    d = rep.diagnosis
    assert d is not None and d.exact is not None
    # fp16 and fp32r both carry 10 mantissa bits: on data inside fp16's range either explains an
    # fp8e5 dump, and both are reported (the first one found, the other as an alternative).
    explained = [p.changes_from(rep.policy) for p in [d.exact, *d.alternatives]]
    assert [f"via={via}"] in explained
    assert all(len(c) == 1 and c[0].startswith("via=") for c in explained)


def test_diagnosis_finds_double_rounding_through_fp32_for_float64_input() -> None:
    # 1 + 2^-8 + 2^-40: float64 → fp32 gives 1 + 2^-8 (a bf16 tie, rounds to 1.0); once: 1 + 2^-7
    x = np.full(16, 1 + 2.0**-8 + 2.0**-40)
    x[8:] = np.linspace(-3, 3, 8)
    dump = pp.encode(x.astype(np.float32), "bf16")
    assert dump[0] == 0x3F80 and pp.encode(x[:1], "bf16")[0] == 0x3F81
    rep = verify_cast(x, dump, CastPolicy("bf16"))
    assert rep.diagnosis.exact is not None
    assert rep.diagnosis.exact.changes_from(rep.policy) == ["via=fp32"]


@pytest.mark.parametrize(("fmt", "other"), [("fp8e4", "fp8e4m3fn"), ("fp8e4m3fn", "fp8e4")])
def test_diagnosis_finds_e4m3fn_as_e4m3(fmt: str, other: str) -> None:
    x = _data(fmt)
    dump = pp.encode(x, other)  # the device computed the other variant; the bytes are read as fmt
    rep = verify_cast(x, dump, CastPolicy(fmt))
    assert rep.diagnosis is not None and rep.diagnosis.exact is not None
    assert rep.diagnosis.exact.changes_from(rep.policy) == [f"computed_as={other}"]


def test_diagnosis_combined_changes_prefers_fewest() -> None:
    x = _data("fp8e4")
    dump = pp.encode(x, "fp8e4", rounding="rtz", nan="nvidia")
    rep = verify_cast(x, dump, CastPolicy("fp8e4"))
    assert sorted(rep.diagnosis.exact.changes_from(rep.policy)) == ["nan=nvidia", "rounding=rtz"]


def test_diagnosis_relative_to_a_non_default_request() -> None:
    x = _data("bf16")
    dump = pp.encode(x, "bf16")  # plain rne
    rep = verify_cast(x, dump, CastPolicy("bf16", rounding="rtz"))
    assert rep.diagnosis.exact.changes_from(rep.policy) == ["rounding=rne"]


def test_closest_when_nothing_is_exact() -> None:
    x = _data("fp8e5")
    dump = pp.encode(x, "fp8e5", rounding="rtz")
    hit = np.array([300, 700, 1100, 1900, 3000])
    dump[hit] ^= 0x40  # five corrupted elements (flip an exponent bit)
    rep = verify_cast(x, dump, CastPolicy("fp8e5"))
    d = rep.diagnosis
    assert d.exact is None
    assert d.closest is not None and d.closest.changes_from(rep.policy) == ["rounding=rtz"]
    assert d.closest_mismatches == 5
    assert d.stochastic_consistent is False
    assert "cannot be diagnosed without the device's random words" in d.summary()


def test_stochastic_dump_is_consistent_but_not_diagnosed() -> None:
    x = _data("bf16")
    dump = pp.encode(x, "bf16", rounding="stochastic", seed=1234)
    rep = verify_cast(x, dump, CastPolicy("bf16"))
    d = rep.diagnosis
    assert d.exact is None
    assert d.stochastic_consistent is True
    assert "IS consistent with stochastic rounding" in d.summary()


def test_stochastic_with_the_seed_matches() -> None:
    x = _data("fp8e4")
    dump = pp.encode(x, "fp8e4", rounding="stochastic", seed=7)
    rep = verify_cast(x, dump, CastPolicy("fp8e4", rounding="stochastic", seed=7))
    assert rep.comparison.mismatches == 0 and rep.ok and rep.diagnosis is None


def test_diagnose_never_tries_stochastic() -> None:
    d = diagnose(CastPolicy("fp8e4"), _data("fp8e4"), pp.encode(_data("fp8e4"), "fp8e4", rounding="rtz"))
    assert d.exact is not None and d.exact.rounding == "rtz"
    assert d.tried > 20


# ---- dumps of values, typed dumps, counts ------------------------------------------------------

def test_value_dump_of_bf16_in_float32() -> None:
    x = _data("bf16")
    rep = verify_cast(x, pp.quantize(x, "bf16"), CastPolicy("bf16"))
    assert rep.ok and any("decoded float32 values" in n for n in rep.notes)


def test_value_dump_that_is_not_of_the_format_is_an_error() -> None:
    x = np.linspace(-1, 1, 10, dtype=np.float32)
    with pytest.raises(DumpError, match="not bf16 values"):
        verify_cast(x, x + np.float32(1e-6), CastPolicy("bf16"))


def test_ml_dtypes_typed_dump() -> None:
    x = _data("fp8e5")
    rep = verify_cast(x, pp.cast(x, "fp8e5"), CastPolicy("fp8e5"))
    assert rep.ok and rep.notes == []


def test_e4m3fn_typed_dump_read_as_fp8e4_codes() -> None:
    x = np.array([1.0, 2.0, 300.0], np.float32)
    dump = pp.encode(x, "fp8e4m3fn").view(ml_dtypes.float8_e4m3fn)
    rep = verify_cast(x, dump, CastPolicy("fp8e4"))
    assert any("read as fp8e4 codes" in n for n in rep.notes)
    assert rep.comparison.mismatches == 1  # 300 → 0x77 (fp8e4 max 240) vs 0x79 (fn: 288)


def test_counts() -> None:
    x = np.array([1.0, 1000.0, -1000.0, np.inf, np.nan, 0.0], np.float32)
    rep = verify_cast(x, pp.encode(x, "fp8e4", saturate=False), CastPolicy("fp8e4"))
    c = rep.counts
    assert c["input"] == {"nan": 1, "inf": 1, "overflow": 3}
    assert c["expected"]["saturated"] == 3 and c["expected"]["inf"] == 0
    assert c["dumped"]["saturated"] == 0 and c["dumped"]["inf"] == 3 and c["dumped"]["nan"] == 1


def test_element_count_and_shape_errors() -> None:
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(DumpError, match="12"):
        verify_cast(x, np.zeros(11, np.uint16), CastPolicy("bf16"))
    with pytest.raises(DumpError, match="shape"):
        verify_cast(x, np.zeros((3, 4), np.uint16), CastPolicy("bf16"))
    assert verify_cast(x, np.zeros(12, np.uint16), CastPolicy("bf16")).ok  # flat raw dump


def test_integer_dump_of_wrong_width_is_an_error() -> None:
    with pytest.raises(DumpError, match="16-bit"):
        verify_cast(np.zeros(4, np.float32), np.zeros(4, np.uint8), CastPolicy("bf16"))
