"""An output directory written as one unit: marked incomplete until its last file is published.

A run that writes several files into a directory (a sharded checkpoint: shards, then the index)
creates the marker file ``.pyprecision-incomplete`` first and holds a lock on it while it runs.
Readers refuse a directory with the marker (:func:`check_complete`), so a directory whose run was
killed before its index was written never opens as a valid, smaller checkpoint; a second run into
the same directory while the first is alive is refused; a run that fails removes every file it
published. Only a clean finish removes the marker.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any

from pyprecision.errors import DumpError
from pyprecision.io.atomic import clean_stale_temporaries, fsync_dir, write_error
from pyprecision.io.remote import as_local, exists, is_remote, join

__all__ = ["INCOMPLETE_MARKER", "OutputDirectory", "check_complete"]

#: The file whose presence says "this directory is being written, or its writer died".
INCOMPLETE_MARKER = ".pyprecision-incomplete"


def check_complete(directory: str | os.PathLike[str]) -> None:
    """Refuse (DumpError) a directory that holds the incomplete-output marker."""
    d = as_local(directory) or "."
    if exists(join(d, INCOMPLETE_MARKER)):
        raise DumpError(
            f"{d}: incomplete output: a run writing it was interrupted or is still running "
            f"({INCOMPLETE_MARKER} is present); re-run it with --force, or delete the directory"
        )


def lock_marker(directory: Path, marker: str) -> int:
    """Open and exclusively lock ``marker`` (the incomplete-output marker of ``directory``),
    returning its descriptor; one clear error when another run holds it. Retries when the
    previous holder removed the file between our open and our lock (the lock would be on an
    unlinked file)."""
    while True:
        try:
            fd = os.open(marker, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        except OSError as exc:
            raise write_error(marker, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DumpError(
                f"{directory}: another run is writing this directory now; nothing was written"
            ) from None
        try:
            same = os.stat(marker).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:  # the previous holder finished and removed it meanwhile
            same = False
        if same:
            return fd
        os.close(fd)


class OutputDirectory:
    """``with OutputDirectory(path) as d:`` — create ``path`` if needed (its parent must exist),
    mark it incomplete, and clean up temporaries killed runs left in it. Call
    ``d.published(file, replaced)`` after each file is published. A clean exit removes the marker;
    an exception removes the files this run published (the marker stays only if one of them
    replaced an older file, since the directory then holds neither the old nor the new output).

    A remote directory (a URL fsspec opens) gets its marker as an object, but no lock: a
    concurrent run into the same prefix is not detected there (docs/io.md, "Remote files")."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._remote = None
        if is_remote(os.fspath(path)):
            from pyprecision.io.remote_write import RemoteDirectory

            self._remote = RemoteDirectory(os.fspath(path), INCOMPLETE_MARKER)
        self.path = Path(as_local(path))
        self._created = False
        self._fd = -1
        self._files: list[tuple[str, bool]] = []
        self._dirs: list[str] = []

    @property
    def marker(self) -> str:
        """The marker file's path (its URL for a remote directory)."""
        if self._remote is not None:
            return self._remote.marker
        return str(self.path / INCOMPLETE_MARKER)

    def _make(self) -> None:
        if self.path.is_dir():
            return
        if self.path.exists() or self.path.is_symlink():
            raise DumpError(f"{self.path}: exists and is not a directory")
        try:
            os.mkdir(self.path)
        except FileNotFoundError:
            raise DumpError(f"{self.path}: no such directory: {self.path.parent}") from None
        except FileExistsError:
            if not self.path.is_dir():
                raise DumpError(f"{self.path}: exists and is not a directory") from None
            return
        except OSError as exc:
            raise write_error(self.path, exc) from exc
        self._created = True

    def _lock_marker(self) -> None:
        self._fd = lock_marker(self.path, self.marker)

    def __enter__(self) -> OutputDirectory:
        if self._remote is not None:
            self._remote.enter()
            return self
        self._make()
        try:
            self._lock_marker()
        except BaseException:
            self._remove_if_created()
            raise
        fsync_dir(self.path)
        clean_stale_temporaries(self.path)
        return self

    def published(self, path: str | os.PathLike[str], replaced: bool) -> None:
        """Record that this run published ``path`` (``replaced``: over an older file)."""
        if self._remote is not None:
            self._remote.published(os.fspath(path), replaced)
            return
        self._files.append((as_local(path), replaced))

    def made_dir(self, path: str | os.PathLike[str]) -> None:
        """Create the sub-directory ``path`` (and its missing parents) inside the output; a failed
        run removes them again, innermost first, if it left them empty. A no-op in a remote
        directory (an object store makes prefixes with the objects under them)."""
        if self._remote is not None:
            return
        todo = []
        p = Path(path)
        while not p.is_dir():
            if p == self.path or self.path not in p.parents:
                raise DumpError(f"{path}: not inside the output directory {self.path}")
            todo.append(p)
            p = p.parent
        for q in reversed(todo):
            try:
                q.mkdir()
            except OSError as exc:
                raise write_error(q, exc) from exc
            self._dirs.append(str(q))

    def _remove_if_created(self) -> None:
        if self._created:
            with contextlib.suppress(OSError):
                os.rmdir(self.path)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._remote is not None:
            self._remote.exit(failed=exc_type is not None)
            return
        keep_marker = False
        if exc_type is not None:
            for f, replaced in reversed(self._files):
                keep_marker = keep_marker or replaced
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f)
            for sub in reversed(self._dirs):
                with contextlib.suppress(OSError):
                    os.rmdir(sub)
        if not keep_marker:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.marker)
        os.close(self._fd)
        self._fd = -1
        fsync_dir(self.path)
        if exc_type is not None and not keep_marker:
            self._remove_if_created()
