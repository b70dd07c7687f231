"""rne, saturate=False, nan="ml_dtypes" against ml_dtypes (numpy for fp16; for fp32r, which
ml_dtypes lacks, the classic RNE bit trick).  NaN inputs are compared with the §4 policy, not with
numpy (whose float16 cast keeps payloads)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from .samples import stratified_f32_bits
from .test_refmodel import ml_reference

EXHAUSTIVE_CHUNK = 1 << 26


def _report(bits: np.ndarray, want: np.ndarray, got: np.ndarray, limit: int = 10) -> list:
    bad = np.flatnonzero(want != got)
    return [(hex(int(bits[i])), hex(int(want[i])), hex(int(got[i]))) for i in bad[:limit]]


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_stratified_2_24_against_mldtypes(name: str) -> None:
    bits = stratified_f32_bits(name)
    assert bits.size >= 1 << 24
    x = bits.view(np.float32)
    got = pp.encode(x, name, rounding="rne", saturate=False, nan="ml_dtypes")
    assert got.dtype == rm.FORMATS[name].storage
    want = ml_reference(name, bits)
    assert _report(bits, want, got) == [], f"{int(np.sum(want != got))} mismatches"


def exhaustive_mismatches(name: str, chunk: int = EXHAUSTIVE_CHUNK) -> tuple[int, list]:
    """Sweep all 2^32 float32 inputs in chunks; return (mismatch count, first few)."""
    fmt = rm.FORMATS[name]
    count, first = 0, []
    out = np.empty(chunk, fmt.storage)
    for start in range(0, 1 << 32, chunk):
        bits = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32)
        got = pp.encode(bits.view(np.float32), name, rounding="rne", saturate=False,
                        nan="ml_dtypes", out=out)
        want = ml_reference(name, bits)
        n = int(np.count_nonzero(want != got))
        if n:
            count += n
            first += _report(bits, want, got, 10 - len(first)) if len(first) < 10 else []
    return count, first


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_exhaustive_all_float32_against_mldtypes(name: str) -> None:
    t0 = time.perf_counter()
    count, first = exhaustive_mismatches(name)
    print(f"\nexhaustive {name}: {count} mismatches in 2^32 inputs, "
          f"{time.perf_counter() - t0:.1f} s")
    assert count == 0, first
