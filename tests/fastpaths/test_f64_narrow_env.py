"""The round-to-odd narrowing of float64 sources (docs/decisions/speed.md S18): the lemma itself on
the reference converter, the caller's MXCSR (rounding mode, FTZ, DAZ) changing nothing and coming
back as it was, flags included, and hypothesis properties over any float64 bits."""
from __future__ import annotations

import ctypes
import platform
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision
from tests.kernel.test_fpenv import csr  # noqa: F401 - the MXCSR helper fixture

from .conftest import FAST_ISAS, FORMATS, assert_same
from .test_f64_narrow import ROUNDINGS3, narrow_bits

x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="MXCSR is x86's")


def round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """A model of the narrowing written from its definition, with numpy, not the C core: the
    float32 truncation of x toward zero (numpy's nearest conversion, stepped toward zero where it
    went past |x|: FLT_MAX for a finite |x| beyond it), its last bit set where it is inexact.
    NaNs stay NaNs with their sign. Returns float32 bits."""
    with np.errstate(over="ignore", invalid="ignore"):
        t = x.astype(np.float32)
        past = np.abs(t.astype(np.float64)) > np.abs(x)
        t = np.where(past, np.nextafter(t, np.float32(0)), t).astype(np.float32)
        inexact = (t.astype(np.float64) != x) & ~np.isnan(x)
    return t.view(np.uint32) | inexact.astype(np.uint32)


def test_the_model_rounds_to_odd() -> None:
    """The model on hand-picked values: exact stays, inexact gets the odd neighbour toward the
    right side, below 2^-149 gives 2^-149, beyond FLT_MAX gives FLT_MAX."""
    x = np.array([1.0, 1 + 2.0**-30, 1 - 2.0**-30, -(1 + 2.0**-30), 2.0**-160, 2.0**-149,
                  1.25 * 2.0**-149, 2.0**200, -(2.0**128), 0.0, -0.0, np.inf])
    want = [0x3F800000, 0x3F800001, 0x3F7FFFFF, 0xBF800001, 0x00000001, 0x00000001,
            0x00000001, 0x7F7FFFFF, 0xFF7FFFFF, 0, 0x80000000, 0x7F800000]
    assert round_to_odd_f32(x).tolist() == want


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_lemma_on_the_reference(fmt: str) -> None:
    """Rounding x once == rounding its round-to-odd float32 once, for rne, rtz and rna, every
    saturation and NaN policy, on the stratified sample: the argument of speed.md S18, checked
    with the reference converter alone."""
    x = narrow_bits().view(np.float64)
    y = round_to_odd_f32(x).view(np.float32)
    for rounding in ROUNDINGS3:
        for saturate in (False, True):
            for nan in ("ml_dtypes", "nvidia"):
                kw: dict[str, Any] = dict(rounding=rounding, saturate=saturate, nan=nan, isa="reference")
                assert_same(pyprecision.encode(y, fmt, **kw), pyprecision.encode(x, fmt, **kw), x,
                            f"lemma {fmt} {rounding} sat={saturate} nan={nan}")


def test_stochastic_rounding_cannot_take_the_narrowing() -> None:
    """SR's threshold reads 32 bits of the remainder, which float32 does not keep: x = 1 + 2^-8
    + 2^-40 has f = 1/2 + 2^-33 (threshold 2^31) for bf16, its round-to-odd float32 1 + 2^-8 +
    2^-23 has f = 1/2 + 2^-16 (threshold 2^31 + 2^16); the word 2^31 + 1 separates them. The fast
    paths give x's result."""
    x = np.full(40, 1 + 2.0**-8 + 2.0**-40)
    words = np.full(40, 2**31 + 1, np.uint32)
    y = round_to_odd_f32(x).view(np.float32)
    kw: dict[str, Any] = dict(rounding="stochastic", random_bits=words)
    assert pyprecision.encode(x, "bf16", isa="reference", **kw).tolist() == [0x3F80] * 40
    assert pyprecision.encode(y, "bf16", isa="reference", **kw).tolist() == [0x3F81] * 40
    for isa in FAST_ISAS:
        assert pyprecision.encode(x, "bf16", isa=isa, **kw).tolist() == [0x3F80] * 40


RC = {"nearest": 0x0000, "down": 0x2000, "up": 0x4000, "zero": 0x6000}


@x86
@pytest.mark.parametrize("rc", list(RC))
@pytest.mark.parametrize("flush", [False, True], ids=["plain", "ftz_daz"])
def test_callers_mxcsr_changes_nothing(csr: ctypes.CDLL, rc: str, flush: bool) -> None:  # noqa: F811
    """Under the caller's rounding mode and FTZ | DAZ, one thread and two, every format and
    rounding gives the reference's bits, and the caller's control bits come back unchanged."""
    x = np.concatenate([narrow_bits()[:200000], narrow_bits()[-40000:]]).view(np.float64)
    cases = [(f, r, s) for f in FORMATS for r in ROUNDINGS3 for s in (False, True)]
    want = {c: pyprecision.encode(x, c[0], rounding=c[1], saturate=c[2], isa="reference",
                                  threads=1) for c in cases}
    xl = np.resize(x, (1 << 18) + 77)  # the pool's two chunks
    want_l = {c: pyprecision.encode(xl, c[0], rounding=c[1], saturate=c[2], isa="reference",
                                    threads=1) for c in cases[:6]}
    old = csr.get_csr()
    mine = (old & ~0xE040) | RC[rc] | (0x8040 if flush else 0)
    got: dict[Any, np.ndarray] = {}
    got_l: dict[Any, np.ndarray] = {}
    csr.set_csr(mine)
    try:
        for c in cases:
            for isa in FAST_ISAS:
                got[c, isa] = pyprecision.encode(x, c[0], rounding=c[1], saturate=c[2], isa=isa,
                                                 threads=1)
        for c in cases[:6]:
            for isa in FAST_ISAS:
                got_l[c, isa] = pyprecision.encode(xl, c[0], rounding=c[1], saturate=c[2],
                                                   isa=isa, threads=2)
        left = csr.get_csr()
    finally:
        csr.set_csr(old)
    assert left & ~0x3F == mine & ~0x3F, f"the call changed the caller's MXCSR: {left:#x}"
    for (c, isa), g in got.items():
        assert_same(g, want[c], x, f"{c} isa={isa} rc={rc} flush={flush}")
    for (c, isa), g in got_l.items():
        assert_same(g, want_l[c], xl, f"{c} isa={isa} rc={rc} flush={flush} threads=2")


@x86
def test_the_narrowing_gives_back_the_callers_flags(csr: ctypes.CDLL) -> None:  # noqa: F811
    """The narrowing raises inexact, overflow, underflow and invalid (sNaN) in its own MXCSR; the
    caller's flags are given back as they were. Rounding up and bf16 keep every other kernel of
    the call off the FPU, so the whole MXCSR must come back bit for bit."""
    x = np.array([1 + 2.0**-40, 1e300, 2.0**-140 * (1 + 2.0**-40), 0.0] * 16)
    x = np.concatenate([x, np.array([0x7FF0000000000001] * 8, np.uint64).view(np.float64)])
    want = pyprecision.encode(x, "bf16", isa="reference", threads=1)
    old = csr.get_csr()
    mine = (old & ~0xE07F) | RC["up"]  # flags cleared
    csr.set_csr(mine)
    try:
        got = {isa: pyprecision.encode(x, "bf16", isa=isa, threads=1) for isa in FAST_ISAS}
        left = csr.get_csr()
    finally:
        csr.set_csr(old)
    assert left == mine, f"MXCSR {mine:#x} came back as {left:#x}"
    for isa, g in got.items():
        assert_same(g, want, x, f"isa={isa}")


DET = st.sampled_from(ROUNDINGS3)


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(FORMATS), rounding=DET, saturate=st.booleans(),
       nan=st.sampled_from(["ml_dtypes", "nvidia"]),
       bits=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40))
def test_any_float64_bits(fmt: str, rounding: str, saturate: bool, nan: str,
                          bits: list[int]) -> None:
    """Any float64 bit patterns (NaN payloads, subnormals, huge values): every fast ISA == the
    reference."""
    x = np.array(bits, np.uint64).view(np.float64)
    kw: dict[str, Any] = dict(rounding=rounding, saturate=saturate, nan=nan)
    ref = pyprecision.encode(x, fmt, isa="reference", **kw)
    for isa in FAST_ISAS:
        assert_same(pyprecision.encode(x, fmt, isa=isa, **kw), ref, x, f"{fmt} {kw} {isa}")


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(FORMATS), rounding=DET, saturate=st.booleans(),
       x=st.floats(allow_nan=True, allow_infinity=True, width=64),
       ulps=st.integers(-3, 3))
def test_lemma_near_float32_values(fmt: str, rounding: str, saturate: bool, x: float,
                                   ulps: int) -> None:
    """A float32 value moved by a few float64 ulps (the inputs round-to-odd changes most):
    rounding it once == rounding its round-to-odd float32, and the fast ISAs agree."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.array([np.float32(x)], np.float64)
    v = (v.view(np.int64) + ulps).view(np.float64) if np.isfinite(v[0]) and v[0] != 0 else v
    kw: dict[str, Any] = dict(rounding=rounding, saturate=saturate)
    ref = pyprecision.encode(v, fmt, isa="reference", **kw)
    y = round_to_odd_f32(v).view(np.float32)
    assert_same(pyprecision.encode(y, fmt, isa="reference", **kw), ref, v, f"lemma {fmt} {kw}")
    for isa in FAST_ISAS:
        assert_same(pyprecision.encode(v, fmt, isa=isa, **kw), ref, v, f"{fmt} {kw} {isa}")
