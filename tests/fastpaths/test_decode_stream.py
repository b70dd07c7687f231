"""The decoders that stream their own output (speed.md S19, S22, S28): the AVX2 set's fp16 and
fp32r ones (session 15) and its fp8 decoder by nibble lookups, against the reference decoder,
streamed and not, under a caller's MXCSR that makes F16C's conversion inexact (DAZ) or trapping
(an exception unmasked: then the lanes decode, having written nothing), and on two threads with
chunk boundaries at odd elements. Every code of fp16 and the fp8 formats; test_decode.py and
test_stream_direct.py have the lengths and head offsets, test_exhaustive.py all 2^32 fp32r codes."""
from __future__ import annotations

import platform

import numpy as np
import pytest

import pyprecision
from tests.kernel.test_fpenv import csr  # noqa: F401 - the MXCSR helper fixture

from .conftest import FAST_ISAS, assert_same, streaming
from .samples import SPECIAL_F32, f32_bits

x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="MXCSR is x86's")


def _codes(fmt: str, reps: int = 3) -> np.ndarray:
    f = pyprecision.format(fmt)
    if f.bits == 32:
        return np.concatenate([SPECIAL_F32, f32_bits()[:200_000]])
    c = np.arange(1 << f.bits, dtype=np.uint32).astype(f.storage_dtype)
    return np.concatenate([np.tile(c, reps), c[:37]])


# the caller's MXCSR: FTZ | DAZ (F16C would read fp16 subnormals as zero), the invalid-operation
# exception unmasked (a signaling NaN into F16C would trap), rounding toward zero
CSR_CASES = {"ftz_daz": lambda old: old | 0x8040, "invalid_unmasked": lambda old: old & ~0x0080,
             "rc_toward_zero": lambda old: old | 0x6000}


@x86
@pytest.mark.parametrize("fmt", ["fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5", "bf16"])
@pytest.mark.parametrize("case", list(CSR_CASES))
def test_decode_under_the_callers_mxcsr(csr, fmt: str, case: str) -> None:  # noqa: F811
    """Every code decodes as the reference's, streamed and not, one and two threads, and the
    caller's MXCSR control bits come back as they were: the streamed AVX2 fp16 decoder must
    decline (having written nothing) where F16C is not exact, as dec16_avx2 does."""
    codes = _codes(fmt)
    ref = pyprecision.decode(codes, fmt, isa="reference", threads=1).view(np.uint32)
    old = csr.get_csr()
    new = CSR_CASES[case](old)
    got = {}
    csr.set_csr(new)
    try:
        for isa in FAST_ISAS:
            for force in (False, True):
                with streaming(force):
                    for threads in (1, 2):
                        got[isa, force, threads] = pyprecision.decode(
                            codes, fmt, isa=isa, threads=threads).view(np.uint32)
        left = csr.get_csr()
    finally:
        csr.set_csr(old)
    assert left & ~0x3f == new & ~0x3f, "a decode changed the caller's MXCSR control bits"
    for (isa, force, threads), v in got.items():
        assert_same(v, ref, codes, f"decode {fmt} csr={new:#x} isa={isa} stream={force} "
                                   f"threads={threads}")


@pytest.mark.parametrize("fmt", ["fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"])
def test_decode_two_threads_streamed(fmt: str) -> None:
    """Two threads over an odd length starting at an odd element (the streamed heads and tails
    of both chunks), streaming forced and not, into a fresh output and into a given one."""
    f = pyprecision.format(fmt)
    rng = np.random.default_rng(15)
    n = (1 << 18) + 77
    if f.bits == 32:
        codes = f32_bits()[rng.integers(0, f32_bits().size, n + 1)]
    else:
        codes = rng.integers(0, 1 << f.bits, size=n + 1, dtype=np.uint64).astype(f.storage_dtype)
    ref = pyprecision.decode(codes, fmt, isa="reference", threads=1).view(np.uint32)
    for isa in FAST_ISAS:
        for force in (False, True):
            with streaming(force):
                got = pyprecision.decode(codes[1:], fmt, isa=isa, threads=2).view(np.uint32)
                out = np.full(n + 16, np.float32(7.0))
                pyprecision.decode(codes[1:], fmt, isa=isa, threads=2, out=out[3:3 + n])
            assert_same(got, ref[1:], codes[1:], f"decode {fmt} {isa} stream={force} threads=2")
            assert_same(out[3:3 + n].view(np.uint32), ref[1:], codes[1:],
                        f"decode {fmt} {isa} stream={force} threads=2 out=")
            assert (out[:3] == 7.0).all() and (out[3 + n:] == 7.0).all()
