"""The reference model of ``refmodel.py``, vectorized with NumPy integer arithmetic.

Same definitions, written over arrays: a source value is decomposed exactly into
(sign, kind, M, E) with value = M * 2^E (M an unsigned 64-bit integer), then rounded on the
extended grid with integer shifts.  ``test_refmodel.py`` proves it equal to the Fraction model on
samples and to ml_dtypes / numpy on millions of inputs, so the kernel tests can use it at speed.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .refmodel import FORMATS, Fmt, resolve_saturate

FINITE, INF, NAN = 0, 1, 2
CHUNK = 1 << 20
_U64 = np.uint64


def _u(v: int) -> np.uint64:
    return np.uint64(v)


def bit_length(m: np.ndarray) -> np.ndarray:
    """Exact bit length of each uint64 (0 for 0)."""
    m = m.copy()
    n = np.zeros(m.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        t = m >> _u(s)
        nz = t != 0
        m = np.where(nz, t, m)
        n += nz * s
    return n + (m != 0)


class Parts:
    """Exact decomposition of source values: value = (-1)^sign * M * 2^E, or inf / NaN."""

    def __init__(self, sign: np.ndarray, kind: np.ndarray, m: np.ndarray, e: np.ndarray):
        self.sign, self.kind, self.m, self.e = sign, kind, m, e

    def __getitem__(self, sl: slice) -> Parts:
        return Parts(self.sign[sl], self.kind[sl], self.m[sl], self.e[sl])

    def __len__(self) -> int:
        return len(self.sign)


def _float_parts(bits: np.ndarray, ebits: int, mbits: int, bias: int, width: int) -> Parts:
    b = bits.astype(_U64)
    sign = (b >> _u(width - 1)).astype(np.uint8)
    be = ((b >> _u(mbits)) & _u((1 << ebits) - 1)).astype(np.int64)
    frac = b & _u((1 << mbits) - 1)
    emax = (1 << ebits) - 1
    kind = np.where(be == emax, np.where(frac == 0, INF, NAN), FINITE).astype(np.int8)
    m = np.where(be == 0, frac, frac | _u(1 << mbits))
    e = np.where(be == 0, 1 - bias - mbits, be - bias - mbits)
    return Parts(sign, kind, m, e)


def parts_from_f32_bits(bits: np.ndarray) -> Parts:
    """Decompose float32 bit patterns."""
    return _float_parts(bits.ravel(), 8, 23, 127, 32)


def parts_from_int(x: np.ndarray) -> Parts:
    """Decompose integers of any numpy integer dtype exactly."""
    x = x.ravel()
    if x.dtype.kind == "u":
        m = x.astype(_U64)
        sign = np.zeros(x.shape, np.uint8)
    else:
        x64 = x.astype(np.int64)
        sign = (x64 < 0).astype(np.uint8)
        u = x64.view(_U64)
        m = np.where(sign == 1, (~u) + _u(1), u)  # two's complement magnitude, 2^63 included
    return Parts(sign, np.zeros(x.shape, np.int8), m, np.zeros(x.shape, np.int64))


def parts_from_array(x: np.ndarray) -> Parts:
    """Decompose any accepted source array (§5): floats widen exactly, ints are exact."""
    x = np.asarray(x)
    dt = x.dtype
    if dt.kind in "iu":
        return parts_from_int(x)
    if dt == np.float64:
        return _float_parts(x.ravel().view(_U64), 11, 52, 1023, 64)
    if dt == np.float32:
        return parts_from_f32_bits(np.ascontiguousarray(x).view(np.uint32))
    narrow = {np.dtype(np.float16): "fp16", np.dtype(ml_dtypes.bfloat16): "bf16",
              np.dtype(ml_dtypes.float8_e4m3): "fp8e4",
              np.dtype(ml_dtypes.float8_e4m3fn): "fp8e4m3fn",
              np.dtype(ml_dtypes.float8_e5m2): "fp8e5"}
    if dt in narrow:
        fmt = FORMATS[narrow[dt]]
        bits = np.ascontiguousarray(x).view(fmt.storage)
        return parts_from_f32_bits(decode_np(fmt, bits))
    raise TypeError(f"unsupported source dtype {dt}")


def _nan_codes(fmt: Fmt, sign: np.ndarray, nan: str) -> np.ndarray:
    if nan == "nvidia":
        return np.full(sign.shape, fmt.nan_nv, np.int64)
    assert nan == "ml_dtypes"
    return fmt.nan_ml | (sign.astype(np.int64) << (fmt.bits - 1))


def _round(fmt: Fmt, p: Parts, rounding: str, r: np.ndarray | None) -> np.ndarray:
    """Unbounded internal code of the rounded magnitude of finite nonzero parts."""
    mb = fmt.mantissa_bits
    m, e = p.m, p.e
    top = e + bit_length(m) - 1
    q = np.maximum(top, fmt.emin) - mb
    s = q - e  # right shift that brings M onto the grid (<= 0: exact)
    neg = np.maximum(-s, 0)
    sh = np.clip(s, 0, 63).astype(_U64)
    kept = np.where(s <= 0, m << np.minimum(neg, 63).astype(_U64),
                    np.where(s >= 64, _u(0), m >> sh))
    rem = np.where(s <= 0, _u(0), np.where(s >= 64, m, m & ((_u(1) << sh) - _u(1))))
    half = _u(1) << np.clip(s - 1, 0, 63).astype(_U64)
    in64 = (s >= 1) & (s <= 64)
    gt = in64 & (rem > half)
    eq = in64 & (rem == half)
    odd = (kept & _u(1)) == 1
    if rounding == "rne":
        up = gt | (eq & odd)
    elif rounding == "rna":
        up = gt | eq
    elif rounding == "rtz":
        up = np.zeros(m.shape, bool)
    elif rounding == "stochastic":
        assert r is not None
        small = s <= 32
        t_small = rem << np.clip(32 - s, 0, 63).astype(_U64)
        t_big = np.where(s - 32 >= 64, _u(0), rem >> np.clip(s - 32, 0, 63).astype(_U64))
        t = np.where(s <= 0, _u(0), np.where(small, t_small, t_big))
        up = r.astype(_U64) < t
    else:
        raise ValueError(rounding)
    kept = kept + up.astype(_U64)
    carry = kept >> _u(mb + 1) != 0
    kept = np.where(carry, kept >> _u(1), kept)
    q = q + carry
    return ((q - fmt.qmin) << mb) + kept.astype(np.int64)


def _encode_parts(fmt: Fmt, p: Parts, rounding: str, sat: bool, nan: str,
                  r: np.ndarray | None) -> np.ndarray:
    sign_c = p.sign.astype(np.int64) << (fmt.bits - 1)
    nanc = _nan_codes(fmt, p.sign, nan)
    maxc = fmt.max_bits | sign_c
    # non-saturated overflow; §4: a NaN made from a number keeps its sign under either policy
    big = (fmt.nan_ml | sign_c) if fmt.inf_bits is None else (fmt.inf_bits | sign_c)
    finite = (p.kind == FINITE) & (p.m != 0)
    code = np.zeros(len(p), np.int64)
    if finite.any():
        code[finite] = _round(fmt, p[finite], rounding, None if r is None else r[finite])
    over = finite & (code > fmt.max_internal)
    out = np.where(finite, (code << fmt.shift) | sign_c, sign_c)
    over_val = maxc if (sat or rounding == "rtz") else big
    out = np.where(over, over_val, out)
    out = np.where(p.kind == INF, maxc if sat else big, out)
    out = np.where(p.kind == NAN, nanc, out)
    return out.astype(fmt.storage)


def encode_parts_np(fmt: Fmt, p: Parts, rounding: str = "rne", saturate: bool | None = False,
                    nan: str = "ml_dtypes", random_bits: np.ndarray | None = None) -> np.ndarray:
    """Storage codes for decomposed sources, in chunks of CHUNK elements (flat)."""
    sat = resolve_saturate(fmt, saturate)
    r = None if random_bits is None else np.asarray(random_bits, np.uint32).ravel()
    out = np.empty(len(p), fmt.storage)
    for i in range(0, len(p), CHUNK):
        sl = slice(i, i + CHUNK)
        out[sl] = _encode_parts(fmt, p[sl], rounding, sat, nan, None if r is None else r[sl])
    return out


def encode_np(fmt: Fmt | str, x: np.ndarray, rounding: str = "rne",
              saturate: bool | None = False, nan: str = "ml_dtypes",
              random_bits: np.ndarray | None = None) -> np.ndarray:
    """Reference encode of any accepted source array; result has x's shape."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    x = np.asarray(x)
    return encode_parts_np(fmt, parts_from_array(x), rounding, saturate, nan,
                           random_bits).reshape(x.shape)


def encode_f32_bits_np(fmt: Fmt | str, bits: np.ndarray, **kw: object) -> np.ndarray:
    """Reference encode of float32 inputs given as uint32 bit patterns."""
    return encode_np(fmt, np.asarray(bits, np.uint32).view(np.float32), **kw)  # type: ignore


def decode_np(fmt: Fmt | str, codes: np.ndarray) -> np.ndarray:
    """§6: float32 bits (uint32) of decode(codes), exact."""
    fmt = FORMATS[fmt] if isinstance(fmt, str) else fmt
    c = np.asarray(codes).astype(np.int64)
    sign = (c >> (fmt.bits - 1)) & 1
    internal = (c & ~fmt.sign_bit) >> fmt.shift
    mb = fmt.mantissa_bits
    be, frac = internal >> mb, internal & ((1 << mb) - 1)
    sig = np.where(be == 0, frac, frac | (1 << mb))
    ex = np.where(be == 0, fmt.qmin, be - fmt.bias - mb)
    val = np.ldexp(sig.astype(np.float64), ex.astype(np.int32))  # exact in float64
    with np.errstate(over="ignore"):
        bits = np.abs(val).astype(np.float32).view(np.uint32).astype(np.int64)
    nan_internal = fmt.nan_ml >> fmt.shift
    if fmt.inf_bits is None:
        is_nan = internal == nan_internal
        is_inf = np.zeros(c.shape, bool)
    else:
        inf_internal = fmt.inf_bits >> fmt.shift
        is_nan, is_inf = internal > inf_internal, internal == inf_internal
    bits = np.where(is_inf, 0x7F800000, bits)
    nanbits = (c << 16) if fmt.name == "bf16" else (0x7FC00000 | np.zeros_like(c))
    bits = np.where(is_nan, nanbits & 0x7FFFFFFF, bits) | (sign << 31)
    return bits.astype(np.uint32)


def fp32r_rne_bittrick(bits: np.ndarray) -> np.ndarray:
    """A second, independent fp32r RNE reference (saturate=False, nan=ml_dtypes): the classic
    add-0xfff-plus-lsb bit trick on float32 bits; NaN -> 0x7fc00000 | sign."""
    b = np.asarray(bits, np.uint32)
    lsb = (b >> np.uint32(13)) & np.uint32(1)
    r = (b + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000)
    isnan = (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(isnan, (b & np.uint32(0x80000000)) | np.uint32(0x7FC00000), r)


def float_to_int_np(x: np.ndarray, dtype: type) -> np.ndarray:
    """§8 on float16/32/64 arrays: trunc, saturate, NaN -> 0 (exact comparisons in float64)."""
    info = np.iinfo(dtype)
    v = np.asarray(x).astype(np.float64)  # exact widening
    t = np.trunc(v)
    lo, hi = float(info.min), float(info.max) + 1.0  # both powers of two (or 0): exact
    sat_hi, sat_lo, nan = t >= hi, t < lo, np.isnan(t)
    safe = np.where(sat_hi | sat_lo | nan, 0.0, t)
    out = safe.astype(dtype)
    out = np.where(sat_hi, info.max, out)
    out = np.where(sat_lo, info.min, out)
    return np.where(nan, 0, out).astype(dtype)


def int_to_f32_np(x: np.ndarray) -> np.ndarray:
    """Integers -> float32 rounded once RNE (modelled with the exact grid of binary32)."""
    from .refmodel import FP32
    return encode_parts_np(FP32, parts_from_int(np.asarray(x)), "rne", False,
                           "ml_dtypes").reshape(np.shape(x)).view(np.float32)


def int_dot_model(a: np.ndarray, b: np.ndarray, out_dtype: type = np.int32) -> np.ndarray:
    """The HLO integer-dot rewrite: f32 operands, f32 products, sequential K-order f32
    accumulation without FMA, then §8 float -> int."""
    af, bf = int_to_f32_np(a), int_to_f32_np(b)
    acc = np.zeros((af.shape[0], bf.shape[1]), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(af.shape[1]):
            prod = af[:, k, None] * bf[None, k, :]  # float32 * float32 -> float32 (RNE)
            acc = acc + prod  # separate rounding: no FMA
    return float_to_int_np(acc, out_dtype)
