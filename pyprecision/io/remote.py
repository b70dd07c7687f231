"""URLs for every reader and writer of :mod:`pyprecision.io`, through fsspec (docs/io.md, "Remote").

A plain path, or a ``file://`` URL (which is a plain path, written differently), takes the local
code path: memory maps, ``flock`` and ``renameat2``, and fsspec is not imported. Any other URL
(``s3://``, ``gs://``, ``hf://``, ``memory://`` ... and fsspec's chained ``a::b://`` forms) is
opened with fsspec, and read with ranged reads (``cat_file(path, start, end)``): a header is a few
small reads, a tensor one read of its byte range. fsspec is an optional extra; without it, or
without the URL's own backend (s3fs, gcsfs, huggingface_hub ...), a URL is one clear DumpError.

The helpers here (``exists``, ``is_file``, ``is_dir``, ``file_size``, ``open_binary``,
``read_bytes``, ``read_range``, ``list_names``, ``join``, ``parent``) take either kind of name and
are what the readers call instead of ``os`` and ``open``; on a plain path each is exactly the
``os`` call it replaces.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import re
from collections.abc import Iterator
from typing import IO, Any, cast

from pyprecision.errors import DumpError

__all__ = [
    "CLOUD_EXTRA",
    "is_url",
    "is_remote",
    "as_local",
    "filesystem",
    "remote_errors",
    "exists",
    "is_file",
    "is_dir",
    "file_size",
    "open_binary",
    "read_bytes",
    "read_range",
    "list_names",
    "join",
    "parent",
    "RangeFile",
]

#: What to install for URLs.
CLOUD_EXTRA = "pip install pyprecision[cloud]"

PathLike = str | os.PathLike[str]

#: ``scheme://`` (at least two letters: ``C://`` is not a URL) or fsspec's chained ``scheme::``.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+(://|::)")
_LOCAL_SCHEMES = ("file://", "local://")


def is_url(path: object) -> bool:
    """Whether ``path`` is a URL (``scheme://...`` or a chained ``scheme::...``), file:// included."""
    return isinstance(path, str) and _URL.match(path) is not None


def is_remote(path: object) -> bool:
    """Whether ``path`` is a URL that fsspec must open (any URL but ``file://`` / ``local://``)."""
    return is_url(path) and not str(path).startswith(_LOCAL_SCHEMES)


def as_local(path: PathLike) -> str:
    """``path`` as a string, a ``file://`` URL turned into the plain path it names
    (``file:///a/b`` → ``/a/b``, ``file://localhost/a`` → ``/a``, ``file://a/b`` → ``a/b``).
    Other names are returned unchanged."""
    p = os.fspath(path)
    for scheme in _LOCAL_SCHEMES:
        if p.startswith(scheme):
            rest = p[len(scheme) :]
            if rest.startswith("localhost/"):
                rest = rest[len("localhost") :]
            return rest or "."
    return p


def _protocol(url: str) -> str:
    return re.split(r"://|::", url, maxsplit=1)[0]


def _package(protocol: str) -> str:
    """The pip package of an fsspec protocol's implementation (``s3`` → ``s3fs``)."""
    try:
        from fsspec.registry import known_implementations  # type: ignore[import-untyped]
    except ImportError:
        return protocol
    cls = str(known_implementations.get(protocol, {}).get("class", ""))
    return cls.split(".")[0] or protocol


def filesystem(url: str) -> tuple[Any, str]:
    """``(fsspec file system, path inside it)`` for a URL; DumpError when fsspec is not installed
    (naming ``pip install pyprecision[cloud]``), when the protocol's backend is not (naming its
    package), or when the protocol is unknown."""
    try:
        import fsspec.core  # type: ignore[import-untyped]
    except ImportError:
        raise DumpError(
            f"{url}: reading and writing URLs needs fsspec, which is not installed: {CLOUD_EXTRA}"
        ) from None
    proto = _protocol(url)
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:
        package = _package(proto)
        if package == "fsspec":  # one of fsspec's own, missing what it needs (http: aiohttp)
            raise DumpError(
                f"{url}: the {proto}:// file system needs packages that are not installed: {exc}"
            ) from None
        raise DumpError(
            f"{url}: the {proto}:// file system is not installed: pip install {package} "
            f"(fsspec says: {exc})"
        ) from None
    except ValueError as exc:
        if "not known" in str(exc).lower():
            raise DumpError(
                f"{url}: unknown URL protocol {proto!r} (fsspec knows s3, gs, hf, az, http, "
                "memory, file and others)"
            ) from None
        raise DumpError(f"{url}: cannot open its file system: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a backend's own error (credentials ...)
        raise DumpError(
            f"{url}: cannot open its file system: {type(exc).__name__}: {exc}"
        ) from None


@contextlib.contextmanager
def remote_errors(url: str, verb: str = "read") -> Iterator[None]:
    """Turn what a file system raises into one DumpError ``{url}: ...`` (DumpError passes)."""
    try:
        yield
    except DumpError:
        raise
    except FileNotFoundError:
        raise DumpError(f"{url}: no such file") from None
    except PermissionError as exc:
        raise DumpError(f"{url}: cannot {verb}: permission denied ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - every backend has its own errors
        raise DumpError(f"{url}: cannot {verb}: {type(exc).__name__}: {exc}") from None


def exists(path: PathLike) -> bool:
    """Whether anything (a symbolic link included) has this name."""
    p = os.fspath(path)
    if not is_remote(p):
        return os.path.lexists(as_local(p))
    fs, inner = filesystem(p)
    with remote_errors(p, "check"):
        return bool(fs.exists(inner))


def is_file(path: PathLike) -> bool:
    """Whether ``path`` is a file (an object)."""
    p = os.fspath(path)
    if not is_remote(p):
        return os.path.isfile(as_local(p))
    fs, inner = filesystem(p)
    with remote_errors(p, "check"):
        return bool(fs.isfile(inner))


def is_dir(path: PathLike) -> bool:
    """Whether ``path`` is a directory (on an object store: a prefix with objects under it)."""
    p = os.fspath(path)
    if not is_remote(p):
        return os.path.isdir(as_local(p))
    fs, inner = filesystem(p)
    with remote_errors(p, "check"):
        return bool(fs.isdir(inner))


def file_size(path: PathLike) -> int:
    """The size in bytes."""
    p = os.fspath(path)
    if not is_remote(p):
        return os.path.getsize(as_local(p))
    fs, inner = filesystem(p)
    with remote_errors(p):
        size = fs.size(inner)
    if size is None:
        raise DumpError(f"{p}: its file system does not say how large it is")
    return int(size)


def open_binary(path: PathLike, size: int | None = None) -> IO[bytes]:
    """A seekable binary file for reading: ``open(path, "rb")``, or a :class:`RangeFile` (whose
    ``size``, when the caller knows it already, saves asking the store again)."""
    p = os.fspath(path)
    if not is_remote(p):
        return open(as_local(p), "rb")  # noqa: SIM115 - the caller closes it
    fs, inner = filesystem(p)
    return cast(IO[bytes], RangeFile(p, fs, inner, file_size(p) if size is None else size))


def read_bytes(path: PathLike) -> bytes:
    """The whole file (small files only: indexes, programs)."""
    p = os.fspath(path)
    if not is_remote(p):
        with open(as_local(p), "rb") as fh:
            return fh.read()
    fs, inner = filesystem(p)
    with remote_errors(p):
        return bytes(fs.cat_file(inner))


def read_range(url: str, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of a remote file in one ranged read (fewer at the file's end)."""
    fs, inner = filesystem(url)
    with remote_errors(url):
        return bytes(fs.cat_file(inner, start=start, end=end))


def list_names(path: PathLike) -> list[str]:
    """The names (not paths) of a directory's entries."""
    p = os.fspath(path)
    if not is_remote(p):
        return os.listdir(as_local(p) or ".")
    fs, inner = filesystem(p)
    with remote_errors(p, "list"):
        entries = fs.ls(inner, detail=False)
    return [posixpath.basename(str(e).rstrip("/")) for e in entries]


def find_files(url: str) -> list[str]:
    """Every object under the remote prefix ``url``, as paths relative to it (``a/b.json``),
    sorted; the remote counterpart of walking a directory."""
    fs, inner = filesystem(url)
    base = inner.rstrip("/")
    with remote_errors(url, "list"):
        found = fs.find(base, withdirs=False)
    rels = []
    for f in found:
        f = str(f)
        if f.startswith(base + "/"):
            rels.append(f[len(base) + 1 :])
    return sorted(rels)


def join(base: PathLike, name: str) -> str:
    """``base/name``: ``os.path.join`` for paths, one ``/`` for URLs."""
    b = os.fspath(base)
    if not is_url(b):
        return os.path.join(b, name)
    return b + name if b.endswith(("://", "/")) else f"{b}/{name}"


def parent(path: PathLike) -> str:
    """The directory of ``path``: ``os.path.dirname``, or the URL up to its last ``/`` (never
    above ``scheme://``)."""
    p = os.fspath(path)
    if not is_url(p):
        return os.path.dirname(p)
    head, sep, rest = p.rpartition("://")
    if "/" not in rest.rstrip("/"):
        return head + sep
    return head + sep + rest.rstrip("/").rsplit("/", 1)[0]


class RangeFile(io.RawIOBase):
    """A read-only, seekable, unbuffered file over a remote object: every ``read`` is one ranged
    read (``cat_file(path, start, end)``), so reading a header fetches the header, not the file."""

    def __init__(self, url: str, fs: Any, path: str, size: int) -> None:
        super().__init__()
        self.name = url
        self._fs, self._path, self._size, self._pos = fs, path, size, 0

    def readable(self) -> bool:
        """True."""
        return True

    def seekable(self) -> bool:
        """True."""
        return True

    def tell(self) -> int:
        """The position."""
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move the position (no read happens)."""
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError(22, "negative seek position", self.name)
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes (all the rest when negative) in one ranged read."""
        n = self._size - self._pos if size is None or size < 0 else size
        n = max(0, min(n, self._size - self._pos))
        if n == 0:
            return b""
        with remote_errors(self.name):
            data = bytes(self._fs.cat_file(self._path, start=self._pos, end=self._pos + n))
        self._pos += len(data)
        return data

    def readall(self) -> bytes:
        """The rest of the file."""
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        """Fill ``buffer`` from one ranged read; the number of bytes read."""
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)
