"""bf16 rne by vcvtneps2bf16 (csrc/kern_wide_avx512.h bf16hw_loop, AVX-512 with AVX512_BF16):
the instruction is exact only on vectors without NaNs and subnormals, and one vfpclassps per
16 elements sends the others to the integer kernel. The random samples of the other tests put a
special into almost every vector, so here whole vectors of normal numbers (every binade, ties and
near-ties at the rounding bit, the largest finite values that round to inf), then the same with
one special at each lane position, and the policies that must not take the instruction (saturation,
the NaN policies' signs), against the reference converter on every fast ISA. Where the CPU has no
AVX512_BF16 this proves the integer kernels on the same inputs."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, assert_same, streaming

_SPECIALS = np.array([0x00000001, 0x807fffff, 0x00400000, 0x7fc00000, 0xffc00001, 0x7f800001,
                      0xff812345, 0x7f800000, 0xff800000, 0x00000000, 0x80000000],
                     dtype=np.uint32)


def _normals(seed: int = 11) -> np.ndarray:
    """float32 bits of normal numbers only: random ones in every binade, the patterns that make
    the rounding bit a tie or a near-tie (low 16 bits 0x7fff, 0x8000, 0x8001, with even and odd
    kept bits), and the largest finite values (which round to inf), both signs; a length that is
    a multiple of 32 so that every vector is whole."""
    rng = np.random.default_rng(seed)
    exp = rng.integers(1, 255, 1 << 17, dtype=np.uint32) << 23
    frac = rng.integers(0, 1 << 23, exp.size, dtype=np.uint32)
    ties = (frac & ~np.uint32(0x1ffff)) | rng.choice(
        np.array([0x7fff, 0x8000, 0x8001, 0x17fff, 0x18000, 0x18001], np.uint32), exp.size)
    top = np.arange(0x7f7f0000, 0x7f800000, 7, dtype=np.uint32)
    x = np.concatenate([exp | frac, exp | ties, top])
    x = np.concatenate([x, x | np.uint32(0x80000000)])
    rng.shuffle(x)
    return x[: x.size - x.size % 32]


def _encode_both(x: np.ndarray, what: str, **kw) -> None:
    f = x.view(np.float32)
    ref = pyprecision.encode(f, "bf16", isa="reference", threads=1, **kw)
    for isa in FAST_ISAS:
        for force in (False, True):
            with streaming(force):
                got = pyprecision.encode(f, "bf16", isa=isa, **kw)
            assert_same(got, ref, f, f"{what} isa={isa} stream={force} {kw}")


def test_whole_vectors_of_normals() -> None:
    """No vector has a special: every one goes through the instruction where the CPU has it."""
    _encode_both(_normals(), "normals")


@pytest.mark.parametrize("special", [int(s) for s in _SPECIALS])
def test_one_special_at_each_lane(special: int) -> None:
    """Vector k of 16 has the special at lane k % 16: the guard sees it at every position."""
    x = _normals(seed=special & 0xffff)[: 16 * 16 * 40].copy()
    x[np.arange(0, x.size, 16) + np.arange(x.size // 16) % 16] = special
    _encode_both(x, f"special {special:#x}")


@pytest.mark.parametrize("kw", [dict(saturate=True), dict(nan="nvidia"),
                                dict(nan="nvidia", saturate=True), dict(rounding="rna"),
                                dict(rounding="rtz")])
def test_policies_the_instruction_cannot_take(kw: dict) -> None:
    """Saturation, another NaN policy, another rounding: the integer kernel, on the same inputs
    (with a special in every fourth vector)."""
    x = _normals(seed=5)[: 1 << 16].copy()
    x[::64] = _SPECIALS[np.arange(x[::64].size) % _SPECIALS.size]
    _encode_both(x, "policy", **kw)


def test_the_instruction_can_be_turned_off() -> None:
    """PYPRECISION_AVX512_BF16=0 gives the integer kernel: the same bits in a fresh process."""
    code = ("import sys, numpy as np, pyprecision as pp\n"
            "x = np.frombuffer(sys.stdin.buffer.read(), np.float32)\n"
            "sys.stdout.buffer.write(pp.encode(x, 'bf16').tobytes())\n")
    x = _normals(seed=3)[: 1 << 15]
    ref = pyprecision.encode(x.view(np.float32), "bf16", isa="reference")
    for flag in ("0", "1"):
        env = dict(os.environ, PYPRECISION_AVX512_BF16=flag)
        out = subprocess.run([sys.executable, "-c", code], input=x.tobytes(), env=env,
                             capture_output=True, check=True).stdout
        assert_same(np.frombuffer(out, np.uint16), ref, x.view(np.float32), f"flag={flag}")
