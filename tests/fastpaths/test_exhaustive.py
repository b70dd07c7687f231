"""All 2^32 float32 inputs, every fast ISA against the reference converter, per format and
rounding (saturate=False, nan="ml_dtypes"; stochastic with a fixed seed), and again for the fp8
formats with saturate=True (the Neuron default there). Not run by default:
``pytest -m exhaustive tests/fastpaths`` (about a minute per format and rounding on 2 cores)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS, FORMATS, ROUNDINGS

CHUNK = 1 << 24


def _sweep(fmt: str, rounding: str, saturate: bool) -> None:
    kw = {"seed": 12345} if rounding == "stochastic" else {}
    mismatches = {isa: 0 for isa in FAST_ISAS}
    first: dict[str, int] = {}
    t0 = time.perf_counter()
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        # the words are keyed by the element index within the call: same call shape for all
        ref = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate, isa="reference",
                                 **kw)
        for isa in FAST_ISAS:
            got = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate, isa=isa, **kw)
            bad = np.flatnonzero(got != ref)
            if bad.size:
                mismatches[isa] += int(bad.size)
                first.setdefault(isa, start + int(bad[0]))
    print(f"\n{fmt} {rounding} saturate={saturate}: 2^32 inputs x {FAST_ISAS}: mismatches "
          f"{mismatches} ({time.perf_counter() - t0:.0f} s)")
    assert not any(mismatches.values()), f"mismatches {mismatches}, first inputs {first}"


@pytest.mark.exhaustive
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_float32(fmt: str, rounding: str) -> None:
    _sweep(fmt, rounding, saturate=False)


@pytest.mark.exhaustive
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.startswith("fp8")])
def test_every_float32_saturating_fp8(fmt: str, rounding: str) -> None:
    _sweep(fmt, rounding, saturate=True)
