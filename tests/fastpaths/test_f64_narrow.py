"""float64 sources under rne / rtz / rna narrowed to float32 with round-to-odd, then rounded by the
float32 kernels (AVX2: csrc/kern_narrow_avx2.h; docs/decisions/speed.md S18): every fast ISA ==
the reference converter, which rounds the float64 value once, on samples built around the
round-to-odd boundaries of every format at every magnitude.

The argument (speed.md S18) needs every target point and every target midpoint to be an even
float32 point; the samples put inputs on and next to them: exact ties of the target, ties ± 1
float64 ulp, ties ± half and ± one float32 ulp (where a float32 rounding to nearest would land on
the tie or jump it), float32 values and their float64 neighbours, in every float64 binade from
2^-152 to 2^129 (float32's subnormals, every format's subnormals and overflow, FLT_MAX..2^128),
sparser below 2^-152 and above 2^129, float64 subnormals, the specials and NaN payloads."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, FORMATS, assert_same, encode_all_ways

ROUNDINGS3 = ["rne", "rtz", "rna"]
FLT_MAX64 = 0x47EFFFFFE0000000  # FLT_MAX as float64 bits
SPECIAL_F64 = np.array(
    [0x0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000,  # ±0, ±inf
     0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000000000001,
     0x7FF4000000000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x7FF00000FFFFFFFF,
     0x7FF0000020000000, 0x7FF000001FFFFFFF, 0xFFF7FFFFFFFFFFFF, 0x7FFC000000000001,
     FLT_MAX64, FLT_MAX64 + 1, FLT_MAX64 - 1, FLT_MAX64 + (1 << 28), FLT_MAX64 + (1 << 29) - 1,
     0x47EFFFFFFFFFFFFF, 0x47F0000000000000, 0x47F0000000000001, 0x7FEFFFFFFFFFFFFF,
     0x0000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000,  # float64 subnormals, min normal
     0x36A0000000000000, 0x36A0000000000001, 0x369FFFFFFFFFFFFF,  # 2^-149 and neighbours
     0x3690000000000000, 0x3690000000000001, 0x368FFFFFFFFFFFFF,  # 2^-150
     0x36A8000000000000, 0x36A7FFFFFFFFFFFF, 0x36A8000000000001,  # 1.5 * 2^-149
     0x3790000000000001, 0x3F50000000000001,  # issue 16's double-rounding traps
     0x3FF0100000000001, 0x3FF0100000000000, 0x3FF00FFFFFFFFFFF, 0x3FF0000000000001],
    dtype=np.uint64)


def _patterns(s: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Low bits for a rounding shift s (bits of the float64 significand below the target's
    quantum) and b (below float32's): 0, 1, the tie h = 2^(s-1) and h ± 1, all ones; h ± 2^(b-1)
    (± half a float32 ulp) and ± one more float64 ulp; h ± 2^b (± a float32 ulp); a float32 value's
    neighbours 2^b ± 1, 2^(b-1). Masked to s bits (a pattern that does not fit becomes another
    value, harmlessly)."""
    one = np.uint64(1)
    h = one << (s - one)
    q = one << (b - one)
    f32ulp = one << b
    pats = [h * 0, h * 0 + one, h - one, h, h + one, (h << one) - one, h + q, h - q, h + q + one,
            h - q - one, h + f32ulp, h - f32ulp, f32ulp, f32ulp - one, f32ulp + one, q]
    return np.stack(pats, axis=-1) & ((h << one) - one)[..., None]


def _around(anchors: list[float]) -> np.ndarray:
    """Each anchor A (exact float64), its float64 neighbours, A ± half and ± one float32 ulp (at
    A's magnitude, 2^-149 in float32's subnormal range) and those ± one float64 ulp."""
    out: list[float] = []
    for a in anchors:
        u32 = 2.0 ** (max(int(np.floor(np.log2(a))), -126) - 23)
        for d in (0.0, u32 / 2, -u32 / 2, u32, -u32):
            v = np.float64(a + d)
            out += [v, np.nextafter(v, np.inf), np.nextafter(v, -np.inf)]
    return np.array(out, np.float64).view(np.uint64)


def _edges() -> np.ndarray:
    """Each format's max, the overflow tie above it and the next value, its min normal and the
    tie below it, its smallest subnormal, half and 1.5 times it; float32's FLT_MAX, 2^128,
    2^-126, 2^-149, 2^-150 (and everything _around them)."""
    anchors = [float(np.finfo(np.float32).max), 2.0**128, 2.0**-126, 2.0**-149, 2.0**-150]
    for name in FORMATS:
        f = pyprecision.format(name)
        ulp = 2.0 ** (int(np.floor(np.log2(f.max))) - f.mantissa_bits)
        q = f.min_subnormal
        anchors += [f.max, f.max + ulp / 2, f.max + ulp, f.min_normal, f.min_normal - q / 2, q,
                    q / 2, 1.5 * q]
    return _around(anchors)


@functools.lru_cache(maxsize=1)
def narrow_bits() -> np.ndarray:
    """The stratified float64 sample (bits), both signs; see the module docstring."""
    rng = np.random.default_rng(16)
    near = np.arange(1023 - 152, 1023 + 130)  # 2^-152 .. 2^129: every binade
    far = np.concatenate([np.arange(0, 1023 - 152, 5), np.arange(1023 + 130, 2047, 5), [2046]])
    parts = []
    for ebs, reps in ((near, 3), (far, 1)):
        eb = ebs.astype(np.uint64)
        s = np.arange(1, 53, dtype=np.uint64)
        E, S = np.meshgrid(eb, s, indexing="ij")
        e_unb = np.maximum(E.astype(np.int64), 1) - 1023
        b = np.clip(29 + np.maximum(0, -126 - e_unb), 1, 52).astype(np.uint64)
        low = _patterns(S, b)  # (neb, 52, 16)
        hi = rng.integers(0, 1 << 52, size=low.shape + (reps,), dtype=np.uint64)
        keep = ~((np.uint64(1) << S) - np.uint64(1))
        man = ((hi & keep[..., None, None]) | low[..., None]) & np.uint64((1 << 52) - 1)
        parts.append(((E[..., None, None] << np.uint64(52)) | man).ravel())
    # the top of float32's last binade: FLT_MAX's kept bits (and the value below it) with any
    # low 29 bits, so values between FLT_MAX and 2^128
    low29 = np.concatenate([rng.integers(0, 1 << 29, 4096, dtype=np.uint64),
                            _patterns(np.full(1, 29, np.uint64), np.full(1, 28, np.uint64))[0]])
    for top in (FLT_MAX64, FLT_MAX64 - (1 << 29)):
        parts.append(np.uint64(top) | low29)
    parts.append(_edges())
    bits = np.unique(np.concatenate(parts))
    rand = rng.integers(0, 1 << 64, size=1 << 16, dtype=np.uint64, endpoint=False)
    sign = np.uint64(1 << 63)
    allb = np.concatenate([bits, bits | sign, SPECIAL_F64, SPECIAL_F64 ^ sign, rand])
    rng.shuffle(allb)
    return allb


def test_the_sample_reaches_every_binade_and_the_specials() -> None:
    """The sample is what the docstring says: every float64 binade 2^-152..2^129, the float64
    subnormals, inputs above FLT_MAX below 2^128, NaNs with payloads of both signs."""
    bits = narrow_bits()
    eb = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    assert set(range(1023 - 152, 1023 + 130)) <= set(eb.tolist())
    assert (eb == 0).sum() > 1000 and (eb == 2047).sum() >= 2 * 16
    x = bits.view(np.float64)
    with np.errstate(invalid="ignore"):
        above = (np.abs(x) > np.float64(np.finfo(np.float32).max)) & (np.abs(x) < 2.0**128)
    assert above.sum() > 1000


@pytest.mark.parametrize("rounding", ROUNDINGS3)
@pytest.mark.parametrize("fmt", FORMATS)
def test_f64_round_to_odd_stratified(fmt: str, rounding: str) -> None:
    x = narrow_bits().view(np.float64)
    for saturate in (False, True):
        for nan in ("ml_dtypes", "nvidia"):
            encode_all_ways(x, fmt, rounding, saturate, nan, None, "f64 narrowed")


# Hand-derived results (CAST_SEMANTICS.md §2-§4), the reference not consulted: (float64 bits,
# format, rounding, saturate, nan, code). A detour through float32 rounded to nearest breaks the
# first two rows.
HAND = [
    # 2^-134 (1 + 2^-52): just above half of bf16's smallest subnormal 2^-133
    (0x3790000000000001, "bf16", "rne", False, "ml_dtypes", 0x0001),
    (0x3790000000000001, "bf16", "rna", False, "ml_dtypes", 0x0001),
    (0x3790000000000001, "bf16", "rtz", False, "ml_dtypes", 0x0000),
    (0x3790000000000000, "bf16", "rne", False, "ml_dtypes", 0x0000),  # the tie itself: even
    (0x3790000000000000, "bf16", "rna", False, "ml_dtypes", 0x0001),
    # 2^-10 (1 + 2^-52): just above half of e4m3fn's smallest subnormal 2^-9
    (0x3F50000000000001, "fp8e4m3fn", "rne", True, "ml_dtypes", 0x01),
    (0xBF50000000000001, "fp8e4m3fn", "rne", True, "ml_dtypes", 0x81),
    (0x3F50000000000001, "fp8e4m3fn", "rtz", True, "ml_dtypes", 0x00),
    # 1 + 2^-8 + 2^-52 (bf16 tie + 1 ulp) -> up; 1 + 2^-8 - 2^-52 -> down
    (0x3FF0100000000001, "bf16", "rne", False, "ml_dtypes", 0x3F81),
    (0x3FF00FFFFFFFFFFF, "bf16", "rna", False, "ml_dtypes", 0x3F80),
    # below 2^-149: zero with its sign (rna: far below half of every smallest subnormal)
    (0x3680000000000000, "fp16", "rna", False, "ml_dtypes", 0x0000),
    (0xB680000000000001, "fp16", "rne", False, "ml_dtypes", 0x8000),
    (0x0000000000000001, "fp32r", "rna", False, "ml_dtypes", 0x00000000),
    # above FLT_MAX (truncation gives FLT_MAX, odd): each format's overflow result
    (0x47F0000000000000, "bf16", "rne", False, "ml_dtypes", 0x7F80),  # 2^128
    (0x47EFFFFFF0000000, "bf16", "rtz", False, "ml_dtypes", 0x7F7F),  # rtz stops at max (K2)
    (0xC7F0000000000000, "bf16", "rne", True, "ml_dtypes", 0xFF7F),
    (0x47EFFFFFF0000000, "fp32r", "rne", False, "ml_dtypes", 0x7F800000),
    (0x47EFFFFFF0000000, "fp32r", "rna", True, "ml_dtypes", 0x7F7FE000),
    (0x7FEFFFFFFFFFFFFF, "fp16", "rne", False, "ml_dtypes", 0x7C00),
    (0x7FEFFFFFFFFFFFFF, "fp8e4", "rna", False, "ml_dtypes", 0x78),
    (0xFFEFFFFFFFFFFFFF, "fp8e5", "rne", True, "ml_dtypes", 0xFB),
    # e4m3fn: an overflow made NaN keeps its sign under either policy (K1)
    (0xC7F0000000000000, "fp8e4m3fn", "rne", False, "nvidia", 0xFF),
    (0x47F0000000000000, "fp8e4m3fn", "rna", False, "nvidia", 0x7F),
    (0xFFF0000000000000, "fp8e4m3fn", "rtz", False, "nvidia", 0xFF),
    (0xC7F0000000000000, "fp8e4m3fn", "rtz", False, "nvidia", 0xFE),  # rtz: -max
    # NaN inputs: the policy's code, by sign only (payloads differ)
    (0xFFF0000000000001, "bf16", "rne", False, "ml_dtypes", 0xFFC0),
    (0xFFF0000000000001, "bf16", "rne", False, "nvidia", 0x7FFF),
    (0x7FF7FFFFFFFFFFFF, "fp16", "rtz", False, "ml_dtypes", 0x7E00),
    (0xFFF8000000000000, "fp32r", "rna", False, "ml_dtypes", 0xFFC00000),
    (0xFFF8000000000000, "fp8e4m3fn", "rne", True, "nvidia", 0x7F),
    (0xFFF0000020000000, "fp8e5", "rne", False, "ml_dtypes", 0xFE),
]


@pytest.mark.parametrize("bits,fmt,rounding,saturate,nan,code", HAND,
                         ids=[f"{r[0]:#x}-{r[1]}-{r[2]}-{r[3]}-{r[4]}" for r in HAND])
def test_hand_derived_results(bits: int, fmt: str, rounding: str, saturate: bool, nan: str,
                              code: int) -> None:
    x = np.full(37, bits, np.uint64).view(np.float64)  # one vector and a tail
    for isa in ["reference", *FAST_ISAS]:
        got = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate, nan=nan, isa=isa)
        assert got.tolist() == [code] * 37, f"isa={isa}: {int(got[0]):#x}"


def test_a_float32_detour_breaks_the_traps() -> None:
    """The two traps are real: rounding to float32 to nearest first gives the other code."""
    x = np.array([0x3790000000000001, 0x3F50000000000001], np.uint64).view(np.float64)
    assert pyprecision.encode(x[:1].astype(np.float32), "bf16").tolist() == [0]
    assert pyprecision.encode(x[1:].astype(np.float32), "fp8e4m3fn").tolist() == [0]


LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 2047, 2048, 2049, 4095, 4097]


@pytest.mark.parametrize("fmt", FORMATS)
def test_lengths_and_offsets(fmt: str) -> None:
    """Lengths around the 8-element step, the vectors of every float32 kernel and the driver's
    2048-element block, at unaligned starts, streaming forced and not."""
    x = narrow_bits()[: 4097 + 8].view(np.float64)
    for rounding in ROUNDINGS3:
        for start in (0, 1, 5):
            for n in LENGTHS:
                encode_all_ways(x[start:start + n], fmt, rounding, False, "ml_dtypes", None,
                                f"n={n} start={start}")


@pytest.mark.parametrize("rounding", ROUNDINGS3)
def test_two_threads(rounding: str) -> None:
    """The pool's chunks (odd starts and lengths), each worker narrowing under its own MXCSR."""
    base = narrow_bits()
    n = (1 << 19) + 12345
    x = np.resize(base, n + 3)[3:].view(np.float64)
    for fmt in FORMATS:
        for saturate in (False, True):
            ref = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate,
                                     isa="reference", threads=1)
            for isa in FAST_ISAS:
                got = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate, isa=isa,
                                         threads=2)
                assert_same(got, ref, x, f"{fmt} {rounding} sat={saturate} isa={isa} threads=2")
