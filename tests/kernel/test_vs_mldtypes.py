"""rne, saturate=False, nan="ml_dtypes" against ml_dtypes (numpy for fp16; for fp32r, which
ml_dtypes lacks, the classic RNE bit trick).  NaN inputs are compared with the §4 policy, not with
numpy (whose float16 cast keeps payloads)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import pyprecision as pp

from . import refmodel as rm
from .isas import available, selected
from .mlref import ml_reference
from .samples import stratified_f32_bits

EXHAUSTIVE_CHUNK = 1 << 26


def _report(bits: np.ndarray, want: np.ndarray, got: np.ndarray, limit: int = 10) -> list:
    bad = np.flatnonzero(want != got)
    return [(hex(int(bits[i])), hex(int(want[i])), hex(int(got[i]))) for i in bad[:limit]]


@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_stratified_2_24_against_mldtypes(name: str) -> None:
    bits = stratified_f32_bits(name)
    assert bits.size >= 1 << 24
    x = bits.view(np.float32)
    want = ml_reference(name, bits)
    for isa in available():
        for threads in (None, 1) if isa is None else (None,):
            got = pp.encode(x, name, rounding="rne", saturate=False, nan="ml_dtypes", isa=isa,
                            threads=threads)
            assert got.dtype == rm.FORMATS[name].storage
            assert _report(bits, want, got) == [], (isa, threads, int(np.sum(want != got)))


def exhaustive_mismatches(name: str, chunk: int = EXHAUSTIVE_CHUNK) -> dict:
    """Sweep all 2^32 float32 inputs in chunks through every code path; return
    {isa: (mismatch count, first few (input, expected, got))}."""
    fmt = rm.FORMATS[name]
    res: dict = {isa: (0, []) for isa in selected()}
    out = np.empty(chunk, fmt.storage)
    for start in range(0, 1 << 32, chunk):
        bits = np.arange(start, start + chunk, dtype=np.uint32)
        want = ml_reference(name, bits)
        for isa in selected():
            got = pp.encode(bits.view(np.float32), name, rounding="rne", saturate=False,
                            nan="ml_dtypes", out=out, isa=isa)
            n = int(np.count_nonzero(want != got))
            if n:
                count, first = res[isa]
                res[isa] = (count + n, first + _report(bits, want, got, max(0, 10 - len(first))))
    return res


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", rm.FORMAT_NAMES)
def test_exhaustive_all_float32_against_mldtypes(name: str) -> None:
    t0 = time.perf_counter()
    res = exhaustive_mismatches(name)
    for isa, (count, _) in res.items():
        print(f"\nexhaustive {name} isa={isa or 'auto'}: {count} mismatches in 2^32 inputs")
    print(f"exhaustive {name}: {time.perf_counter() - t0:.1f} s")
    assert {isa: r for isa, r in res.items() if r[0]} == {}
