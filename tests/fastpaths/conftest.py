"""Shared helpers of the fast-path proofs: every fast ISA against the reference converter."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
from pyprecision._core import lib

import pyprecision
from pyprecision.kernel import isa_available

FORMATS = ["bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"]
ROUNDINGS = ["rne", "rtz", "rna", "stochastic"]
# The fast paths the machine can run ("generic" is an alias of "portable").
FAST_ISAS = [i for i in isa_available() if i not in ("reference", "generic")]


@contextlib.contextmanager
def streaming(force: bool) -> Iterator[None]:
    """Force non-temporal stores for every size (force=True), or keep the default threshold."""
    prev = lib.pp_set_stream_threshold(0 if force else -1)
    try:
        yield
    finally:
        lib.pp_set_stream_threshold(-1 if not force else prev)


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def assert_same(fast: np.ndarray, ref: np.ndarray, inputs: np.ndarray, what: str) -> None:
    """Bitwise equality, reporting the first differing inputs in hex."""
    f, r = fast.reshape(-1), ref.reshape(-1)
    bad = np.flatnonzero(f != r)
    if bad.size:
        raw = inputs.reshape(-1).view(_UINT[inputs.itemsize])
        show = ", ".join(f"in={int(raw[i]):#x} fast={int(f[i]):#x} ref={int(r[i]):#x}"
                         for i in bad[:5])
        pytest.fail(f"{what}: {bad.size} of {f.size} differ: {show}")


def encode_all_ways(x: np.ndarray, fmt: str, rounding: str, saturate: bool, nan: str,
                    words: np.ndarray | None, what: str) -> None:
    """Encode with the reference, then with every fast ISA (streaming and not); compare bits."""
    kw: dict = dict(rounding=rounding, saturate=saturate, nan=nan)
    if rounding == "stochastic":
        kw["random_bits"] = words
    ref = pyprecision.encode(x, fmt, isa="reference", threads=1, **kw)
    for isa in FAST_ISAS:
        for force in (False, True):
            with streaming(force):
                got = pyprecision.encode(x, fmt, isa=isa, **kw)
            assert_same(got, ref, x, f"{what} {fmt} {rounding} sat={saturate} nan={nan} "
                                     f"isa={isa} stream={force}")
