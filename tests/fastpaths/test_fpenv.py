"""The rne kernels round subnormal results in hardware only under the default floating-point
environment; under another rounding mode they must fall back and still equal the reference. The
AVX-512 fp8 kernel rounds every float32 input in hardware, rne, rtz and rna alike, with the
rounding given in the instruction: the caller's mode must not matter to it either."""
from __future__ import annotations

import ctypes
import ctypes.util
import platform

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, FORMATS, assert_same, streaming
from .samples import f32_bits, f64_bits

# <fenv.h> on x86-64 glibc
FE_MODES = {"downward": 0x400, "upward": 0x800, "towardzero": 0xC00}

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="fenv constants are x86-64's")


@pytest.mark.parametrize("mode", list(FE_MODES))
def test_rne_under_other_rounding_modes(mode: str) -> None:
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    x32 = f32_bits().view(np.float32)[:300000]
    x64 = f64_bits().view(np.float64)[:300000]
    refs = {(fmt, s.dtype.char): pyprecision.encode(s, fmt, isa="reference", threads=1)
            for fmt in FORMATS for s in (x32, x64)}
    assert libm.fesetround(FE_MODES[mode]) == 0
    try:
        got = {(fmt, s.dtype.char, isa): pyprecision.encode(s, fmt, isa=isa, threads=1)
               for fmt in FORMATS for s in (x32, x64) for isa in FAST_ISAS}
    finally:
        libm.fesetround(0)
    for (fmt, ch, isa), g in got.items():
        src = x32 if ch == "f" else x64
        assert_same(g, refs[(fmt, ch)], src, f"{fmt} src={ch} isa={isa} under {mode}")


@pytest.mark.parametrize("mode", list(FE_MODES))
def test_fp8_rne_rtz_rna_under_other_rounding_modes(mode: str) -> None:
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    x32 = f32_bits().view(np.float32)[:300000]
    fmts = [f for f in FORMATS if f.startswith("fp8")]
    cases = [(fmt, r, sat) for fmt in fmts for r in ("rne", "rtz", "rna") for sat in (False, True)]
    refs = {c: pyprecision.encode(x32, c[0], rounding=c[1], saturate=c[2], isa="reference",
                                  threads=1) for c in cases}
    assert libm.fesetround(FE_MODES[mode]) == 0
    try:
        got = {}
        for force in (False, True):
            with streaming(force):
                for c in cases:
                    for isa in FAST_ISAS:
                        got[c, isa, force] = pyprecision.encode(x32, c[0], rounding=c[1],
                                                                saturate=c[2], isa=isa, threads=1)
    finally:
        libm.fesetround(0)
    for (c, isa, force), g in got.items():
        assert_same(g, refs[c], x32, f"{c} isa={isa} stream={force} under {mode}")
