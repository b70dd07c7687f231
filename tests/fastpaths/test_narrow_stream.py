"""int32 and float64 sources under rne / rtz / rna into large outputs (docs/decisions/speed.md S23):
each step narrowed to float32 rounded to odd in an L1 buffer, then the set's float32 kernel that
streams its own output (enc_stream) straight to the destination; where enc_stream has no kernel for
the case (saturating fp16, say) the block path as before. Against the reference converter: every
format, rounding, saturation and NaN policy, destinations at every offset from a 64-byte boundary
(the first step runs up to it), lengths around the 1024-element steps, both threads; and under the
caller's MXCSR (every rounding mode, FTZ | DAZ), which the int32 narrowing sets aside for its own
(RC = toward zero) and gives back."""
from __future__ import annotations

import ctypes
import platform
from typing import Any

import numpy as np
import pytest

import pyprecision
from tests.kernel.test_fpenv import csr  # noqa: F401 - the MXCSR helper fixture

from .conftest import FAST_ISAS, FORMATS, assert_same, streaming
from .samples import int_values
from .test_f64_narrow import narrow_bits

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}
x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="MXCSR is x86's")


def int32_sample() -> np.ndarray:
    """int32 values where round-to-odd at 24 bits decides: 2^k - 1, 2^k, 2^k + 1 and the
    midpoints of every binade's float32 and format quanta, both signs, INT32_MIN / MAX, 0, and
    the project's int32 sample (random values of every magnitude)."""
    v: list[int] = [0, 1, -1, 2**31 - 1, -(2**31), -(2**31) + 1]
    for k in range(1, 31):
        for d in (-3, -2, -1, 0, 1, 2, 3):
            v.append(2**k + d)
        for q in range(max(k - 12, 0), k):  # quanta 2^q of a format with k - q significant bits
            for d in (-1, 0, 1):
                v.append(2**k + 2**q * 3 // 2 + d if q else 2**k + 1 + d)
                v.append(2**k + 2**q // 2 + d)
    a = np.array([x for x in v if -(2**31) <= x < 2**31], np.int64)
    a = np.concatenate([a, -a[(a > -(2**31)) & (a != 0)]]).astype(np.int32)
    return np.concatenate([a, int_values(np.dtype(np.int32))])


def _out_at(n: int, itemsize: int, byte_offset: int) -> tuple[np.ndarray, np.ndarray]:
    raw = np.zeros(n * itemsize + 128, np.uint8)
    base = (-raw.ctypes.data) % 64
    return np.ndarray((n,), _UINT[itemsize], buffer=raw, offset=base + byte_offset), raw


@pytest.mark.parametrize("src", ["int32", "float64"])
@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_streamed_narrowing_every_policy(fmt: str, isa: str, src: str) -> None:
    """Every rounding of the narrowing, both saturations, both NaN policies, streamed (threshold
    forced to 0) and by the default path, on one thread and two."""
    x = int32_sample() if src == "int32" else narrow_bits().view(np.float64)
    for rounding in ("rne", "rtz", "rna"):
        for saturate in (False, True):
            for nan in ("ml_dtypes", "nvidia"):
                kw: dict[str, Any] = dict(rounding=rounding, saturate=saturate, nan=nan)
                ref = pyprecision.encode(x, fmt, isa="reference", threads=1, **kw)
                for force in (True, False):
                    for threads in (1, 2):
                        with streaming(force):
                            got = pyprecision.encode(x, fmt, isa=isa, threads=threads, **kw)
                        assert_same(got, ref, x, f"{src} {fmt} {kw} {isa} stream={force} t={threads}")


@pytest.mark.parametrize("src", ["int32", "float64"])
@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp32r", "fp8e4m3fn"])
def test_streamed_narrowing_every_head_offset(fmt: str, isa: str, src: str) -> None:
    """Each element offset from a 64-byte boundary, lengths around the steps (the first up to
    the boundary, then 1024 elements); nothing written outside the destination."""
    x = int32_sample() if src == "int32" else narrow_bits().view(np.float64)
    size = pyprecision.format(fmt).bits // 8
    for rounding in ("rne", "rtz", "rna"):
        ref = pyprecision.encode(x, fmt, rounding=rounding, isa="reference")
        for k in range(64 // size):
            for n in (1, 17, 63, 64, 1023, 1024, 1025, 2100, 4099):
                out, raw = _out_at(n, size, k * size)
                with streaming(True):
                    pyprecision.encode(x[:n], fmt, rounding=rounding, isa=isa, out=out)
                assert_same(out, ref[:n], x[:n], f"{src} {fmt} {rounding} {isa} offset {k} n={n}")
                lo = (-raw.ctypes.data) % 64 + k * size
                assert not raw[:lo].any() and not raw[lo + n * size:].any()


RC = {"nearest": 0x0000, "down": 0x2000, "up": 0x4000, "zero": 0x6000}


@x86
@pytest.mark.parametrize("rc", list(RC))
@pytest.mark.parametrize("flush", [False, True], ids=["plain", "ftz_daz"])
def test_int32_under_the_callers_mxcsr(csr: ctypes.CDLL, rc: str, flush: bool) -> None:  # noqa: F811
    """The int32 narrowing converts under its own RC = toward zero: the caller's rounding mode
    and FTZ | DAZ change no bit, streamed or not, and the caller's control bits come back."""
    x = int32_sample()
    cases = [(f, r, s) for f in FORMATS for r in ("rne", "rtz", "rna") for s in (False, True)]
    want = {c: pyprecision.encode(x, c[0], rounding=c[1], saturate=c[2], isa="reference")
            for c in cases}
    old = csr.get_csr()
    mine = (old & ~0xE040) | RC[rc] | (0x8040 if flush else 0)
    got: dict[Any, np.ndarray] = {}
    csr.set_csr(mine)
    try:
        for c in cases:
            for isa in FAST_ISAS:
                for force in (True, False):
                    with streaming(force):
                        got[c, isa, force] = pyprecision.encode(x, c[0], rounding=c[1],
                                                                saturate=c[2], isa=isa, threads=1)
        left = csr.get_csr()
    finally:
        csr.set_csr(old)
    assert left & ~0x3F == mine & ~0x3F, f"the call changed the caller's MXCSR: {left:#x}"
    for (c, isa, force), g in got.items():
        assert_same(g, want[c], x, f"{c} isa={isa} stream={force} rc={rc} flush={flush}")


@pytest.mark.parametrize("src", ["int32", "float64"])
@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", ["bf16", "fp32r", "fp16"])
def test_streamed_narrowing_destination_not_aligned(fmt: str, isa: str, src: str) -> None:
    """One byte past a boundary: enc_stream declines on the first step (nothing written) and the
    block path writes the same bits."""
    x = int32_sample() if src == "int32" else narrow_bits().view(np.float64)
    size = pyprecision.format(fmt).bits // 8
    out, _ = _out_at(x.size, size, 1)
    assert not out.flags.aligned
    for rounding in ("rne", "rtz", "rna"):
        ref = pyprecision.encode(x, fmt, rounding=rounding, isa="reference")
        with streaming(True):
            pyprecision.encode(x, fmt, rounding=rounding, isa=isa, out=out)
        assert_same(out, ref, x, f"{src} {fmt} {rounding} {isa} unaligned")
