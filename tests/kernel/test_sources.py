"""§5 sources: float64, integers and narrow floats are rounded once from their exact value."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from . import refmodel_np as rn
from .isas import available
from .samples import boundary_f32_bits

# Literal double-rounding cases: rounding first to float32 lands exactly on a tie of the
# destination and then goes the wrong way.  (source value, dtype, fmt, correct code)
DOUBLE_ROUNDING = (
    (1 + 2.0**-8 + 2.0**-40, np.float64, "bf16", 0x3F81),  # the spec's example
    (-(1 + 2.0**-8 + 2.0**-40), np.float64, "bf16", 0xBF81),
    (1 + 3 * 2.0**-8 - 2.0**-40, np.float64, "bf16", 0x3F81),  # f32 tie would go to even 0x3f82
    (1 + 2.0**-11 + 2.0**-40, np.float64, "fp16", 0x3C01),
    (1 + 2.0**-11 + 2.0**-40, np.float64, "fp32r", 0x3F802000),
    (1 + 2.0**-4 + 2.0**-40, np.float64, "fp8e4", 0x39),
    (1 + 2.0**-4 + 2.0**-40, np.float64, "fp8e4m3fn", 0x39),
    (1 + 2.0**-3 + 2.0**-40, np.float64, "fp8e5", 0x3D),
    (2.0**-10 + 2.0**-50, np.float64, "fp8e4", 0x01),  # above half the smallest subnormal
    (464 + 2.0**-30, np.float64, "fp8e4m3fn", 0x7F),  # above the 464 tie: overflow -> NaN
    (2**40 + 2**32 + 1, np.int64, "bf16", 0x5381),
    (-(2**40 + 2**32 + 1), np.int64, "bf16", 0xD381),
    (2**63 + 2**55 + 1, np.uint64, "bf16", 0x5F01),
    (2**64 - 1, np.uint64, "bf16", 0x5F80),
    (-(2**63), np.int64, "bf16", 0xDF00),
    (2**30 + 2**19 + 1, np.int64, "fp32r", 0x4E802000),
    (2**30 + 2**19 + 1, np.uint32, "fp32r", 0x4E802000),
    (2**30 + 2**19 + 1, np.int32, "bf16", 0x4E80),
    (2**31 + 2**23 + 1, np.uint32, "bf16", 0x4F01),
)


@pytest.mark.parametrize("row", DOUBLE_ROUNDING, ids=lambda r: f"{r[2]}-{r[0]!r}")
def test_double_rounding_cases(row: tuple) -> None:
    value, dtype, name, want = row
    x = np.array([value], dtype)
    for isa in available():
        got = int(pp.encode(x, name, saturate=False, isa=isa)[0])
        assert got == want, (isa, hex(got))
    ex = rm.exact_from_int(value) if isinstance(value, int) else rm.exact_from_float(value)
    assert rm.encode_exact(rm.FORMATS[name], ex) == want  # the model agrees with the literal


def near_ties_f64(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """float64 values within a few float64 ulps / 2^-30 relative of the format's ties."""
    mids = boundary_f32_bits(name, 0).view(np.float32)
    m = rng.choice(mids[np.isfinite(mids)], n).astype(np.float64)
    rel = rng.choice([0.0, 2.0**-30, -(2.0**-30), 2.0**-45, -(2.0**-45)], n)
    ulps = rng.integers(-2, 3, n)
    v = np.nextafter(m * (1 + rel), np.where(ulps >= 0, np.inf, -np.inf))
    v = np.where(ulps == 0, m * (1 + rel), v)
    raw = rng.integers(0, 1 << 64, n // 4, dtype=np.uint64).view(np.float64)  # any float64
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -5e-324, 2.0**-1074])
    return np.concatenate([v, raw, special])


def ints_near_ties(name: str, dtype: type, n: int, rng: np.random.Generator) -> np.ndarray:
    """Integers of `dtype`: random of every bit length, and ties ±1 of the format."""
    info = np.iinfo(dtype)
    bits = info.bits - (1 if info.min < 0 else 0)
    k = rng.integers(1, bits + 1, n)
    mag = rng.integers(0, 1 << 62, n, dtype=np.uint64) >> np.maximum(62 - k, 0).astype(np.uint64)
    mb = rm.FORMATS[name].mantissa_bits
    tie = (np.uint64(1) << (k - 1).astype(np.uint64)) + (
        np.uint64(1) << np.maximum(k - 2 - mb, 0).astype(np.uint64))
    allv = np.concatenate([mag, tie, tie + np.uint64(1), tie - np.uint64(1)])
    allv = np.minimum(allv, np.uint64(info.max))
    out = allv.astype(dtype)
    if info.min < 0:
        out = np.where(rng.integers(0, 2, out.size) == 1, -out, out).astype(dtype)
        out = np.concatenate([out, np.array([info.min, info.max], dtype)])
    return np.concatenate([out, np.array([0, info.max], dtype)])


def _check(name: str, x: np.ndarray, rounding: str, saturate: bool | None, nan: str) -> None:
    r = None
    kw: dict = {}
    if rounding == "stochastic":
        r = np.random.default_rng(x.size).integers(0, 1 << 32, x.shape, dtype=np.uint64)
        kw["random_bits"] = r = r.astype(np.uint32)
    want = rn.encode_np(name, x, rounding, saturate, nan, r)
    for isa in available():
        got = pp.encode(x, name, rounding=rounding, saturate=saturate, nan=nan, isa=isa, **kw)
        bad = np.flatnonzero(want != got)
        assert bad.size == 0, [(isa, x.dtype.name, repr(x[i]), None if r is None else int(r[i]),
                                hex(int(want[i])), hex(int(got[i]))) for i in bad[:8]]


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
@pytest.mark.parametrize("rounding", rm.ROUNDINGS)
def test_float64_source(name: str, rounding: str) -> None:
    rng = np.random.default_rng([1, len(name), len(rounding)])
    x = near_ties_f64(name, 200000, rng)
    for saturate, nan in ((False, "ml_dtypes"), (True, "nvidia")):
        _check(name, x, rounding, saturate, nan)


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
@pytest.mark.parametrize("rounding", rm.ROUNDINGS)
def test_integer_sources(name: str, rounding: str) -> None:
    rng = np.random.default_rng([2, len(name), len(rounding)])
    for dtype in (np.int8, np.uint8, np.int16, np.uint16):
        info = np.iinfo(dtype)
        _check(name, np.arange(info.min, info.max + 1).astype(dtype), rounding, False, "nvidia")
        _check(name, np.arange(info.min, info.max + 1).astype(dtype), rounding, None, "ml_dtypes")
    for dtype in (np.int32, np.uint32, np.int64, np.uint64):
        x = ints_near_ties(name, dtype, 50000, rng)
        _check(name, x, rounding, False, "ml_dtypes")
        _check(name, x, rounding, True, "ml_dtypes")


NARROW = (np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fn,
          ml_dtypes.float8_e5m2)


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
@pytest.mark.parametrize("rounding", rm.ROUNDINGS)
def test_narrow_float_sources_every_code(name: str, rounding: str) -> None:
    for dt in NARROW:
        n = 1 << (8 * np.dtype(dt).itemsize)
        codes = np.arange(n, dtype=np.uint16 if n > 256 else np.uint8)
        x = codes.view(dt)
        _check(name, x, rounding, False, "ml_dtypes")
        _check(name, x, rounding, True, "nvidia")
