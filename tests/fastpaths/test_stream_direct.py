"""The kernels that stream their own output (convert.c: enc_stream; AVX2 and AVX-512: bf16 and
fp32r by integer rounding, bf16 rne by vcvtneps2bf16 where the CPU has AVX512_BF16, fp16 through
the conversion instruction, the fp8 formats by FMA) against the reference converter, into
destinations at every offset from a 64-byte boundary (the scalar head before the first streaming
store), and into one not aligned to its elements at all (no streaming kernel: the
lanes), with every rounding the kernels take, both saturations and both NaN policies."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, assert_same, streaming
from .samples import SPECIAL_F32, f32_bits

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _out_at(n: int, itemsize: int, byte_offset: int) -> tuple[np.ndarray, np.ndarray]:
    """An output of n codes starting byte_offset bytes past a 64-byte boundary, and its buffer."""
    raw = np.zeros(n * itemsize + 128, np.uint8)
    base = (-raw.ctypes.data) % 64
    out = np.ndarray((n,), _UINT[itemsize], buffer=raw, offset=base + byte_offset)
    return out, raw


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", ["bf16", "fp32r", "fp16", "fp8e4m3fn"])
def test_every_head_offset(isa: str, fmt: str) -> None:
    """Each element offset from a 64-byte boundary (AVX2 streams from 32-byte ones, AVX-512 from
    64-byte ones), lengths around the 16- and 32-element steps."""
    x = f32_bits()[:40_000].view(np.float32)
    size = pyprecision.format(fmt).bits // 8
    for rounding in ("rne", "rtz", "rna"):
        ref = pyprecision.encode(x, fmt, rounding=rounding, isa="reference")
        for k in range(64 // size):
            for n in (1, 15, 16, 17, 33, 4099, x.size):
                out, raw = _out_at(n, size, k * size)
                with streaming(True):
                    got = pyprecision.encode(x[:n], fmt, rounding=rounding, isa=isa, out=out)
                assert got is out or np.shares_memory(got, raw)
                assert_same(out, ref[:n], x[:n], f"{fmt} {rounding} {isa} offset {k} n={n}")
                # nothing written outside the destination
                lo = (-raw.ctypes.data) % 64 + k * size
                assert not raw[:lo].any() and not raw[lo + n * size:].any()


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", ["bf16", "fp32r", "fp16"])
def test_destination_not_aligned_to_its_elements(isa: str, fmt: str) -> None:
    """One byte past a boundary: the kernels decline (no streaming store can start there) and the
    lanes write the same bits."""
    x = f32_bits()[:20_000].view(np.float32)
    size = pyprecision.format(fmt).bits // 8
    out, _ = _out_at(x.size, size, 1)
    assert not out.flags.aligned
    ref = pyprecision.encode(x, fmt, isa="reference")
    with streaming(True):
        pyprecision.encode(x, fmt, isa=isa, out=out)
    assert_same(out, ref, x, f"{fmt} {isa} unaligned")


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", ["bf16", "fp32r"])
def test_policies_through_the_streaming_kernel(isa: str, fmt: str) -> None:
    """Saturation and the NaN policies: the kernel's plain case (overflow is inf) and its general
    one (saturation: overflow is max; nvidia NaNs), streamed and not, every exponent's rounding
    boundaries (f32_bits) on both threads."""
    x = f32_bits().view(np.float32)
    for rounding in ("rne", "rtz", "rna"):
        for saturate in (False, True):
            for nan in ("ml_dtypes", "nvidia"):
                kw = dict(rounding=rounding, saturate=saturate, nan=nan)
                ref = pyprecision.encode(x, fmt, isa="reference", threads=1, **kw)
                for force in (False, True):
                    with streaming(force):
                        got = pyprecision.encode(x, fmt, isa=isa, threads=2, **kw)
                    assert_same(got, ref, x, f"{fmt} {kw} {isa} stream={force}")


@pytest.mark.parametrize("isa", FAST_ISAS)
@pytest.mark.parametrize("fmt", ["fp8e4", "fp8e4m3fn", "fp8e5", "bf16", "fp16", "fp32r"])
def test_decode_at_every_head_offset(isa: str, fmt: str) -> None:
    """The streaming decoders (fp8, bf16, fp16, fp32r): every code (fp32r: a stratified sample
    with the specials), at each float32 offset from a 64-byte boundary (and one byte off: no
    streaming kernel), lengths around the vector steps."""
    f = pyprecision.format(fmt)
    if f.bits == 32:
        rng = np.random.default_rng(28)
        codes = f32_bits()[rng.permutation(f32_bits().size)[:1 << 16]]
        codes[: SPECIAL_F32.size] = SPECIAL_F32
    else:
        codes = np.tile(np.arange(1 << f.bits, dtype=np.uint32).astype(f.storage_dtype),
                        9 if f.bits == 8 else 1)
    ref = pyprecision.decode(codes, fmt, isa="reference").view(np.uint32)
    for off in [4 * k for k in range(16)] + [1]:
        for n in (1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, codes.size):
            raw = np.zeros(n * 4 + 128, np.uint8)
            base = (-raw.ctypes.data) % 64
            out = np.ndarray((n,), np.float32, buffer=raw, offset=base + off)
            with streaming(True):
                pyprecision.decode(codes[:n], fmt, isa=isa, out=out)
            assert_same(out.view(np.uint32), ref[:n], codes[:n], f"decode {fmt} {isa} +{off} n={n}")
            assert not raw[:base + off].any() and not raw[base + off + 4 * n:].any()
