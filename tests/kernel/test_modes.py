"""Every rounding × saturation × NaN policy against the reference model, and the spec's literal
rows (§9 edge table, §3 saturation, §2 rtz / rna, §4 policies)."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from . import refmodel_np as rn
from .edge_table import (
    COLUMNS,
    EDGE_TABLE,
    MODE_ROWS,
    NEG_INF,
    NEG_NAN,
    NEG_OVF,
    NVIDIA_NAN,
    OVERFLOW_ROWS,
    POS_INF,
    POS_NAN,
    POS_OVF,
    SATURATE_ROWS,
)
from .isas import available
from .samples import mode_sample_f32_bits


def _enc1(name: str, bits: int, **kw: object) -> int:
    """encode of one float32 through every code path (they must agree)."""
    x = np.array([bits], np.uint32).view(np.float32)
    got = {isa: int(pp.encode(x, name, isa=isa, **kw)[0]) for isa in available()}  # type: ignore
    assert len(set(got.values())) == 1, {k: hex(v) for k, v in got.items()}
    return got[None]


def _report(bits: np.ndarray, want: np.ndarray, got: np.ndarray, r: np.ndarray | None) -> list:
    bad = np.flatnonzero(want != got)
    return [(hex(int(bits[i])), None if r is None else hex(int(r[i])), hex(int(want[i])),
             hex(int(got[i]))) for i in bad[:8]]


@pytest.mark.parametrize("row", EDGE_TABLE, ids=[r[0] for r in EDGE_TABLE])
def test_edge_table_row(row: tuple) -> None:
    _, bits, codes = row
    got = {n: _enc1(n, bits, rounding="rne", saturate=False, nan="ml_dtypes") for n in COLUMNS}
    assert got == dict(zip(COLUMNS, codes, strict=True))


@pytest.mark.parametrize("row", SATURATE_ROWS, ids=lambda r: f"{r[0]}-{r[1]:#x}")
def test_saturate_true_rows(row: tuple) -> None:
    name, bits, want = row
    assert _enc1(name, bits, saturate=True) == want


@pytest.mark.parametrize("row", OVERFLOW_ROWS, ids=lambda r: f"{r[0]}-{r[1]:#x}")
def test_overflow_rows(row: tuple) -> None:
    name, bits, want = row
    assert _enc1(name, bits, saturate=False) == want


@pytest.mark.parametrize("row", MODE_ROWS, ids=lambda r: f"{r[0]}-{r[1]}-{r[2]:#x}")
def test_rounding_mode_rows(row: tuple) -> None:
    name, rounding, bits, want = row
    assert _enc1(name, bits, rounding=rounding, saturate=False) == want


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_nan_policies(name: str) -> None:
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FA00000], np.uint32)
    x = nans.view(np.float32)
    for sat in (False, True):
        assert np.all(pp.encode(x, name, nan="nvidia", saturate=sat) == NVIDIA_NAN[name])
        ml = pp.encode(x, name, nan="ml_dtypes", saturate=sat).astype(np.int64)
        sign = (nans >> np.uint32(31)).astype(np.int64) << (rm.FORMATS[name].bits - 1)
        assert np.array_equal(ml, rm.FORMATS[name].nan_ml | sign)


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_saturate_none_is_the_neuron_default(name: str) -> None:
    fmt = rm.FORMATS[name]
    with np.errstate(over="ignore"):
        x = np.array([np.inf, -np.inf, 1e30, -1e30, fmt.max_value * 1.01, 3.0], np.float32)
    default = pp.encode(x, name)
    explicit = pp.encode(x, name, saturate=name.startswith("fp8"))
    assert np.array_equal(default, explicit)
    want = rn.encode_np(fmt, x, saturate=None)
    assert np.array_equal(default, want)


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
@pytest.mark.parametrize("rounding", rm.ROUNDINGS)
@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("nan", rm.NAN_POLICIES)
def test_against_model(name: str, rounding: str, saturate: bool, nan: str) -> None:
    bits = mode_sample_f32_bits(name)
    r = None
    kw: dict = {}
    if rounding == "stochastic":
        r = np.random.default_rng(bits.size).integers(0, 1 << 32, bits.size, dtype=np.uint64)
        r = r.astype(np.uint32)
        kw["random_bits"] = r
    want = rn.encode_f32_bits_np(name, bits, rounding=rounding, saturate=saturate, nan=nan,
                                 random_bits=r)
    for isa in available():
        got = pp.encode(bits.view(np.float32), name, rounding=rounding, saturate=saturate,
                        nan=nan, isa=isa, **kw)
        assert _report(bits, want, got, r) == [], isa


# §4 (measured on NVIDIA hardware, __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3); XLA:GPU
# agrees): the nan policy encodes NaN *inputs*; a NaN the conversion makes from a number keeps that
# number's sign. So fp8e4m3fn without saturation: -inf and -overflow -> 0xff under nvidia too.
# (fp32 bits, saturate, rounding, code)
NVIDIA_FN_ROWS = (
    (0xFF800000, False, "rne", 0xFF),  # -inf -> -NaN, sign kept
    (0x7F800000, False, "rne", 0x7F),
    (0xC3FA0000, False, "rne", 0xFF),  # -500 overflows -> -NaN
    (0x43FA0000, False, "rne", 0x7F),  # +500
    (0xC47A0000, False, "rne", 0xFF),  # -1000
    (0xC3EE0000, False, "rne", 0xFF),  # -476
    (0xC3E80000, False, "rne", 0xFE),  # -464 -> -448 (tie to even, no overflow)
    (0xC3E80000, False, "rna", 0xFF),  # -464 ties away -> -480: overflow -> -NaN
    (0xC3F00000, False, "rna", 0xFF),  # -480
    (0xFF800000, False, "rna", 0xFF),
    (0xFF800000, False, "rtz", 0xFF),  # rtz: an infinite input still becomes -NaN ...
    (0xC3FA0000, False, "rtz", 0xFE),  # ... but a finite overflow stops at -max
    (0x7F800000, False, "rtz", 0x7F),
    (0xFF7FFFFF, False, "rtz", 0xFE),
    (0xFFC00000, False, "rne", 0x7F),  # -qNaN input: the policy drops the sign
    (0xFF800001, False, "rtz", 0x7F),  # -sNaN input
    (0x7FC00000, False, "rna", 0x7F),
    (0xFF800000, True, "rne", 0xFE),  # saturating: -inf -> -max, not NaN
    (0xC47A0000, True, "rne", 0xFE),
    (0xFFC00000, True, "rne", 0x7F),
)


@pytest.mark.parametrize("row", NVIDIA_FN_ROWS, ids=lambda r: f"{r[0]:#x}-sat{r[1]}-{r[2]}")
@pytest.mark.parametrize("nan", ["nvidia", "ml_dtypes"])
def test_nvidia_rule_on_fn_overflow(row: tuple, nan: str) -> None:
    bits, sat, rounding, want = row
    if nan == "ml_dtypes" and bits & 0x7FFFFFFF > 0x7F800000:
        want |= bits >> 24 & 0x80  # NaN inputs: ml_dtypes keeps the sign
    assert _enc1("fp8e4m3fn", bits, rounding=rounding, saturate=sat, nan=nan) == want


@pytest.mark.parametrize("nan", ["nvidia", "ml_dtypes"])
@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz", "stochastic"])
def test_fn_made_nan_keeps_sign_on_every_lane(rounding: str, nan: str) -> None:
    # §4 on long arrays, so that every ISA's vector loop (not only its tail) sees the specials:
    # -inf, -NaN, ±overflow and ordinary values interleaved, with and without given random words
    vals = np.array([0xFF800000, 0x7F800000, 0xC47A0000, 0x447A0000, 0xFFC00000, 0x7FC00001,
                     0xBF800000, 0x3F800000, 0xFF7FFFFF, 0x80000000], np.uint32)
    bits = np.tile(vals, 211)
    x = bits.view(np.float32)
    r = np.random.default_rng(7).integers(0, 2**32, bits.size, dtype=np.uint32)
    for kw in ({"seed": 5}, {"random_bits": r}) if rounding == "stochastic" else ({},):
        for isa in available():
            got = pp.encode(x, "fp8e4m3fn", rounding=rounding, saturate=False, nan=nan, isa=isa,
                            **kw)  # type: ignore[arg-type]
            neg_inf, pos_inf = got[bits == 0xFF800000], got[bits == 0x7F800000]
            assert np.all(neg_inf == 0xFF) and np.all(pos_inf == 0x7F), (isa, kw)
            # -1000 and -f32max: overflow -> -NaN, except rtz (-> -max); +1000 -> +NaN / +max
            for b, code, rtz_code in ((0xC47A0000, 0xFF, 0xFE), (0xFF7FFFFF, 0xFF, 0xFE),
                                      (0x447A0000, 0x7F, 0x7E)):
                want = rtz_code if rounding == "rtz" else code
                assert np.all(got[bits == b] == want), (isa, kw, hex(b))
            nan_in = got[(bits == 0xFFC00000) | (bits == 0x7FC00001)]
            signs = (bits[(bits == 0xFFC00000) | (bits == 0x7FC00001)] >> 24) & 0x80
            want_nan = 0x7F if nan == "nvidia" else 0x7F | signs
            assert np.all(nan_in == want_nan), (isa, kw)
            assert np.all(got[bits == 0xBF800000] == 0xB8) and np.all(got[bits == 0x80000000] == 0x80)


@pytest.mark.parametrize("nan", ["nvidia", "ml_dtypes"])
@pytest.mark.parametrize("rounding", ["rne", "rna", "rtz"])
@pytest.mark.parametrize("col", range(len(COLUMNS)), ids=COLUMNS)
def test_special_rows_under_both_policies(col: int, rounding: str, nan: str) -> None:
    rows = ((0xFF800000, NEG_INF[col]), (0x7F800000, POS_INF[col]),
            (0xFF7FFFFF, NEG_OVF[rounding][col]), (0x7F7FFFFF, POS_OVF[rounding][col]),
            (0xFFC00000, NEG_NAN[nan][col]), (0x7FC00000, POS_NAN[nan][col]))
    bits = np.array([b for b, _ in rows] * 97, np.uint32)  # long enough for every vector loop
    want = np.array([c for _, c in rows] * 97, np.uint32)
    for isa in available():
        got = pp.encode(bits.view(np.float32), COLUMNS[col], rounding=rounding, saturate=False,
                        nan=nan, isa=isa)  # type: ignore[arg-type]
        assert _report(bits, want, got.astype(np.uint32), None) == [], isa
        assert _enc1(COLUMNS[col], 0xFF800000, rounding=rounding, saturate=False,
                     nan=nan) == NEG_INF[col]
