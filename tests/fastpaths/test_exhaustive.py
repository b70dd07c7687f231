"""All 2^32 float32 inputs, every fast ISA against the reference converter, per format and
rounding (saturate=False, nan="ml_dtypes"; stochastic with a fixed seed), again for the fp8
formats with saturate=True (the Neuron default there), and with nan="nvidia" (where the reference
itself must equal its ml_dtypes-policy result on every non-NaN input, §4). Not run by default:
``pytest -m exhaustive tests/fastpaths`` (about a minute per format and rounding on 2 cores).
``PYPRECISION_EXHAUSTIVE_ISAS=avx2`` (comma-separated) sweeps only those of the fast ISAs, for a
re-run after a change to one instruction set's kernels."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import pyprecision

from .conftest import FAST_ISAS as _ALL_FAST_ISAS
from .conftest import FORMATS, ROUNDINGS

_ONLY = [i for i in os.environ.get("PYPRECISION_EXHAUSTIVE_ISAS", "").split(",") if i]
FAST_ISAS = [i for i in _ALL_FAST_ISAS if not _ONLY or i in _ONLY]

NVIDIA_NAN = {"bf16": 0x7FFF, "fp16": 0x7FFF, "fp32r": 0x7FFFE000, "fp8e4": 0x7F, "fp8e4m3fn": 0x7F,
              "fp8e5": 0x7F}  # §4, copied from the spec

CHUNK = 1 << 24


def _sweep(fmt: str, rounding: str, saturate: bool, nan: str = "ml_dtypes",
           source: type = np.float32) -> None:
    kw = {"seed": 12345} if rounding == "stochastic" else {}
    mismatches = {isa: 0 for isa in FAST_ISAS}
    first: dict[str, int] = {}
    t0 = time.perf_counter()
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(source)
        # the words are keyed by the element index within the call: same call shape for all
        ref = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate, nan=nan,
                                 isa="reference", **kw)
        if nan != "ml_dtypes":
            # §4: the policy changes the code of NaN inputs and nothing else
            ml = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate,
                                    isa="reference", **kw)
            isnan = np.isnan(x)
            bad = np.flatnonzero((ref != ml) & ~isnan)
            bad_nan = np.flatnonzero((ref != NVIDIA_NAN[fmt]) & isnan)
            if bad.size or bad_nan.size:
                mismatches["policy"] = mismatches.get("policy", 0) + int(bad.size + bad_nan.size)
                first.setdefault("policy", start + int(np.concatenate([bad, bad_nan]).min()))
        for isa in FAST_ISAS:
            got = pyprecision.encode(x, fmt, rounding=rounding, saturate=saturate, nan=nan, isa=isa,
                                     **kw)
            bad = np.flatnonzero(got != ref)
            if bad.size:
                mismatches[isa] += int(bad.size)
                first.setdefault(isa, start + int(bad[0]))
    print(f"\n{np.dtype(source).name} -> {fmt} {rounding} saturate={saturate} nan={nan}: 2^32 "
          f"inputs x {FAST_ISAS}: mismatches "
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


@pytest.mark.exhaustive
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", ["bf16", "fp32r"])
def test_every_float32_saturating_wide(fmt: str, rounding: str) -> None:
    """bf16 and fp32r saturating: the general case of their dedicated kernels (overflow is max)."""
    _sweep(fmt, rounding, saturate=True)


@pytest.mark.exhaustive
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_float32_nvidia(fmt: str, rounding: str) -> None:
    _sweep(fmt, rounding, saturate=False, nan="nvidia")


@pytest.mark.exhaustive
@pytest.mark.parametrize("rounding", ["rne", "rtz", "rna"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_int32(fmt: str, rounding: str) -> None:
    """All 2^32 int32 sources: the fast sets narrow them to float32 rounded to odd and run the
    float32 kernels (issue 28; the 64-bit lanes before), against the reference's exact rounding."""
    _sweep(fmt, rounding, saturate=False, source=np.int32)


@pytest.mark.exhaustive
def test_every_fp32r_code() -> None:
    """All 2^32 fp32r codes decoded by every fast ISA (16 Mi-element calls: the decoders that
    stream their own output where the family's threshold allows, speed.md S22 / S28) against the
    reference decoder."""
    mismatches = {isa: 0 for isa in FAST_ISAS}
    first: dict[str, int] = {}
    t0 = time.perf_counter()
    for start in range(0, 1 << 32, CHUNK):
        c = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32)
        ref = pyprecision.decode(c, "fp32r", isa="reference").view(np.uint32)
        for isa in FAST_ISAS:
            got = pyprecision.decode(c, "fp32r", isa=isa).view(np.uint32)
            bad = np.flatnonzero(got != ref)
            if bad.size:
                mismatches[isa] += int(bad.size)
                first.setdefault(isa, start + int(bad[0]))
    print(f"\nfp32r decode: 2^32 codes x {FAST_ISAS}: mismatches {mismatches} "
          f"({time.perf_counter() - t0:.0f} s)")
    assert not any(mismatches.values()), f"mismatches {mismatches}, first codes {first}"
