"""The caller's floating-point rounding mode must not leak into the bits (hardware conversions
obey MXCSR), and a call must leave the caller's mode as it found it."""
from __future__ import annotations

import ctypes
import ctypes.util
import platform
from typing import Any

import numpy as np
import pytest

import pyprecision as pp
from pyprecision.kernel import random_words

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
    rs = random_words(77, bits.size)
    a = rng.integers(-(2**26), 2**26, (8, 32))
    b = rng.integers(-(2**10), 2**10, (32, 8))
    want: dict[Any, Any] = {}
    for name in rm.FORMAT_NAMES:
        want[name, "f32"] = rn.encode_np(name, x32, "rne", None, "ml_dtypes")
        want[name, "f64"] = rn.encode_np(name, x64, "rna", False, "nvidia")
        want[name, "int"] = rn.encode_np(name, ints, "rne", None, "ml_dtypes")
        want[name, "sr"] = rn.encode_np(name, x32, "stochastic", True, "ml_dtypes", r)
        # seeded: the words generated inside the kernels are random_words' (pinned elsewhere)
        want[name, "srs"] = rn.encode_np(name, x32, "stochastic", True, "ml_dtypes", rs)
        want[name, "dec"] = rn.decode_np(name, want[name, "f32"])
    want["dot"] = rn.int_dot_model(a, b)
    got: dict = {}
    assert _libm.fesetround(FE[mode]) == 0
    try:
        for isa in available():
            for threads in (1, None):
                for name in rm.FORMAT_NAMES:
                    kw: dict[str, Any] = {"isa": isa, "threads": threads}
                    got[isa, threads, name, "f32"] = pp.encode(x32, name, **kw)
                    got[isa, threads, name, "f64"] = pp.encode(x64, name, rounding="rna",
                                                               saturate=False, nan="nvidia", **kw)
                    got[isa, threads, name, "int"] = pp.encode(ints, name, **kw)
                    got[isa, threads, name, "sr"] = pp.encode(
                        x32, name, rounding="stochastic", saturate=True, random_bits=r, **kw)
                    got[isa, threads, name, "srs"] = pp.encode(
                        x32, name, rounding="stochastic", saturate=True, seed=77, **kw)
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
    assert bad == [], "\n".join(map(str, bad))


_CSR_SRC = """
#include <xmmintrin.h>
unsigned get_csr(void) { return _mm_getcsr(); }
void set_csr(unsigned v) { _mm_setcsr(v); }
"""


@pytest.fixture(scope="module")
def csr(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """get_csr / set_csr for the calling thread's MXCSR (compiled here; skipped without gcc)."""
    import shutil
    import subprocess
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the MXCSR helper")
    assert cc is not None
    d = tmp_path_factory.mktemp("csr")
    (d / "csr.c").write_text(_CSR_SRC)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(d / "csr.so"), str(d / "csr.c")],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(d / "csr.so"))
    lib.get_csr.restype = ctypes.c_uint
    lib.set_csr.argtypes = [ctypes.c_uint]
    return lib


def test_flush_to_zero_and_denormals_are_zero_do_not_leak(csr: ctypes.CDLL) -> None:
    """A caller with FTZ|DAZ set (torch.set_flush_denormal(True), -ffast-math libraries) must
    still get subnormal inputs and outputs right."""
    rng = np.random.default_rng(5)
    sub32 = rng.integers(1, 1 << 23, 1 << 14, dtype=np.uint32) | np.where(
        rng.integers(0, 2, 1 << 14) == 1, np.uint32(0x80000000), np.uint32(0))
    near = mode_sample_f32_bits("fp8e4")[: 1 << 14]
    near5 = mode_sample_f32_bits("fp8e5")[: 1 << 14]
    x32 = np.concatenate([sub32, near, near5]).view(np.float32)
    with np.errstate(invalid="ignore"):
        x64 = np.concatenate([x32.astype(np.float64) * 2.0**-100, [5e-324, -5e-324, 2.0**-1022]])
    r32 = rng.integers(0, 1 << 32, x32.size, dtype=np.uint64).astype(np.uint32)
    rs = random_words(78, x32.size)
    want: dict[Any, Any] = {}
    for name in rm.FORMAT_NAMES:
        want[name, "f32"] = rn.encode_np(name, x32, "rne", False, "ml_dtypes")
        # rtz / rna of float32: the fp8 kernel of the AVX-512 set rounds them in hardware too
        want[name, "f32rtz"] = rn.encode_np(name, x32, "rtz", False, "ml_dtypes")
        want[name, "f32rna"] = rn.encode_np(name, x32, "rna", True, "ml_dtypes")
        want[name, "f64"] = rn.encode_np(name, x64, "rtz", False, "ml_dtypes")
        want[name, "sr"] = rn.encode_np(name, x32, "stochastic", False, "nvidia", r32)
        want[name, "srs"] = rn.encode_np(name, x32, "stochastic", True, "ml_dtypes", rs)
        codes = rm.FORMATS[name]
        allc = (np.arange(codes.n_codes, dtype=np.uint64) << np.uint64(codes.shift))
        allc = allc.astype(codes.storage)  # every code (fp32r: every canonical code)
        want[name, "codes"] = allc
        want[name, "dec"] = rn.decode_np(name, allc)
    old = csr.get_csr()
    got: dict = {}
    csr.set_csr(old | 0x8040)  # FTZ | DAZ
    try:
        for isa in available():
            for threads in (1, None):
                for name in rm.FORMAT_NAMES:
                    kw: dict[str, Any] = {"isa": isa, "threads": threads}
                    got[isa, threads, name, "f32"] = pp.encode(x32, name, saturate=False, **kw)
                    got[isa, threads, name, "f32rtz"] = pp.encode(x32, name, rounding="rtz",
                                                                  saturate=False, **kw)
                    got[isa, threads, name, "f32rna"] = pp.encode(x32, name, rounding="rna",
                                                                  saturate=True, **kw)
                    got[isa, threads, name, "f64"] = pp.encode(x64, name, rounding="rtz",
                                                               saturate=False, **kw)
                    got[isa, threads, name, "sr"] = pp.encode(
                        x32, name, rounding="stochastic", saturate=False, nan="nvidia",
                        random_bits=r32, **kw)
                    got[isa, threads, name, "srs"] = pp.encode(
                        x32, name, rounding="stochastic", saturate=True, seed=78, **kw)
                    got[isa, threads, name, "dec"] = pp.decode(
                        want[name, "codes"], name, **kw).view(np.uint32)
        left = csr.get_csr()
    finally:
        csr.set_csr(old)
    assert left == old | 0x8040, "a call changed the caller's MXCSR"
    bad = []
    for k, v in got.items():
        w = want[k[2], k[3]]
        i = np.flatnonzero(v != w)
        if i.size:
            src = want[k[2], "codes"] if k[3] == "dec" else (x64 if k[3] == "f64" else x32)
            s0 = src[i[0]]
            inp = hex(int(s0)) if k[3] == "dec" else repr(s0)
            bad.append((k, int(i.size), inp, hex(int(w[i[0]])), hex(int(v[i[0]]))))
    assert bad == [], "\n".join(map(str, bad))
