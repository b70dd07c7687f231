"""Vector-width tails and misaligned starts: every length 0..69 at offsets 0..3, every code path,
every source kind, against the model (SIMD kernels handle 8/16/32/64 elements per step)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from . import refmodel_np as rn
from .isas import available
from .samples import SPECIAL_F32_BITS, boundary_f32_bits


def _base(name: str, dtype: type) -> np.ndarray:
    rng = np.random.default_rng([31, len(name)])
    b = np.concatenate([SPECIAL_F32_BITS, rng.choice(boundary_f32_bits(name), 50)])
    rng.shuffle(b)
    x = b.view(np.float32)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(int(info.min), int(info.max), 73, endpoint=True, dtype=dtype)
    with np.errstate(all="ignore"):
        return x.astype(dtype)


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16,
                                   np.int32, np.uint64, np.int8],
                         ids=lambda d: np.dtype(d).name)
def test_every_length_and_offset(name: str, dtype: type) -> None:
    base = _base(name, dtype)
    r = np.random.default_rng(2).integers(0, 1 << 32, base.size, dtype=np.uint64)
    r = r.astype(np.uint32)
    for rounding, sat, nan in (("rne", False, "ml_dtypes"), ("rtz", True, "nvidia"),
                               ("rna", None, "ml_dtypes"), ("stochastic", False, "nvidia")):
        kw = {"random_bits": r} if rounding == "stochastic" else {}
        want = rn.encode_np(name, base, rounding, sat, nan, r)
        for isa in available():
            for off in range(4):
                for n in range(70):
                    sl = slice(off, off + n)
                    extra = {"random_bits": r[sl]} if kw else {}
                    got = pp.encode(base[sl], name, rounding=rounding, saturate=sat, nan=nan,
                                    isa=isa, **extra)
                    assert np.array_equal(got, want[sl]), (isa, rounding, off, n, got, want[sl])


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_decode_every_length_and_offset(name: str) -> None:
    fmt = rm.FORMATS[name]
    rng = np.random.default_rng(3)
    codes = (rng.integers(0, fmt.n_codes, 80).astype(np.uint64) << np.uint64(fmt.shift))
    codes = codes.astype(fmt.storage)
    want = rn.decode_np(name, codes)
    for isa in available():
        for off in range(4):
            for n in range(70):
                got = pp.decode(codes[off:off + n], name, isa=isa).view(np.uint32)
                assert np.array_equal(got, want[off:off + n]), (isa, off, n)
