"""The persistent thread pool under concurrent callers, and inputs left untouched."""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

import pyprecision as pp

from . import refmodel as rm


def _arrays(k: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(k)
    return [rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
            for _ in range(k)]


def test_concurrent_python_threads_get_their_own_results() -> None:
    xs = _arrays(6, (1 << 20) + 5)
    kws: list[dict[str, Any]] = [{}, {"rounding": "stochastic", "seed": 9},
                                 {"rounding": "rtz", "threads": 2}]
    jobs = [(x, name, kw) for x in xs for name in ("bf16", "fp8e4", "fp32r") for kw in kws]
    want = [pp.encode(x, name, **kw) for x, name, kw in jobs]
    got: list = [None] * len(jobs)
    errors: list = []

    def work(idx: list[int]) -> None:
        try:
            for _ in range(3):
                for i in idx:
                    x, name, kw = jobs[i]
                    got[i] = pp.encode(x, name, **kw)
                    if not np.array_equal(got[i], want[i]):
                        errors.append(i)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(list(range(t, len(jobs), 4)),))
               for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_inputs_are_not_modified() -> None:
    x = _arrays(1, 1 << 18)[0]
    before = x.copy()
    r = np.arange(x.size, dtype=np.uint32)
    rb = r.copy()
    for name in rm.FORMAT_NAMES:
        codes = pp.encode(x, name, rounding="stochastic", random_bits=r)
        cb = codes.copy()
        pp.decode(codes, name)
        assert np.array_equal(codes, cb)
    assert np.array_equal(x.view(np.uint32), before.view(np.uint32))
    assert np.array_equal(r, rb)
