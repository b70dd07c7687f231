"""The fp8 kernel of the AVX-512 set (csrc/kern_avx512.c fp8_avx512: rne, rtz, rna in one fused
multiply-add) writes 64 codes per step, with masked head and tail groups and, for large outputs,
streaming stores from the first 64-byte aligned output byte on. Every output alignment 0..63 and
lengths around the 64-element group, streaming forced and not, every special-value policy the
kernel takes (saturate or not: its four NaN / inf / overflow modes), against the reference; and
no byte outside the output is touched."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, assert_same, streaming
from .samples import SPECIAL_F32, f32_bits

FP8 = ["fp8e4", "fp8e4m3fn", "fp8e5"]
LENGTHS = [0, 1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 191, 257]
GUARD = 0xA5


def _inputs(fmt: str) -> np.ndarray:
    """From the strong sample, shuffled: rounding boundaries at the exponents within reach of
    the fp8 formats (|x| from 2^-30 to 2^20), the specials, and any bits."""
    rng = np.random.default_rng(len(fmt))
    bits = f32_bits()
    e = (bits >> 23) & 0xFF
    near = bits[(e >= 127 - 30) & (e <= 127 + 20)]
    pick = np.concatenate([SPECIAL_F32, rng.choice(near, 3072), rng.choice(bits, 1024)])
    rng.shuffle(pick)
    return pick.view(np.float32)


@pytest.mark.parametrize("rounding", ["rne", "rtz", "rna"])
@pytest.mark.parametrize("fmt", FP8)
def test_every_output_alignment_and_length(fmt: str, rounding: str) -> None:
    x = _inputs(fmt)
    for saturate in (False, True):
        kw = dict(rounding=rounding, saturate=saturate, nan="ml_dtypes")
        for start in (0, 3):
            ref = pyprecision.encode(x[start:start + max(LENGTHS)], fmt, isa="reference",
                                     threads=1, **kw)
            for isa in FAST_ISAS:
                for force in (False, True):
                    with streaming(force):
                        for off in range(64):
                            for n in LENGTHS:
                                buf = np.full(64 + off + n + 64, GUARD, np.uint8)
                                base = (-buf.ctypes.data) % 64  # buf[base] is 64-byte aligned
                                out = buf[base + off:base + off + n]
                                pyprecision.encode(x[start:start + n], fmt, out=out, threads=1,
                                                   isa=isa, **kw)
                                what = (f"{fmt} {rounding} sat={saturate} isa={isa} "
                                        f"stream={force} out%64={off} n={n} start={start}")
                                assert_same(out, ref[:n], x[start:start + n], what)
                                outside = np.concatenate([buf[:base + off], buf[base + off + n:]])
                                assert (outside == GUARD).all(), f"{what}: wrote outside out"


@pytest.mark.parametrize("fmt", FP8)
def test_large_streamed_ranges_on_every_thread(fmt: str) -> None:
    """Several pool tasks (each streams its own range, head and tail included) and a destination
    that is not 64-byte aligned."""
    rng = np.random.default_rng(7)
    n = (1 << 19) + 37
    x = rng.choice(f32_bits(), n).view(np.float32)
    for rounding in ("rne", "rtz", "rna"):
        ref = pyprecision.encode(x, fmt, isa="reference", rounding=rounding, threads=1)
        buf = np.empty(n + 64 + 5, np.uint8)
        base = (-buf.ctypes.data) % 64 + 5
        for isa in FAST_ISAS:
            for force in (False, True):
                with streaming(force):
                    out = buf[base:base + n]
                    pyprecision.encode(x, fmt, rounding=rounding, out=out, threads=None, isa=isa)
                assert_same(out, ref, x, f"{fmt} {rounding} isa={isa} stream={force} threads")
