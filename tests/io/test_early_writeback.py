"""EarlyWriteback: which ranges are handed to the kernel, and that output bytes are unchanged."""

from __future__ import annotations

import os

import numpy as np
import pytest

import pyprecision.io.atomic as atomic
from pyprecision.io import NpzWriter, SafetensorsWriter, open_tensors
from pyprecision.io.atomic import EarlyWriteback

ADVICE = 4  # stands in for POSIX_FADV_DONTNEED where the platform lacks it


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int, int]]:
    got: list[tuple[int, int, int, int]] = []
    monkeypatch.setattr(atomic, "_DONTNEED", ADVICE)
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: got.append(a), raising=False)
    return got


def test_contiguous_writes_are_handed_over_every_step(calls: list) -> None:
    ew = EarlyWriteback(7, step=100)
    for off in range(0, 250, 50):
        ew.wrote(off, 50)
    assert calls == [(7, 0, 100, ADVICE), (7, 100, 100, ADVICE)]
    ew.close()
    assert calls[-1] == (7, 200, 50, ADVICE)
    ew.close()  # nothing pending: no call
    assert len(calls) == 3


def test_a_jump_hands_over_the_pending_range_first(calls: list) -> None:
    ew = EarlyWriteback(3, step=1000)
    ew.wrote(0, 10)
    ew.wrote(10, 10)
    ew.wrote(500, 10)  # not contiguous
    ew.wrote(0, 0)  # empty writes change nothing
    ew.close()
    assert calls == [(3, 0, 20, ADVICE), (3, 500, 10, ADVICE)]


def test_errors_from_the_advice_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*a: int) -> None:
        raise OSError(22, "not supported here")

    monkeypatch.setattr(atomic, "_DONTNEED", ADVICE)
    monkeypatch.setattr(os, "posix_fadvise", fail, raising=False)
    ew = EarlyWriteback(3, step=4)
    ew.wrote(0, 8)  # would raise without the suppression
    ew.close()


def test_without_the_call_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "_DONTNEED", None)
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: pytest.fail("called"), raising=False)
    ew = EarlyWriteback(3, step=1)
    ew.wrote(0, 8)
    ew.close()


def test_safetensors_writer_hands_over_its_data_and_bytes_are_exact(tmp_path, calls) -> None:
    """Chunked writes of two tensors: every data byte lies in a handed-over range, and the file
    reads back exactly (the advice never changes content)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(3000).astype(np.float32)
    b = rng.integers(0, 255, 5000, dtype=np.uint8)
    path = tmp_path / "x.safetensors"
    with SafetensorsWriter(path, [("a", a.dtype, a.shape), ("b", b.dtype, b.shape)]) as w:
        w._early = EarlyWriteback(w._fd, step=4096)
        for i in range(0, a.size, 700):
            w.write("a", a[i : i + 700])
        for i in range(0, b.size, 1100):
            w.write("b", b[i : i + 1100])
    store = open_tensors(str(path))
    np.testing.assert_array_equal(store.load("a"), a)
    np.testing.assert_array_equal(store.load("b"), b)
    covered = np.zeros(os.path.getsize(path), bool)
    for _, off, n, _ in calls:
        covered[off : off + n] = True
    start = os.path.getsize(path) - a.nbytes - b.nbytes
    assert covered[start:].all() and not covered[:start].any()


def test_npz_writer_hands_over_its_members_and_bytes_are_exact(tmp_path, calls) -> None:
    a = np.arange(20000, dtype=np.float32)
    path = tmp_path / "x.npz"
    with NpzWriter(path) as w:
        w._early = EarlyWriteback(w._fh.fileno(), step=8192)
        w.begin("a", a.dtype, a.shape)
        for i in range(0, a.size, 3000):
            w.write(a[i : i + 3000])
    with np.load(path) as z:
        np.testing.assert_array_equal(z["a"], a)
    handed = sum(n for _, _, n, _ in calls)
    assert a.nbytes <= handed < a.nbytes + 4096  # the data (and at most the member's header)
