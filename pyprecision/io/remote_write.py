"""Atomic publish on an fsspec store: a temporary object next to the final one, then ``fs.mv``.

What each store can promise is in docs/io.md ("Remote files"). In short: the bytes are made in a
local spool file (the writers seek and ``pwrite``; object stores take a stream), uploaded under a
temporary name ``.NAME.pyprecision-PID-XXXX.tmp`` in the output's directory, then renamed to the
final name. A reader sees the final name only once it is complete. "Never replace" is a check
(``fs.exists``) before the rename: on stores without a no-replace rename (all of them but the local
file system) a run that creates the same name between the check and the rename is overwritten.
The temporary object is created empty first, so a store without write access fails before any
work, and it is deleted when anything fails.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from pyprecision.errors import DumpError
from pyprecision.io.remote import (
    PathLike,
    filesystem,
    is_remote,
    join,
    parent,
    remote_errors,
)

__all__ = ["check_remote_output", "remote_atomic_file", "RemoteDirectory", "UPLOAD_CHUNK"]

#: Bytes per write when a spool file is uploaded.
UPLOAD_CHUNK = 8 << 20


def _key(url: str) -> tuple[str, str]:
    fs, inner = filesystem(url)
    return type(fs).__qualname__, fs._strip_protocol(inner).rstrip("/")


def check_remote_output(url: str, inputs: Iterable[PathLike] = (), *, overwrite: bool) -> str:
    """Refuse a remote output that is one of ``inputs`` (the same object, whatever the
    spelling of its URL), is a directory, or exists when not ``overwrite``."""
    key = _key(url)
    for src in inputs:
        s = os.fspath(src)
        if is_remote(s) and _key(s) == key:
            raise DumpError(f"{url}: refusing to write over the input {s}")
    fs, inner = filesystem(url)
    with remote_errors(url, "check"):
        if fs.isdir(inner):
            raise DumpError(f"{url}: is a directory; expected a file name")
        if not overwrite and fs.exists(inner):
            raise DumpError(f"{url}: already exists (pass overwrite=True / --force to replace it)")
    return url


def _temporary_name(url: str) -> str:
    from pyprecision.io.atomic import TEMP_TAG

    name = url.rstrip("/").rsplit("/", 1)[-1]
    tag = f".{name}.{TEMP_TAG}{os.getpid()}-{secrets.token_hex(4)}.tmp"
    return join(parent(url), tag)


def _upload(spool: IO[bytes], fs: Any, inner: str) -> None:
    spool.seek(0)
    with fs.open(inner, "wb") as out:
        while chunk := spool.read(UPLOAD_CHUNK):
            out.write(chunk)


def _publish(fs: Any, tmp: str, inner: str, url: str, *, overwrite: bool) -> None:
    if not overwrite and fs.exists(inner):
        raise DumpError(
            f"{url}: already exists (another run created it meanwhile?); nothing was replaced "
            "(pass overwrite=True / --force to replace it)"
        )
    fs.mv(tmp, inner)


@contextmanager
def remote_atomic_file(
    url: str, inputs: Iterable[PathLike] = (), *, overwrite: bool = False
) -> Iterator[IO[bytes]]:
    """Yield a local spool file; on a clean exit upload it as a temporary object next to ``url``
    and rename that to ``url`` (replacing nothing unless ``overwrite``: a check, see the module
    docstring); on an exception delete everything and re-raise."""
    check_remote_output(url, inputs, overwrite=overwrite)
    fs, inner = filesystem(url)
    tmp_url = _temporary_name(url)
    tmp = filesystem(tmp_url)[1]
    with remote_errors(url, "write"):
        fs.pipe_file(tmp, b"")  # write access is checked before any work
    ok = False
    try:
        try:
            spool_file = tempfile.TemporaryFile(prefix="pyprecision-spool-")  # noqa: SIM115 - closed below
        except OSError as exc:  # TMPDIR missing or full
            raise DumpError(
                f"{url}: cannot make the local spool file in {tempfile.gettempdir()} (TMPDIR): "
                f"{exc.strerror or exc}"
            ) from exc
        with spool_file as spool:
            yield spool
            spool.flush()
            with remote_errors(url, "write"):
                _upload(spool, fs, tmp)
                _publish(fs, tmp, inner, url, overwrite=overwrite)
        ok = True
    finally:
        if not ok:
            with contextlib.suppress(Exception):
                fs.rm_file(tmp)


class RemoteDirectory:
    """The remote side of :class:`~pyprecision.io.OutputDirectory`: the marker is an object
    (there is no lock: a concurrent run into the same prefix is not detected); a failure deletes
    what the run published and the marker."""

    def __init__(self, url: str, marker_name: str) -> None:
        self.url = url
        self.marker = join(url, marker_name)
        self._fs, self._inner = filesystem(url)
        self._files: list[tuple[str, bool]] = []

    def enter(self) -> None:
        """Write the marker. No directory is made: objects go under the prefix, which an object
        store needs no ``mkdir`` for (and ``makedirs`` could create a bucket from a typo)."""
        fs = self._fs
        with remote_errors(self.url, "write"):
            if fs.isfile(self._inner):
                raise DumpError(f"{self.url}: exists and is not a directory")
            fs.pipe_file(filesystem(self.marker)[1], f"pid {os.getpid()}\n".encode())

    def published(self, url: str, replaced: bool) -> None:
        """Record that this run published ``url``."""
        self._files.append((url, replaced))

    def exit(self, failed: bool) -> None:
        """Remove the marker; on failure first remove what this run published."""
        fs = self._fs
        keep_marker = False
        if failed:
            for f, replaced in reversed(self._files):
                keep_marker = keep_marker or replaced
                with contextlib.suppress(Exception):
                    fs.rm_file(filesystem(f)[1])
        if not keep_marker:
            with remote_errors(self.marker, "write"), contextlib.suppress(FileNotFoundError):
                fs.rm_file(filesystem(self.marker)[1])
