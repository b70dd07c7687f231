"""Cast-core benchmarks (pytest-benchmark; bench/conftest.py has the commands): encode of every
format under every rounding from float32, float64 and int32 rows, every decode, cast() without
out=. One thread, 16 Mi elements (in memory, not in cache: the floor's regime), outputs
preallocated except in the allocating row; `extra_info` has the input bytes, so GB/s of input is
bytes / mean. Asserts nothing about speed: regressions are found by --benchmark-compare-fail."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyprecision

N = 16 << 20
FORMATS = ["bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"]
ROUNDINGS = ["rne", "rtz", "rna", "stochastic"]


@pytest.fixture(scope="module")
def x32() -> np.ndarray:
    return (np.random.default_rng(0).standard_normal(N) * 4).astype(np.float32)


def _run(benchmark: Any, fn: Any, in_bytes: int) -> None:
    benchmark.extra_info["input_bytes"] = in_bytes
    benchmark.pedantic(fn, rounds=31, iterations=1, warmup_rounds=2)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_f32(benchmark: Any, x32: np.ndarray, fmt: str, rounding: str) -> None:
    out = np.empty(N, pyprecision.format(fmt).storage_dtype)
    kw = {"seed": 1} if rounding == "stochastic" else {}
    _run(benchmark, lambda: pyprecision.encode(x32, fmt, rounding=rounding, threads=1, out=out,
                                               **kw), x32.nbytes)
    # what was timed wrote the encode's codes (a prefix; the words are keyed by element index)
    assert np.array_equal(out[:4096], pyprecision.encode(x32[:4096], fmt, rounding=rounding, **kw))


@pytest.mark.parametrize("rounding", ["rne", "stochastic"])
@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp8e4m3fn"])
def test_encode_f64(benchmark: Any, x32: np.ndarray, fmt: str, rounding: str) -> None:
    x64 = x32.astype(np.float64) * (1 + 2.0**-30)
    out = np.empty(N, pyprecision.format(fmt).storage_dtype)
    kw = {"seed": 1} if rounding == "stochastic" else {}
    _run(benchmark, lambda: pyprecision.encode(x64, fmt, rounding=rounding, threads=1, out=out,
                                               **kw), x64.nbytes)


@pytest.mark.parametrize("fmt", ["bf16", "fp8e4m3fn"])
def test_encode_i32(benchmark: Any, x32: np.ndarray, fmt: str) -> None:
    ints = (x32 * 1000).astype(np.int32)
    out = np.empty(N, pyprecision.format(fmt).storage_dtype)
    _run(benchmark, lambda: pyprecision.encode(ints, fmt, threads=1, out=out), ints.nbytes)


@pytest.mark.parametrize("fmt", FORMATS)
def test_decode(benchmark: Any, x32: np.ndarray, fmt: str) -> None:
    codes = pyprecision.encode(x32, fmt)
    out = np.empty(N, np.float32)
    _run(benchmark, lambda: pyprecision.decode(codes, fmt, threads=1, out=out), codes.nbytes)


@pytest.mark.parametrize("fmt", ["bf16", "fp8e4m3fn"])
def test_cast_allocating(benchmark: Any, x32: np.ndarray, fmt: str) -> None:
    _run(benchmark, lambda: pyprecision.cast(x32, fmt, threads=1), x32.nbytes)
