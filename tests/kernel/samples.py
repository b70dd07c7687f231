"""Stratified float32 input samples for the kernel tests.

A sample for a format holds, as float32 bit patterns (uint32):
- every rounding boundary of the format: each value of its extended grid (up to a few codes past
  max, where overflow is decided) and each midpoint between neighbours, with ±1..3 float32 ulps
  around each, in both signs;
- the specials (±0, ±inf, quiet and signalling NaNs with payloads, float32 max / min normal /
  subnormals);
- random mantissas in every float32 exponent (both signs), subnormals included;
- uniformly random bit patterns up to the requested size.
"""
from __future__ import annotations

import functools

import numpy as np

from .refmodel import FORMATS, Fmt

SPECIAL_F32_BITS = np.array(
    [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
     0xFF800001, 0x7FA00000, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00001, 0x7F7FFFFF,
     0xFF7FFFFF, 0x00800000, 0x80800000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF,
     0x3F800000, 0xBF800000],
    dtype=np.uint32)


def grid_values(fmt: Fmt, extra: int = 4) -> np.ndarray:
    """float64 values of the extended grid: internal codes 0 .. max_internal + extra."""
    c = np.arange(fmt.max_internal + extra + 1, dtype=np.int64)
    mb = fmt.mantissa_bits
    be, frac = c >> mb, c & ((1 << mb) - 1)
    sig = np.where(be == 0, frac, frac | (1 << mb)).astype(np.float64)
    ex = np.where(be == 0, fmt.qmin, be - fmt.bias - mb).astype(np.int32)
    return np.ldexp(sig, ex)


def _exact_f32_bits(v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        f = v.astype(np.float32)
    ok = np.isfinite(f) & (f.astype(np.float64) == v)
    return f[ok].view(np.uint32)


@functools.lru_cache(maxsize=8)
def boundary_f32_bits(name: str, max_offset: int = 3) -> np.ndarray:
    """Grid values and midpoints of format `name`, ±max_offset float32 ulps, both signs."""
    fmt = FORMATS[name]
    v = grid_values(fmt)
    mids = (v[:-1] + v[1:]) / 2  # exact in float64
    base = np.concatenate([_exact_f32_bits(v), _exact_f32_bits(mids)]).astype(np.int64)
    offs = np.arange(-max_offset, max_offset + 1, dtype=np.int64)
    pts = (base[:, None] + offs[None, :]).ravel()
    pts = pts[(pts >= 0) & (pts <= 0x7FFFFFFF)]
    both = np.concatenate([pts, pts | 0x80000000])
    return both.astype(np.uint32)  # duplicates (offsets overlapping) are harmless


def per_exponent_f32_bits(per_exponent: int, rng: np.random.Generator) -> np.ndarray:
    """`per_exponent` random mantissas for each of the 256 exponent fields and both signs."""
    ex = np.repeat(np.arange(512, dtype=np.uint32), per_exponent)  # sign+exponent
    mant = rng.integers(0, 1 << 23, ex.size, dtype=np.uint32)
    return (ex << np.uint32(23)) | mant


@functools.lru_cache(maxsize=2)
def stratified_f32_bits(name: str, total: int = 1 << 24, seed: int = 2024) -> np.ndarray:
    """A stratified sample of at least `total` float32 bit patterns for format `name`."""
    rng = np.random.default_rng([seed, len(name)])
    parts = [SPECIAL_F32_BITS, boundary_f32_bits(name), per_exponent_f32_bits(256, rng)]
    have = sum(p.size for p in parts)
    if have < total:
        parts.append(rng.integers(0, 1 << 32, total - have, dtype=np.uint64).astype(np.uint32))
    out = np.concatenate(parts)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=6)
def mode_sample_f32_bits(name: str, size: int = 1 << 21, seed: int = 7) -> np.ndarray:
    """A smaller boundary-heavy sample for the many (rounding × saturate × nan) combinations:
    all specials, a random subset of the boundaries (±1 ulp), every exponent, random bits."""
    rng = np.random.default_rng([seed, len(name)])
    b = boundary_f32_bits(name, 1)
    if b.size > size // 2:
        b = rng.choice(b, size // 2, replace=False)
    rest = size - b.size - SPECIAL_F32_BITS.size
    pe = per_exponent_f32_bits(max(1, rest // 2 // 512), rng)
    uni = rng.integers(0, 1 << 32, max(0, rest - pe.size), dtype=np.uint64).astype(np.uint32)
    return np.concatenate([SPECIAL_F32_BITS, b, pe, uni])


def f32(bits: np.ndarray) -> np.ndarray:
    """View uint32 bit patterns as float32."""
    return np.asarray(bits, np.uint32).view(np.float32)
