"""Test doubles for the remote-file tests: in-memory fsspec file systems that count what is read,
fail in the middle of a write, or refuse writes; plus small checkpoints to put on them.

Each double is a MemoryFileSystem with its own store, registered under its own protocol
(``countmem://``, ``failmem://``, ``romem://``); the tests of the doubles themselves are at the end.
"""

from __future__ import annotations

import errno
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import numpy as np
import pytest
from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

from pyprecision.io import save_safetensors


class _OwnMemoryFS(MemoryFileSystem):
    """A MemoryFileSystem under another protocol name, with its own store."""

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(path).removeprefix(f"{cls.protocol}://")
        return MemoryFileSystem._strip_protocol(text)


class CountingFS(_OwnMemoryFS):
    """Records every ranged read; refuses to open a file for reading (so nothing can read a whole
    file behind the counter's back) and counts a ``cat_file`` without a range as a whole read."""

    protocol = "countmem"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]
    reads: ClassVar[list[tuple[str, int | None, int | None, int]]] = []

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kw: Any
    ) -> bytes:
        data = super().cat_file(path, start, end, **kw)
        CountingFS.reads.append((self._strip_protocol(path), start, end, len(data)))
        return data

    def _open(self, path: str, mode: str = "rb", *args: Any, **kw: Any) -> Any:
        if "r" in mode:
            raise AssertionError(f"opened {path} for reading: reads must be ranged (cat_file)")
        return super()._open(path, mode, *args, **kw)

    @classmethod
    def bytes_read(cls, path: str | None = None) -> int:
        """Bytes returned by cat_file (for one path, or all)."""
        return sum(n for p, _, _, n in cls.reads if path is None or p == path)


class _FailingFile(MemoryFile):
    budget: ClassVar[int] = 3

    def write(self, data: Any) -> int:
        if FailingFS.writes_left <= 0:
            raise OSError(errno.ENOSPC, "No space left on device (test double)")
        FailingFS.writes_left -= 1
        return super().write(data)


class FailingFS(_OwnMemoryFS):
    """Writes fail with ENOSPC after ``writes_left`` successful ``write`` calls on open files."""

    protocol = "failmem"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]
    writes_left: ClassVar[int] = 1 << 30

    def _open(self, path: str, mode: str = "rb", *args: Any, **kw: Any) -> Any:
        if "w" in mode:
            f = _FailingFile(self, self._strip_protocol(path))
            f.commit()  # a memory file is visible at once, as it is being written
            return f
        return super()._open(path, mode, *args, **kw)


class ReadOnlyFS(_OwnMemoryFS):
    """A bucket without write access: every write raises PermissionError (as s3fs does for
    AccessDenied); reads work."""

    protocol = "romem"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]

    def _deny(self, path: str) -> None:
        raise PermissionError(errno.EACCES, "Access Denied (test double)", path)

    def pipe_file(self, path: str, value: Any, *args: Any, **kw: Any) -> None:
        self._deny(path)

    def _open(self, path: str, mode: str = "rb", *args: Any, **kw: Any) -> Any:
        if "r" not in mode:
            self._deny(path)
        return super()._open(path, mode, *args, **kw)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        self._deny(path)

    def mkdir(self, path: str, create_parents: bool = True, **kw: Any) -> None:
        self._deny(path)

    def seed(self, path: str, data: bytes) -> None:
        """Put an object in the bucket behind the access check (the test's own setup)."""
        MemoryFileSystem.pipe_file(self, path, data)


for _cls in (CountingFS, FailingFS, ReadOnlyFS):
    fsspec.register_implementation(_cls.protocol, _cls, clobber=True)


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    """A small model: floats of several widths, an integer buffer, special values."""
    r = np.random.default_rng(seed)
    return {
        "layer.0.weight": (r.standard_normal((64, 48)) * 3).astype(np.float32),
        "layer.0.bias": r.standard_normal(48).astype(np.float32),
        "layer.1.weight": (r.standard_normal((48, 33)) * 1e3).astype(np.float32),
        "position_ids": np.arange(17, dtype=np.int64),
        "special": np.array([0.0, -0.0, 1e30, np.inf, -np.inf, np.nan, 1e-30], np.float32),
        "half": r.standard_normal(20).astype(np.float16),
    }


def write_checkpoints(d: Path) -> dict[str, Path]:
    """In ``d``: model.safetensors, model.npz (one deflated member), one .npy, a raw .bin, and a
    two-shard checkpoint ``sharded/`` with its index. Returns the paths by kind."""
    w = weights()
    save_safetensors(d / "model.safetensors", w, {"format": "pt"})
    np.savez(d / "model.npz", a=w["layer.0.weight"], b=w["position_ids"])
    np.savez_compressed(d / "deflated.npz", c=w["layer.0.bias"])
    np.save(d / "w.npy", w["layer.1.weight"])
    w["layer.0.weight"].tofile(d / "w.bin")
    sh = d / "sharded"
    sh.mkdir()
    names = list(w)
    shards = {
        "model-00001-of-00002.safetensors": names[:3],
        "model-00002-of-00002.safetensors": names[3:],
    }
    wmap = {}
    for shard, keys in shards.items():
        save_safetensors(sh / shard, {k: w[k] for k in keys}, {"format": "pt"})
        wmap.update(dict.fromkeys(keys, shard))
    (sh / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 1}, "weight_map": wmap})
    )
    return {
        "safetensors": d / "model.safetensors",
        "npz": d / "model.npz",
        "deflated": d / "deflated.npz",
        "npy": d / "w.npy",
        "raw": d / "w.bin",
        "sharded": sh,
    }


def upload(local: Path, fs: Any, prefix: str) -> None:
    """Copy a local file or directory tree to ``prefix`` on ``fs``."""
    if local.is_dir():
        for p in sorted(local.rglob("*")):
            if p.is_file():
                fs.pipe_file(f"{prefix}/{p.relative_to(local).as_posix()}", p.read_bytes())
    else:
        fs.pipe_file(prefix, local.read_bytes())


def fresh_bucket() -> Iterator[str]:
    """A fresh memory:// prefix, removed afterwards (``yield from`` it in a fixture)."""
    name = f"/t{uuid.uuid4().hex[:12]}"
    fs = fsspec.filesystem("memory")
    yield f"memory://{name}"
    if fs.exists(name):
        fs.rm(name, recursive=True)


def objects(fs: Any, prefix: str) -> list[str]:
    """Every object under ``prefix`` (paths relative to it), sorted."""
    root = fs._strip_protocol(prefix).rstrip("/")
    if not fs.exists(root):
        return []
    return sorted(p[len(root) + 1 :] for p in fs.find(root))


# --- the doubles themselves -------------------------------------------------------------------


def test_counting_fs_counts_ranged_reads_and_refuses_open() -> None:
    fs = fsspec.filesystem("countmem")
    fs.pipe_file("/c/x", b"0123456789")
    CountingFS.reads.clear()
    assert fs.cat_file("/c/x", 2, 5) == b"234"
    assert CountingFS.bytes_read() == 3
    with pytest.raises(AssertionError):
        fs.open("/c/x", "rb")
    fs.rm("/c", recursive=True)


def test_failing_fs_fails_after_its_budget() -> None:
    fs = fsspec.filesystem("failmem")
    FailingFS.writes_left = 1
    with fs.open("/f/x", "wb") as fh:
        fh.write(b"a")
        with pytest.raises(OSError, match="No space"):
            fh.write(b"b")
    FailingFS.writes_left = 1 << 30
    fs.rm("/f", recursive=True)


def test_read_only_fs_denies_writes() -> None:
    fs = fsspec.filesystem("romem")
    with pytest.raises(PermissionError):
        fs.pipe_file("/r/x", b"a")
    with pytest.raises(PermissionError):
        fs.open("/r/x", "wb")
