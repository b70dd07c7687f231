"""An independent, slow, exact reference model of CAST_SEMANTICS.md (the definition of correct).

Written from the spec text only (never from csrc/): every number here is either copied from the
spec's §1 table or derived with exact rational arithmetic (``fractions.Fraction``).  The vectorized
twin in ``refmodel_np.py`` is checked against this file on samples (``test_refmodel.py``).

Vocabulary: a *code* is the raw storage bits of a format (uint8 / uint16 / uint32); an *internal
code* of ``fp32r`` is its 19-bit 1-8-10 code (storage code >> 13).  The *extended grid* of a format
is its set of finite values with the exponent range continued upward without limit (§2: "as if the
exponent range went on").
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np

ROUNDINGS = ("rne", "rtz", "rna", "stochastic")
NAN_POLICIES = ("ml_dtypes", "nvidia")


@dataclass(frozen=True)
class Fmt:
    """Format facts copied from CAST_SEMANTICS.md §1, §3, §4 (storage-level codes)."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    bits: int  # storage width
    shift: int  # storage code = internal code << shift (13 for fp32r)
    max_bits: int  # storage code of +max finite
    inf_bits: int | None  # storage code of +inf (None: no inf)
    nan_ml: int  # §4 nan="ml_dtypes" positive canonical NaN (sign is ORed in)
    nan_nv: int  # §4 nan="nvidia" (sign dropped)
    saturate_default: bool  # §3 saturate=None
    storage: type  # numpy storage dtype
    dtype: object  # numpy dtype of decoded arrays (§1 last column)
    max_value: float

    @property
    def sign_bit(self) -> int:
        """Storage-level sign bit."""
        return 1 << (self.bits - 1)

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal."""
        return 1 - self.bias

    @property
    def qmin(self) -> int:
        """Exponent of the smallest subnormal (ulp of the subnormal range)."""
        return self.emin - self.mantissa_bits

    @property
    def max_internal(self) -> int:
        """Internal code of +max."""
        return self.max_bits >> self.shift

    @property
    def n_codes(self) -> int:
        """Number of storage codes (fp32r: number of internal codes)."""
        return 1 << (1 + self.exponent_bits + self.mantissa_bits)


FORMATS: dict[str, Fmt] = {
    f.name: f
    for f in (
        Fmt("bf16", 8, 7, 127, 16, 0, 0x7F7F, 0x7F80, 0x7FC0, 0x7FFF, False, np.uint16,
            ml_dtypes.bfloat16, float(2**127 * (2 - 2**-7))),
        Fmt("fp16", 5, 10, 15, 16, 0, 0x7BFF, 0x7C00, 0x7E00, 0x7FFF, False, np.uint16,
            np.float16, 65504.0),
        Fmt("fp32r", 8, 10, 127, 32, 13, 0x7F7FE000, 0x7F800000, 0x7FC00000, 0x7FFFE000, False,
            np.uint32, np.float32, float(2**127 * (2 - 2**-10))),
        Fmt("fp8e4", 4, 3, 7, 8, 0, 0x77, 0x78, 0x7C, 0x7F, True, np.uint8,
            ml_dtypes.float8_e4m3, 240.0),
        Fmt("fp8e4m3fn", 4, 3, 7, 8, 0, 0x7E, None, 0x7F, 0x7F, True, np.uint8,
            ml_dtypes.float8_e4m3fn, 448.0),
        Fmt("fp8e5", 5, 2, 15, 8, 0, 0x7B, 0x7C, 0x7E, 0x7F, True, np.uint8,
            ml_dtypes.float8_e5m2, 57344.0),
    )
}
FORMAT_NAMES = tuple(FORMATS)
ALIASES = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "tf32": "fp32r",
    "fp8_e4m3": "fp8e4", "float8_e4m3": "fp8e4", "float8_e4m3fn": "fp8e4m3fn",
    "fp8_e5m2": "fp8e5", "float8_e5m2": "fp8e5",
}
# Helper format (not a pyprecision format): IEEE binary32, used to model int -> float32 (§8).
FP32 = Fmt("fp32", 8, 23, 127, 32, 0, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7FC00000, False,
           np.uint32, np.float32, float(np.finfo(np.float32).max))


def resolve_saturate(fmt: Fmt, saturate: bool | None) -> bool:
    """§3: saturate=None is True for the fp8 formats and False otherwise."""
    return fmt.saturate_default if saturate is None else bool(saturate)


# ----------------------------------------------------------------------------- exact values


@dataclass(frozen=True)
class Exact:
    """An exact source value: sign (0/1), kind ("finite", "inf", "nan") and magnitude."""

    sign: int
    kind: str
    mag: Fraction = Fraction(0)


def exact_from_float(v: float) -> Exact:
    """The exact value of a Python float (float64; float32 widens exactly)."""
    sign = 1 if math.copysign(1.0, v) < 0 else 0
    if math.isnan(v):
        return Exact(sign, "nan")
    if math.isinf(v):
        return Exact(sign, "inf")
    return Exact(sign, "finite", abs(Fraction(v)))


def exact_from_f32_bits(b: int) -> Exact:
    """The exact value of float32 bits."""
    return exact_from_float(struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0])


def exact_from_int(i: int) -> Exact:
    """The exact value of an integer."""
    return Exact(1 if i < 0 else 0, "finite", Fraction(abs(i)))


def _floor_log2(mag: Fraction) -> int:
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    while Fraction(2) ** e > mag:
        e -= 1
    while Fraction(2) ** (e + 1) <= mag:
        e += 1
    return e


def ulp_exponent(fmt: Fmt, mag: Fraction) -> int:
    """Exponent q of the extended-grid spacing 2^q around mag > 0."""
    return max(_floor_log2(mag), fmt.emin) - fmt.mantissa_bits


def neighbours(fmt: Fmt, mag: Fraction) -> tuple[Fraction, Fraction]:
    """(lo, hi): the extended-grid values with lo <= mag < hi, hi = lo + spacing."""
    ulp = Fraction(2) ** ulp_exponent(fmt, mag)
    lo = (mag // ulp) * ulp
    return lo, lo + ulp


def internal_code_of(fmt: Fmt, r: Fraction) -> int:
    """Internal code of an extended-grid magnitude r >= 0 (may exceed the format's range)."""
    if r == 0:
        return 0
    if r < Fraction(2) ** fmt.emin:
        k = r / Fraction(2) ** fmt.qmin
        assert k.denominator == 1, r
        return int(k)
    e = _floor_log2(r)
    k = r / Fraction(2) ** (e - fmt.mantissa_bits)
    assert k.denominator == 1, r
    return ((e - fmt.emin + 1) << fmt.mantissa_bits) + int(k) - (1 << fmt.mantissa_bits)


def nan_code(fmt: Fmt, sign: int, nan: str) -> int:
    """§4: the code of a NaN input (the policy's choice)."""
    if nan == "nvidia":
        return fmt.nan_nv
    assert nan == "ml_dtypes"
    return fmt.nan_ml | (fmt.sign_bit if sign else 0)


def made_nan_code(fmt: Fmt, sign: int) -> int:
    """§4: a NaN the conversion produces from a number (e4m3fn's ±inf and ±overflow) keeps that
    number's sign under either policy."""
    return fmt.nan_ml | (fmt.sign_bit if sign else 0)


def round_magnitude(fmt: Fmt, mag: Fraction, rounding: str, r: int = 0) -> Fraction:
    """§2: round mag > 0 on the extended grid."""
    lo, hi = neighbours(fmt, mag)
    if lo == mag:
        return mag
    if rounding == "rtz":
        return lo
    if rounding == "stochastic":
        f = (mag - lo) / (hi - lo)
        return hi if r < math.floor(f * 2**32) else lo
    below, above = mag - lo, hi - mag
    if below != above:
        return lo if below < above else hi
    if rounding == "rna":
        return hi
    assert rounding == "rne"
    return lo if internal_code_of(fmt, lo) % 2 == 0 else hi


def encode_exact(fmt: Fmt, x: Exact, rounding: str = "rne", saturate: bool | None = False,
                 nan: str = "ml_dtypes", r: int = 0) -> int:
    """The storage code CAST_SEMANTICS.md assigns to the exact value x (r: random word)."""
    sat = resolve_saturate(fmt, saturate)
    sign = fmt.sign_bit if x.sign else 0
    if x.kind == "nan":
        return nan_code(fmt, x.sign, nan)
    if x.kind == "inf":
        if sat:
            return fmt.max_bits | sign
        if fmt.inf_bits is None:
            return made_nan_code(fmt, x.sign)
        return fmt.inf_bits | sign
    if x.mag == 0:
        return sign
    code = internal_code_of(fmt, round_magnitude(fmt, x.mag, rounding, r))
    if code > fmt.max_internal:  # §3: overflow judged on the rounded magnitude
        if sat or rounding == "rtz":
            return fmt.max_bits | sign
        if fmt.inf_bits is None:
            return made_nan_code(fmt, x.sign)
        return fmt.inf_bits | sign
    return (code << fmt.shift) | sign


# ----------------------------------------------------------------------------- decode (§6)


def is_nan_code(fmt: Fmt, code: int) -> bool:
    """Whether a storage code is a NaN of fmt."""
    internal = (code & ~fmt.sign_bit) >> fmt.shift
    if fmt.inf_bits is None:  # fp8e4m3fn: only 0x7f / 0xff
        return internal == (fmt.nan_ml >> fmt.shift)
    return internal > (fmt.inf_bits >> fmt.shift)


def decode_exact(fmt: Fmt, code: int) -> Exact:
    """The exact value of a storage code."""
    sign = 1 if code & fmt.sign_bit else 0
    if is_nan_code(fmt, code):
        return Exact(sign, "nan")
    internal = (code & ~fmt.sign_bit) >> fmt.shift
    if fmt.inf_bits is not None and internal == fmt.inf_bits >> fmt.shift:
        return Exact(sign, "inf")
    m = fmt.mantissa_bits
    be, frac = internal >> m, internal & ((1 << m) - 1)
    if be == 0:
        return Exact(sign, "finite", frac * Fraction(2) ** fmt.qmin)
    return Exact(sign, "finite", ((1 << m) + frac) * Fraction(2) ** (be - fmt.bias - m))


def f32_bits_of(x: Exact) -> int:
    """float32 bits of an exact value that float32 represents (NaN -> quiet NaN with sign)."""
    s = 0x80000000 if x.sign else 0
    if x.kind == "nan":
        return 0x7FC00000 | s
    if x.kind == "inf":
        return 0x7F800000 | s
    v = float(x.mag)
    assert Fraction(v) == x.mag
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    assert Fraction(struct.unpack("<f", struct.pack("<I", b))[0]) == x.mag, "not exact in f32"
    return b | s


def decode_bits(fmt: Fmt, code: int) -> int:
    """§6: float32 bits that decode(code) must produce."""
    x = decode_exact(fmt, code)
    if x.kind == "nan" and fmt.name == "bf16":
        return code << 16  # payload kept, as ml_dtypes does
    return f32_bits_of(x)


# ----------------------------------------------------------------------------- float -> int (§8)

INT_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


def float_to_int_exact(x: Exact, dtype: type) -> int:
    """§8: truncate toward zero, saturate, NaN -> 0, ±inf -> max/min, negative -> 0 unsigned."""
    info = np.iinfo(dtype)
    if x.kind == "nan":
        return 0
    if x.kind == "inf":
        return int(info.min) if x.sign else int(info.max)
    t = math.floor(x.mag) * (-1 if x.sign else 1)
    return max(int(info.min), min(int(info.max), t))
