"""The caller's floating-point rounding mode must not leak into the bits (hardware conversions
obey MXCSR), and a call must leave the caller's mode as it found it."""
from __future__ import annotations

import ctypes
import ctypes.util
import platform

import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from . import refmodel_np as rn
from .isas import available
from .samples import mode_sample_f32_bits

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 fenv constants")
FE = {"downward": 0x400, "upward": 0x800, "towardzero": 0xC00}  # glibc x86-64 <fenv.h>
_libm = ctypes.CDLL(ctypes.util.find_library("m"))


@pytest.mark.parametrize("mode", sorted(FE))
def test_bits_do_not_depend_on_the_callers_rounding_mode(mode: str) -> None:
    rng = np.random.default_rng(1)
    bits = mode_sample_f32_bits("bf16")[: 1 << 16]
    x32 = bits.view(np.float32)
    with np.errstate(invalid="ignore"):
        x64 = x32.astype(np.float64) * (1 + 2.0**-35)
    ints = rng.integers(-(2**62), 2**62, 1 << 14)
    r = rng.integers(0, 1 << 32, bits.size, dtype=np.uint64).astype(np.uint32)
    a = rng.integers(-(2**26), 2**26, (8, 32))
    b = rng.integers(-(2**10), 2**10, (32, 8))
    want = {}
    for name in rm.FORMAT_NAMES:
        want[name, "f32"] = rn.encode_np(name, x32, "rne", None, "ml_dtypes")
        want[name, "f64"] = rn.encode_np(name, x64, "rna", False, "nvidia")
        want[name, "int"] = rn.encode_np(name, ints, "rne", None, "ml_dtypes")
        want[name, "sr"] = rn.encode_np(name, x32, "stochastic", True, "ml_dtypes", r)
        want[name, "dec"] = rn.decode_np(name, want[name, "f32"])
    want["dot"] = rn.int_dot_model(a, b)
    got: dict = {}
    assert _libm.fesetround(FE[mode]) == 0
    try:
        for isa in available():
            for threads in (1, None):
                for name in rm.FORMAT_NAMES:
                    kw = {"isa": isa, "threads": threads}
                    got[isa, threads, name, "f32"] = pp.encode(x32, name, **kw)
                    got[isa, threads, name, "f64"] = pp.encode(x64, name, rounding="rna",
                                                               saturate=False, nan="nvidia", **kw)
                    got[isa, threads, name, "int"] = pp.encode(ints, name, **kw)
                    got[isa, threads, name, "sr"] = pp.encode(
                        x32, name, rounding="stochastic", saturate=True, random_bits=r, **kw)
                    got[isa, threads, name, "dec"] = pp.decode(want[name, "f32"], name, **kw)
        got["dot"] = pp.int_dot(a, b, threads=1)
        left = _libm.fegetround()
    finally:
        _libm.fesetround(0)
    assert left == FE[mode], "a call changed the caller's rounding mode"
    assert np.array_equal(got.pop("dot"), want["dot"])
    bad = [k for k, v in got.items()
           if not np.array_equal(np.asarray(v).view(np.asarray(want[k[2], k[3]]).dtype),
                                 want[k[2], k[3]])]
    assert bad == []
