"""Decode: every fast ISA == the reference decoder, on every code of the 8- and 16-bit formats and
a stratified sample of fp32r codes."""
from __future__ import annotations

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, FORMATS, assert_same, streaming
from .samples import f32_bits


def _codes(fmt: str) -> np.ndarray:
    f = pyprecision.format(fmt)
    if f.bits == 32:
        return f32_bits()
    c = np.arange(1 << f.bits, dtype=np.uint32).astype(f.storage_dtype)
    # twice, at two alignments, so vector bodies and tails both see every code
    return np.concatenate([c, c[3:], c[:5]])


@pytest.mark.parametrize("fmt", FORMATS)
def test_decode_every_code(fmt: str) -> None:
    codes = _codes(fmt)
    ref = pyprecision.decode(codes, fmt, isa="reference", threads=1).view(np.uint32)
    for isa in FAST_ISAS:
        for force in (False, True):
            with streaming(force):
                got = pyprecision.decode(codes, fmt, isa=isa).view(np.uint32)
            assert_same(got, ref, codes, f"decode {fmt} isa={isa} stream={force}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_decode_threads_and_tails(fmt: str) -> None:
    """Large, odd-length decode split over two threads == the reference."""
    f = pyprecision.format(fmt)
    rng = np.random.default_rng(8)
    n = (1 << 19) + 12345
    codes = rng.integers(0, 1 << f.bits, size=n, dtype=np.uint64).astype(f.storage_dtype)
    ref = pyprecision.decode(codes, fmt, isa="reference", threads=1).view(np.uint32)
    for isa in FAST_ISAS:
        for force in (False, True):
            with streaming(force):
                got = pyprecision.decode(codes[1:], fmt, isa=isa, threads=2).view(np.uint32)
            assert_same(got, ref[1:], codes[1:], f"decode {fmt} isa={isa} threads=2")


@pytest.mark.parametrize("fmt", FORMATS)
def test_decode_short_lengths_and_offsets(fmt: str) -> None:
    """Every length up to 70 at every offset mod 8: the vector loops' heads, masked tails and
    scalar tails all agree with the reference (NaN codes and subnormals included)."""
    f = pyprecision.format(fmt)
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 1 << f.bits, size=200, dtype=np.uint64).astype(f.storage_dtype)
    codes[::7] = np.iinfo(f.storage_dtype).max  # all ones: a negative NaN in every format
    codes[3::7] = 1  # the smallest subnormal
    ref = pyprecision.decode(codes, fmt, isa="reference", threads=1).view(np.uint32)
    for isa in FAST_ISAS:
        for off in range(8):
            for n in range(71):
                got = pyprecision.decode(codes[off : off + n], fmt, isa=isa).view(np.uint32)
                assert_same(got, ref[off : off + n], codes[off : off + n],
                            f"decode {fmt} isa={isa} offset={off} n={n}")
