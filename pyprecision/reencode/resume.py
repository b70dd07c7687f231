"""Resuming an interrupted distributed re-encode: per-shard completion records and the job
directory (docs/distributed.md, docs/decisions/distributed.md).

A shard counts as done when its output exists, a record for it exists in the directory
``.pyprecision-resume/`` of the output, and the record matches: the options that decide the bits,
the input shard's size and checksum (sha256 by default), the output's size and the sha256 of its
header. Records live beside the shards (never in them), so the shards stay byte-identical to a
one-machine run; a finished job deletes them with the incomplete-output marker.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import shutil
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyprecision.errors import DumpError
from pyprecision.io import (
    INCOMPLETE_MARKER,
    TEMP_TAG,
    as_local,
    atomic_file,
    clean_stale_temporaries,
    exists,
    file_size,
    filesystem,
    is_remote,
    join,
    lock_marker,
    open_binary,
    read_bytes,
    remote_errors,
)
from pyprecision.reencode.plan import ReencodeOptions, run_metadata

__all__ = [
    "RECORDS_DIR",
    "ShardRecord",
    "JobDirectory",
    "bit_options",
    "file_sha256",
    "source_checksum",
    "CHECKSUMS",
    "head_sha256",
    "read_record",
    "write_record",
    "record_matches",
    "made_by",
]

#: The directory (inside the output directory) holding one completion record per output shard.
RECORDS_DIR = ".pyprecision-resume"
#: Version of the record layout; a record of another version never matches.
RECORD_VERSION = 1
#: The options that decide the output bits (threads, chunking, verify do not).
BIT_FIELDS = ("to", "rounding", "saturate", "nan", "seed", "include", "exclude", "scale",
              "output_format")
_BLOCK = 8 << 20


def bit_options(o: ReencodeOptions) -> dict[str, Any]:
    """The options of ``o`` that decide the bits, with the package version, JSON-ready."""
    from pyprecision import __version__

    d = asdict(o)
    out: dict[str, Any] = {k: list(d[k]) if isinstance(d[k], tuple) else d[k] for k in BIT_FIELDS}
    out["version"] = __version__
    return out


def file_sha256(path: str) -> str:
    """The sha256 of a whole file (the digest the Hugging Face Hub records for LFS files), hashed
    from a read-only memory map in 8 MiB steps: no copies, and hashlib releases the GIL. A remote
    file (a URL) is hashed from ranged reads of 8 MiB, in order: a second read of its bytes."""
    h = hashlib.sha256()
    if is_remote(path):
        with open_binary(path) as rf:
            while chunk := rf.read(_BLOCK):
                h.update(chunk)
        return h.hexdigest()
    with open(as_local(path), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return h.hexdigest()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                for i in range(0, size, _BLOCK):
                    h.update(view[i : i + _BLOCK])
                    if hasattr(mmap, "MADV_DONTNEED"):  # keep the resident set small
                        mm.madvise(mmap.MADV_DONTNEED, i, min(_BLOCK, size - i))
            finally:
                view.release()
    return h.hexdigest()


#: How an input shard is fingerprinted: ``sha256`` of every byte (the default), or ``quick``:
#: size, modification time and the header's sha256 (no full read; trusts the file's mtime).
CHECKSUMS = ("sha256", "quick")


def source_checksum(path: str, how: str = "sha256") -> str:
    """The input shard's fingerprint, prefixed with how it was taken (``sha256:…``, ``quick:…``)."""
    if how == "sha256":
        return "sha256:" + file_sha256(path)
    if how == "quick":
        if is_remote(path):
            return f"quick:{remote_stamp(path)}:{head_sha256(path, 'safetensors')}"
        st = os.stat(as_local(path))
        return f"quick:{st.st_size}:{st.st_mtime_ns}:{head_sha256(path, 'safetensors')}"
    raise DumpError(f"unknown checksum {how!r}; valid: {', '.join(CHECKSUMS)}")


#: What an object store's ``info`` may say about an object's version, most specific first:
#: its entity tag (S3, GCS, Azure, the Hub's LFS sha256), then a time it was last written.
_TAG_KEYS = ("ETag", "etag", "md5Hash", "lfs", "version_id", "generation")
_TIME_KEYS = ("LastModified", "last_modified", "mtime", "updated", "created")


def remote_stamp(url: str) -> str:
    """``size:tag:time`` of a remote object from one ``info`` call, no read of its bytes: the
    store's entity tag (ETag, md5Hash ...) and last-modified time, ``-`` for what it does not say
    (``memory://`` has only a creation time)."""
    fs, inner = filesystem(url)
    with remote_errors(url, "check"):
        info = fs.info(inner)
    tag = next((str(info[k]) for k in _TAG_KEYS if info.get(k)), "-")
    when = next((str(info[k]) for k in _TIME_KEYS if info.get(k)), "-")
    return f"{info.get('size')}:{tag}:{when}"


def head_sha256(path: str, kind: str) -> str:
    """The sha256 of a safetensors file's length word and JSON header (the first MiB of any
    other kind): cheap to re-read, and it names every tensor, dtype, offset and the metadata."""
    with open_binary(path) as fh:
        if kind == "safetensors":
            first = fh.read(8)
            n = struct.unpack("<Q", first)[0] if len(first) == 8 else 0
            data = first + fh.read(min(n, 100_000_000))
        else:
            data = fh.read(1 << 20)
    return hashlib.sha256(data).hexdigest()


@dataclass
class ShardRecord:
    """What a finished shard task wrote: enough to decide later that the shard need not be redone,
    and the per-tensor results a resumed run reports (and sums into the index) without re-reading."""

    options: dict[str, Any]
    source: str
    source_size: int
    source_checksum: str
    output: str
    output_size: int
    output_head_sha256: str
    tensors: list[dict[str, Any]] = field(default_factory=list)
    version: int = RECORD_VERSION


def _record_path(outdir: str, fout: str) -> str:
    return join(join(outdir, RECORDS_DIR), os.path.basename(fout) + ".json")


def read_record(outdir: str, fout: str) -> ShardRecord | None:
    """The record of output ``fout``, or None when there is none (or it is unreadable)."""
    path = _record_path(outdir, fout)
    try:
        if not exists(path):
            return None
        doc = json.loads(read_bytes(path).decode("utf-8"))
        rec = ShardRecord(**doc)
    except (OSError, ValueError, TypeError, DumpError):
        return None
    return rec if rec.version == RECORD_VERSION else None


def write_record(outdir: str, fout: str, rec: ShardRecord) -> None:
    """Write (or replace) the record of ``fout`` atomically."""
    with atomic_file(_record_path(outdir, fout), overwrite=True) as fh:
        fh.write(json.dumps(asdict(rec), sort_keys=True).encode() + b"\n")


def record_matches(
    rec: ShardRecord, o: ReencodeOptions, fin: str, fout: str, kind: str, source_sum: str
) -> bool:
    """Whether the output ``fout`` recorded in ``rec`` is this job's finished shard for ``fin``:
    same bit options, same input (size and checksum), output of the recorded size and header."""
    try:
        return (
            rec.options == bit_options(o)
            and rec.source == os.path.basename(fin)
            and rec.output == os.path.basename(fout)
            and rec.source_size == file_size(fin)
            and rec.source_checksum == source_sum
            and rec.output_size == file_size(fout)
            and rec.output_head_sha256 == head_sha256(fout, kind)
        )
    except (OSError, DumpError):
        return False


def made_by(path: str, o: ReencodeOptions, source: str) -> bool:
    """Whether the existing safetensors file or index ``path`` records this job's options for input
    ``source`` (its ``pyprecision.reencode`` metadata): this job wrote it before it was killed."""
    want = run_metadata(o, source)["pyprecision.reencode"]
    try:
        with open_binary(path) as fh:
            if path.endswith(".json"):
                meta = json.loads(fh.read().decode("utf-8")).get("metadata") or {}
            else:
                (n,) = struct.unpack("<Q", fh.read(8))
                if n > 100_000_000:
                    return False
                meta = json.loads(fh.read(n).decode("utf-8")).get("__metadata__") or {}
    except (OSError, ValueError, struct.error, AttributeError, DumpError):
        return False
    return isinstance(meta, dict) and meta.get("pyprecision.reencode") == want


class JobDirectory:
    """``with JobDirectory(path) as d:`` — the output directory of a resumable job.

    Creates ``path`` if needed (its parent must exist), creates and locks the incomplete-output
    marker (a second live job into the same directory is refused), notes in ``d.resumed`` whether
    an earlier job left the marker, and deletes temporaries killed writers left. A clean exit
    removes the records and the marker; an exception keeps both, with every shard published so
    far, so that a re-run resumes — except when this job published nothing and found no earlier
    job's marker: then the marker goes too (and the directory, if this job created it).

    A remote ``path`` (a URL fsspec opens) is a prefix: no directory is made, the marker and the
    records are objects under it, and nothing is locked — a second job into the same prefix is
    not detected (docs/distributed.md, "On object storage"). Temporary objects of killed writers
    are deleted when a job resumes and when one finishes.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.url = as_local(path)
        self.remote = is_remote(self.url)
        self.path = Path(self.url)
        self.resumed = False
        self._created = False
        self._fd = -1

    @property
    def records(self) -> str:
        """The directory (prefix) of completion records."""
        return join(self.url, RECORDS_DIR)

    def __enter__(self) -> JobDirectory:
        if self.remote:
            self._enter_remote()
            return self
        if not self.path.is_dir():
            if self.path.exists() or self.path.is_symlink():
                raise DumpError(f"{self.path}: exists and is not a directory")
            if not self.path.parent.is_dir():
                raise DumpError(f"{self.path}: no such directory: {self.path.parent}")
            os.mkdir(self.path)
            self._created = True
        marker = self.path / INCOMPLETE_MARKER
        self.resumed = marker.exists()
        self._fd = lock_marker(self.path, str(marker))
        Path(self.records).mkdir(exist_ok=True)
        clean_stale_temporaries(self.path)
        clean_stale_temporaries(self.records)
        return self

    def _enter_remote(self) -> None:
        fs, inner = filesystem(self.url)
        marker = filesystem(join(self.url, INCOMPLETE_MARKER))[1]
        with remote_errors(self.url, "write"):
            if fs.isfile(inner):
                raise DumpError(f"{self.url}: exists and is not a directory")
            self.resumed = bool(fs.exists(marker))
            fs.pipe_file(marker, f"pid {os.getpid()}\n".encode())  # fails early without access
        if self.resumed:
            self._remove_remote_temporaries()

    def _remove_remote_temporaries(self) -> None:
        """Delete the temporary objects (``.NAME.pyprecision-PID-XXXX.tmp``) directly under the
        prefix and under its records (not deeper: a prefix may hold other jobs' outputs)."""
        for where in (self.url, self.records):
            fs, inner = filesystem(where)
            with contextlib.suppress(Exception):
                for p in fs.find(inner, maxdepth=1):
                    name = str(p).rstrip("/").rsplit("/", 1)[-1]
                    if name.startswith(".") and TEMP_TAG in name and name.endswith(".tmp"):
                        fs.rm_file(p)

    def _remote_records(self) -> list[str]:
        fs, inner = filesystem(self.records)
        with remote_errors(self.records, "list"):
            return [str(p) for p in fs.find(inner)]

    def _exit_remote(self, failed: bool) -> None:
        fs, _ = filesystem(self.url)
        records = self._remote_records()
        if failed and (self.resumed or records):
            return  # keep the marker, the records and every published shard: a re-run resumes
        if not failed:
            self._remove_remote_temporaries()
        with remote_errors(self.url, "write"):
            if records:
                fs.rm(records)
            with contextlib.suppress(FileNotFoundError):
                fs.rm_file(filesystem(join(self.url, INCOMPLETE_MARKER))[1])

    def published(self, path: str | os.PathLike[str], replaced: bool) -> None:
        """Record that ``path`` was published (kept on failure, like every shard: no-op)."""

    def made_dir(self, path: str | os.PathLike[str]) -> None:
        """Create the sub-directory ``path`` (and its missing parents) inside the output (a no-op
        under a remote prefix: an object store makes prefixes with the objects under them)."""
        if self.remote:
            return
        p = Path(path)
        if self.path.resolve() not in p.resolve().parents:
            raise DumpError(f"{path}: not inside the output directory {self.path}")
        p.mkdir(parents=True, exist_ok=True)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.remote:
            self._exit_remote(failed=exc_type is not None)
            return
        marker = self.path / INCOMPLETE_MARKER
        records = Path(self.records)
        nothing = not self.resumed and not any(records.iterdir())  # no shard published
        empty = nothing and not any(
            e.name not in (INCOMPLETE_MARKER, RECORDS_DIR) for e in os.scandir(self.path)
        )
        if exc_type is None or nothing:
            shutil.rmtree(records, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                marker.unlink()
        os.close(self._fd)
        self._fd = -1
        if exc_type is not None and empty and self._created:
            with contextlib.suppress(OSError):
                os.rmdir(self.path)
