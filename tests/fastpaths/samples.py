"""Stratified inputs for proving the fast paths equal to the reference converter.

The fast kernels compute ``K = m >> s`` rounded, for a shift ``s`` that depends on the format and on
the input's exponent, so every sample below is built around shifts: for each exponent field and
each shift, significands whose dropped bits are 0, 1, just below / at / just above half a quantum
and all ones, with random kept bits. That visits every rounding boundary ±1 ulp of every format at
every exponent (subnormal results included), plus the specials and uniform random patterns.
"""
from __future__ import annotations

import functools

import numpy as np

SPECIAL_F32 = np.array(
    [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
     0xFF800001, 0x7FA00000, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F7FFFFF, 0xFF7FFFFF,
     0x00800000, 0x80800000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x3F800000],
    dtype=np.uint32)


def _low_patterns(s: np.ndarray) -> np.ndarray:
    """For shifts s >= 1 (uint64): 0, 1, half-1, half, half+1, all ones below bit s."""
    one = np.uint64(1)
    half = one << (s - one)
    full = (one << s) - one
    zero = np.zeros_like(s)
    return np.stack([zero, zero + one, half - one, half, half + one, full], axis=-1)


@functools.lru_cache(maxsize=4)
def f32_bits(seed: int = 1, random_count: int = 1 << 20) -> np.ndarray:
    """Float32 bit patterns: every exponent x every shift 1..24 x boundary patterns, both signs."""
    rng = np.random.default_rng(seed)
    eb = np.arange(256, dtype=np.uint64)
    s = np.arange(1, 25, dtype=np.uint64)
    E, S = np.meshgrid(eb, s, indexing="ij")
    low = _low_patterns(S.ravel())  # (n, 6)
    reps = 3
    hi = rng.integers(0, 1 << 23, size=(low.shape[0], 6, reps), dtype=np.uint64)
    keep_mask = ~((np.uint64(1) << S.ravel()) - np.uint64(1))
    man = (hi & keep_mask[:, None, None]) | low[:, :, None]
    man &= np.uint64(0x7FFFFF)
    bits = (E.ravel()[:, None, None] << np.uint64(23)) | man
    bits = bits.ravel().astype(np.uint32)
    rand = rng.integers(0, 1 << 32, size=random_count, dtype=np.uint64).astype(np.uint32)
    allb = np.concatenate([bits, bits | np.uint32(0x80000000), SPECIAL_F32, rand])
    return allb


@functools.lru_cache(maxsize=4)
def f64_bits(seed: int = 2, random_count: int = 1 << 18) -> np.ndarray:
    """Float64 bit patterns around every shift that matters: exponents within reach of the formats
    (|E| <= 200, all of them; every 8th beyond, and the extremes), shifts 1..63, boundary patterns
    (so ties that a detour through float32 would break: 1 + 2^-8 + 2^-40 and its kind)."""
    rng = np.random.default_rng(seed)
    near = np.arange(1023 - 200, 1023 + 201)
    far = np.arange(0, 2048, 8)
    eb = np.unique(np.concatenate([near, far, [0, 1, 2046, 2047]])).astype(np.uint64)
    s = np.arange(1, 53, dtype=np.uint64)
    E, S = np.meshgrid(eb, s, indexing="ij")
    low = _low_patterns(S.ravel())
    hi = rng.integers(0, 1 << 52, size=low.shape, dtype=np.uint64)
    keep_mask = ~((np.uint64(1) << S.ravel()) - np.uint64(1))
    man = ((hi & keep_mask[:, None]) | low) & np.uint64((1 << 52) - 1)
    bits = ((E.ravel()[:, None] << np.uint64(52)) | man).ravel()
    rand = rng.integers(0, 1 << 64, size=random_count, dtype=np.uint64, endpoint=False)
    # float32 values widened, and 1 + 2^-8 + 2^-40-style double-rounding traps explicitly
    with np.errstate(invalid="ignore"):
        wid = f32_bits().view(np.float32)[:200000].astype(np.float64).view(np.uint64)
    traps = np.array([1 + 2**-8 + 2**-40, 1 + 2**-8 - 2**-40, 1 + 2**-11 + 2**-50,
                      1 + 2**-4 + 2**-30, 448 + 16 + 2**-20, 240 + 8 + 2**-30],
                     dtype=np.float64).view(np.uint64)
    allb = np.concatenate([bits, bits | np.uint64(1 << 63), rand, wid, traps, traps | np.uint64(1 << 63)])
    return allb


def int_values(dtype: np.dtype, seed: int = 3) -> np.ndarray:
    """Integers: all values of 8/16-bit types; extremes, powers of two ±1..2 and tie patterns at
    every bit position, the 2^53 frontier and random values for 32/64-bit types."""
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    if dt.itemsize <= 2:
        return np.arange(info.min, info.max + 1, dtype=np.int64).astype(dt)
    rng = np.random.default_rng(seed)
    vals: list[int] = [info.min, info.max, info.min + 1, info.max - 1, 0, 1, -1]
    for k in range(dt.itemsize * 8):
        for base in (1 << k, 3 << k, (1 << k) | 1):
            for low in range(k):
                # kept bits, then a tie / near-tie below bit `low`
                for d in (-1, 0, 1):
                    vals.append(base + (1 << low) + d)
            vals += [base - 2, base - 1, base, base + 1, base + 2]
    for e in (24, 53, 63):
        vals += [(1 << e) + d for d in range(-3, 4)]
    arr = np.array([v for v in vals if info.min <= v <= info.max] +
                   [-v for v in vals if info.min <= -v <= info.max], dtype=object)
    rand = rng.integers(info.min, info.max, size=1 << 16, dtype=dt, endpoint=True)
    small = rng.integers(-(1 << 20) if info.min < 0 else 0, 1 << 20, size=1 << 14).astype(dt)
    return np.concatenate([arr.astype(dt), rand, small])


def random_words(n: int, seed: int = 4) -> np.ndarray:
    """Stochastic-rounding words: half uniform, half from values that sit on thresholds (0, 1,
    2^k and 2^k - 1, 2^31 ± 1, 2^32 - 1)."""
    rng = np.random.default_rng(seed)
    special = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE] +
                       [1 << k for k in range(32)] + [(1 << k) - 1 for k in range(1, 32)] +
                       [(1 << k) + 1 for k in range(1, 32)], dtype=np.uint64).astype(np.uint32)
    u = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    pick = rng.integers(0, special.size, size=n)
    return np.where(rng.random(n) < 0.5, u, special[pick]).astype(np.uint32)
