"""Atomic outputs: write to a temporary name in the same directory, fsync, then os.replace.

A reader never sees a half-written file under the final name, and an output never replaces one
of the inputs it is computed from.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from pyprecision.errors import DumpError

__all__ = ["check_output_path", "atomic_file", "fsync_dir", "EarlyWriteback"]

PathLike = str | os.PathLike[str]


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output_path(
    path: PathLike, inputs: Iterable[PathLike] = (), *, overwrite: bool = False
) -> Path:
    """Refuse an output that is (a link to) one of ``inputs``, or exists when not ``overwrite``."""
    out = Path(path)
    for src in inputs:
        if _same_file(out, Path(src)):
            raise DumpError(f"{out}: refusing to write over the input {src}")
    if out.is_dir():
        raise DumpError(f"{out}: is a directory; expected a file name")
    if out.exists() and not overwrite:
        raise DumpError(f"{out}: already exists (pass overwrite=True / --force to replace it)")
    return out


def fsync_dir(directory: PathLike) -> None:
    """Make a rename in ``directory`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_file(
    path: PathLike, inputs: Iterable[PathLike] = (), *, overwrite: bool = False, fsync: bool = True
) -> Iterator[IO[bytes]]:
    """Yield a binary file opened on a temporary name next to ``path``; on a clean exit flush,
    fsync and rename it to ``path``; on an exception delete it and re-raise."""
    out = check_output_path(path, inputs, overwrite=overwrite)
    directory = out.parent if str(out.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=directory)
    ok = False
    try:
        with os.fdopen(fd, "w+b") as fh:
            yield fh
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, out)
        ok = True
        if fsync:
            fsync_dir(directory)
    finally:
        if not ok:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


#: posix_fadvise(POSIX_FADV_DONTNEED) where the platform has it (Linux); None elsewhere.
_DONTNEED = getattr(os, "POSIX_FADV_DONTNEED", None) if hasattr(os, "posix_fadvise") else None


class EarlyWriteback:
    """Start writing an output file's new pages to storage while the rest is still being made.

    Call ``wrote(offset, n)`` after each write; every ``step`` bytes of contiguous new data the
    range is handed to ``posix_fadvise(POSIX_FADV_DONTNEED)``, which on Linux starts writeback of
    its dirty pages without waiting (pages still dirty or under writeback stay in the page cache).
    The final fsync then finds little left to do, and the device writes while the caller computes
    instead of after it (bench/README.md: "Early writeback"). ``close()`` hands over the rest. A
    no-op where the platform lacks the call; an error from it is ignored (it is only advice).
    """

    def __init__(self, fd: int, step: int = 8 << 20) -> None:
        self._fd, self._step = fd, step
        self._lo = self._hi = -1

    def wrote(self, offset: int, n: int) -> None:
        """Record that ``n`` bytes were written at ``offset``."""
        if n <= 0 or _DONTNEED is None:
            return
        if offset != self._hi:
            self.close()
            self._lo = offset
        self._hi = offset + n
        if self._hi - self._lo >= self._step:
            self.close()

    def close(self) -> None:
        """Hand the pending range to the kernel now."""
        if self._hi > self._lo >= 0 and _DONTNEED is not None:
            with contextlib.suppress(OSError):
                os.posix_fadvise(self._fd, self._lo, self._hi - self._lo, _DONTNEED)
        self._lo = self._hi = -1
