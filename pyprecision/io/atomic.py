"""Atomic outputs: write to a temporary name in the same directory, fsync, then publish.

A reader never sees a half-written file under the final name, an output never replaces one of the
inputs it is computed from, and — unless ``overwrite`` — never replaces anything at all, even when
another run creates the same name meanwhile: the temporary file is published with
``renameat2(RENAME_NOREPLACE)`` (Linux) or ``link`` + ``unlink``, both of which fail when the name
exists. Temporary files are named ``.NAME.pyprecision-PID-XXXX.tmp`` and locked (``flock``) while
their writer lives, so a later run recognises and deletes those a killed run left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from pyprecision.errors import DumpError
from pyprecision.io.remote import as_local, is_remote

__all__ = [
    "check_output_path",
    "atomic_file",
    "fsync_dir",
    "EarlyWriteback",
    "publish",
    "clean_stale_temporaries",
    "write_error",
    "TEMP_TAG",
]

PathLike = str | os.PathLike[str]

#: Every temporary file of ours is named ``.<final name>.<TEMP_TAG><pid>-<random>.tmp``.
TEMP_TAG = "pyprecision-"


def write_error(path: PathLike, exc: OSError) -> DumpError:
    """A DumpError naming the output ``path`` for an OSError met while writing it (ENOSPC ...)."""
    what = exc.strerror or str(exc)
    return DumpError(f"{os.fspath(path)}: cannot write: {what}")


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output_path(
    path: PathLike, inputs: Iterable[PathLike] = (), *, overwrite: bool = False
) -> Path | str:
    """Refuse an output that is (a link to) one of ``inputs``, exists when not ``overwrite``, is a
    directory, or whose directory does not exist (it is never created silently). Returns the
    output as a Path, or as its URL (a string) for a remote one (whose "directory" is a prefix
    an object store creates with the object, so it is not checked)."""
    if is_remote(os.fspath(path)):
        from pyprecision.io.remote_write import check_remote_output

        return check_remote_output(os.fspath(path), inputs, overwrite=overwrite)
    return _check_local_output(Path(as_local(path)), inputs, overwrite)


def _check_local_output(out: Path, inputs: Iterable[PathLike], overwrite: bool) -> Path:
    for src in inputs:
        if is_remote(os.fspath(src)):
            continue
        if _same_file(out, Path(as_local(src))):
            raise DumpError(f"{out}: refusing to write over the input {src}")
    if out.is_dir():
        raise DumpError(f"{out}: is a directory; expected a file name")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise DumpError(f"{out}: no such directory: {parent}")
    if (out.exists() or out.is_symlink()) and not overwrite:
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


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _renameat2_noreplace(src: str, dst: str) -> bool:
    """rename ``src`` to ``dst`` unless ``dst`` exists; False when the call is unavailable here."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)


def publish(tmp: PathLike, out: PathLike, *, overwrite: bool) -> None:
    """Give the complete file ``tmp`` its final name ``out``; without ``overwrite`` never replace an
    existing ``out`` (DumpError), even one created by a concurrent run after it was checked."""
    src, dst = os.fspath(tmp), os.fspath(out)
    if overwrite:
        os.replace(src, dst)
        return
    try:
        if _renameat2_noreplace(src, dst):
            return
        try:
            os.link(src, dst)
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise DumpError(
                    f"{dst}: this file system can neither rename nor link without replacing; "
                    "pass overwrite=True / --force"
                ) from exc
            raise
        os.unlink(src)
    except FileExistsError:
        raise DumpError(
            f"{dst}: already exists (another run created it meanwhile?); nothing was replaced "
            "(pass overwrite=True / --force to replace it)"
        ) from None


def _lock(fd: int, *, block: bool) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def clean_stale_temporaries(directory: PathLike, name: str | None = None) -> list[str]:
    """Delete the temporary files of ours in ``directory`` (for output ``name``, or every output)
    whose writer is gone (their lock is free); returns what was deleted. A live writer's are kept."""
    d = os.fspath(directory) or "."
    try:
        entries = os.listdir(d)
    except OSError:
        return []
    prefix = f".{name}." if name is not None else "."
    gone = []
    for entry in entries:
        if not (entry.startswith(prefix) and TEMP_TAG in entry and entry.endswith(".tmp")):
            continue
        p = os.path.join(d, entry)
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if _lock(fd, block=False):
                os.unlink(p)
                gone.append(p)
        except OSError:
            pass
        finally:
            os.close(fd)
    return gone


def _umask() -> int:
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii") as fh,
    ):
        for line in fh:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _locked_temporary(directory: Path, out: Path) -> tuple[int, str]:
    """A new temporary file for ``out``, locked, mode 0666 minus the umask (like open(2))."""
    while True:
        import tempfile  # ~4 ms at start-up; only a writer needs it

        fd, tmp = tempfile.mkstemp(
            prefix=f".{out.name}.{TEMP_TAG}{os.getpid()}-", suffix=".tmp", dir=directory
        )
        _lock(fd, block=True)
        try:
            same = os.stat(tmp).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:  # a cleaner took it for stale between mkstemp and the lock
            same = False
        if same:
            os.fchmod(fd, 0o666 & ~_umask())
            return fd, tmp
        os.close(fd)


@contextmanager
def atomic_file(
    path: PathLike, inputs: Iterable[PathLike] = (), *, overwrite: bool = False, fsync: bool = True
) -> Iterator[IO[bytes]]:
    """Yield a binary file opened on a temporary name next to ``path``; on a clean exit flush,
    fsync and publish it as ``path`` (replacing nothing unless ``overwrite``); on an exception
    delete it and re-raise. An OSError while writing (disk full ...) becomes a DumpError naming
    ``path``. Stale temporaries of ``path`` left by killed runs are deleted first.

    A remote ``path`` (a URL fsspec opens) is written to a local spool file, uploaded under a
    temporary name next to ``path`` and renamed (see :mod:`pyprecision.io.remote_write`)."""
    if is_remote(os.fspath(path)):
        from pyprecision.io.remote_write import remote_atomic_file

        with remote_atomic_file(os.fspath(path), inputs, overwrite=overwrite) as spool:
            yield spool
        return
    out = _check_local_output(Path(as_local(path)), inputs, overwrite)
    directory = out.parent if str(out.parent) else Path(".")
    clean_stale_temporaries(directory, out.name)
    try:
        fd, tmp = _locked_temporary(directory, out)
    except OSError as exc:
        raise write_error(out, exc) from exc
    ok = False
    try:
        with os.fdopen(fd, "w+b") as fh:
            yield fh
            try:
                fh.flush()
                if fsync:
                    os.fsync(fh.fileno())
                publish(tmp, out, overwrite=overwrite)
            except OSError as exc:
                raise write_error(out, exc) from exc
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
