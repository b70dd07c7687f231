"""The kernels that write straight to the destination with streaming stores (issue 28: fp16 under
rtz / rna through the conversion instruction, the bf16 / fp16 / fp32r decoders), forced to stream
at every length up to 70 and every output offset within a 64-byte line: their plain-store heads
(up to the line), streaming bodies and masked or padded tails all equal the reference."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, assert_same, streaming
from .samples import f32_bits

LENGTHS = [0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 70]


def _inputs() -> np.ndarray:
    """Float32 bits around fp16's edges: max (65504), the rna and rne overflow points (65520),
    2^16, the subnormal range and its ties, NaNs and infinities of both signs, then stratified."""
    edges = np.array([65504.0, 65519.99, 65520.0, 65535.99, 65536.0, 1e9, 2.0**-24, 2.0**-25,
                      3 * 2.0**-26, 2.0**-14, 2.0**-14 - 2.0**-25, 1 + 2.0**-11, 1 + 3 * 2.0**-11,
                      0.0, np.inf, np.nan], np.float32).view(np.uint32)
    edges = np.concatenate([edges, edges | np.uint32(0x80000000), np.array([0x7F800001, 0xFFC00001],
                                                                           np.uint32)])
    return np.concatenate([edges, f32_bits()[::97]]).view(np.float32)


@pytest.mark.parametrize("rounding", ["rne", "rtz", "rna"])
def test_fp16_streaming_heads_and_tails(rounding: str) -> None:
    x = _inputs()
    ref = pyprecision.encode(x, "fp16", rounding=rounding, isa="reference", threads=1)
    for isa in FAST_ISAS:
        for off in range(0, 32, 3):  # output offsets in elements of 2 bytes
            buf = np.zeros(x.size + 40, np.uint16)
            for n in LENGTHS + [x.size - 40]:
                out = buf[off : off + n]
                with streaming(True):
                    pyprecision.encode(x[:n], "fp16", rounding=rounding, isa=isa, out=out)
                assert_same(out, ref[:n], x[:n], f"fp16 {rounding} isa={isa} off={off} n={n}")


@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp32r"])
def test_wide_decode_streaming_heads_and_tails(fmt: str) -> None:
    f = pyprecision.format(fmt)
    if f.bits == 32:
        codes = f32_bits()[::31].copy()
    else:
        c = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        codes = np.concatenate([c, c[5:]])
    ref = pyprecision.decode(codes, fmt, isa="reference", threads=1).view(np.uint32)
    for isa in FAST_ISAS:
        for off in range(16):  # output offsets in elements of 4 bytes: every one within a line
            buf = np.zeros(codes.size + 16, np.float32)
            for n in LENGTHS + [codes.size - 16]:
                out = buf[off : off + n]
                with streaming(True):
                    pyprecision.decode(codes[:n], fmt, isa=isa, out=out)
                assert_same(out.view(np.uint32), ref[:n], codes[:n],
                            f"decode {fmt} isa={isa} off={off} n={n}")
