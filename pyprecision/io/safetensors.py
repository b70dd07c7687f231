"""safetensors read and write, byte-exact and memory-mapped, for every dtype (BF16 and FP8 too).

The layout: 8-byte little-endian header length N, N bytes of JSON (``{name: {dtype, shape,
data_offsets: [begin, end]}, "__metadata__": {str: str}}``), then the data region; offsets are
relative to the data region, tensors are contiguous, C-order, little-endian.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from math import prod
from typing import Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.formats import format as _format
from pyprecision.io.atomic import EarlyWriteback, atomic_file, write_error
from pyprecision.io.dtypes import SAFETENSORS_DTYPES, safetensors_dtype
from pyprecision.io.remote import as_local, file_size, open_binary
from pyprecision.io.tensors import TensorInfo, check_shape

__all__ = ["read_safetensors_header", "SafetensorsWriter", "DTYPES_METADATA_KEY"]

MAX_HEADER = 100_000_000  # the limit of the reference implementation
#: ``__metadata__`` key holding ``{tensor: format name}`` for tensors pyprecision encoded.
DTYPES_METADATA_KEY = "pyprecision.dtypes"


def _fail(path: str, what: str) -> DumpError:
    return DumpError(f"{path}: {what}")


def _read_json_header(path: str) -> tuple[dict[str, Any], int, int]:
    size = file_size(path)
    with open_binary(path, size) as fh:  # a URL: two ranged reads, 8 bytes then the JSON
        head = fh.read(8)
        if len(head) < 8:
            raise _fail(
                path, f"not a safetensors file: {size} bytes, shorter than the 8-byte header length"
            )
        (n,) = struct.unpack("<Q", head)
        if n > MAX_HEADER:
            raise _fail(
                path, f"header length {n} is implausible (limit {MAX_HEADER}); not safetensors?"
            )
        if 8 + n > size:
            raise _fail(
                path,
                f"truncated: header says {n} bytes of JSON, file has {size - 8} after the length",
            )
        raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _fail(path, f"malformed JSON header: {exc}") from exc
    if not isinstance(header, dict):
        raise _fail(path, "malformed header: the JSON is not an object")
    return header, 8 + n, size


def _metadata(path: str, header: dict[str, Any]) -> dict[str, str]:
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _fail(path, "malformed header: __metadata__ must map strings to strings")
    return meta


def _formats_of(path: str, meta: Mapping[str, str]) -> dict[str, str]:
    text = meta.get(DTYPES_METADATA_KEY)
    if not text:
        return {}
    try:
        table = json.loads(text)
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise ValueError("expected a JSON object of format names")
        return {str(k): _format(v).name for k, v in table.items()}
    except Exception as exc:  # noqa: BLE001 - any malformation is the file's fault
        raise _fail(path, f"malformed {DTYPES_METADATA_KEY} metadata: {exc}") from exc


def _entry(path: str, name: str, e: Any, data_start: int, fmt: str | None) -> TensorInfo:
    if not isinstance(e, dict) or not {"dtype", "shape", "data_offsets"} <= set(e):
        raise _fail(path, f"tensor {name!r}: header entry needs dtype, shape and data_offsets")
    st, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
    if not isinstance(st, str) or st not in SAFETENSORS_DTYPES:
        raise _fail(
            path,
            f"tensor {name!r}: unsupported dtype {st!r}; supported: "
            f"{', '.join(SAFETENSORS_DTYPES)}",
        )
    if not isinstance(shape, list):
        raise _fail(path, f"tensor {name!r}: shape {shape!r} is not a list")
    shape = check_shape(f"{path}: tensor {name!r}", shape, SAFETENSORS_DTYPES[st].itemsize)
    if not (
        isinstance(offs, list)
        and len(offs) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) for o in offs)
        and 0 <= offs[0] <= offs[1]
    ):
        raise _fail(
            path, f"tensor {name!r}: data_offsets {offs!r} is not [begin, end] with begin <= end"
        )
    dtype = SAFETENSORS_DTYPES[st]
    want = prod(shape) * dtype.itemsize
    if offs[1] - offs[0] != want:
        raise _fail(
            path,
            f"tensor {name!r}: header lies about its size: {st}{shape} is {want} bytes "
            f"but data_offsets {offs} span {offs[1] - offs[0]}",
        )
    if fmt is not None:
        f = _format(fmt)
        if f.bits // 8 != dtype.itemsize:
            raise _fail(path, f"tensor {name!r}: metadata says {f.name} but it is stored as {st}")
        dtype = f.dtype
    return TensorInfo(
        name=name,
        dtype=dtype,
        shape=tuple(shape),
        path=path,
        kind="safetensors",
        offset=data_start + offs[0],
        stored=st,
        format=fmt,
    )


def read_safetensors_header(
    path: str | os.PathLike[str],
) -> tuple[list[TensorInfo], dict[str, str]]:
    """The tensors (in data order) and ``__metadata__`` of a safetensors file, fully validated.

    Raises DumpError naming the file for: a file too short, an implausible or truncated header,
    malformed JSON, unknown dtypes, a size that does not match dtype×shape, overlapping tensors,
    gaps,
    data past the end of the file (truncation) or trailing bytes.
    """
    p = as_local(path)
    header, data_start, size = _read_json_header(p)
    meta = _metadata(p, header)
    fmts = _formats_of(p, meta)
    infos = [_entry(p, k, v, data_start, fmts.get(k)) for k, v in header.items()]
    infos.sort(key=lambda t: (t.offset or 0, t.nbytes))
    data_len = size - data_start
    pos = 0
    for t in infos:
        begin = (t.offset or 0) - data_start
        if begin != pos:
            what = (
                "overlaps the previous tensor"
                if begin < pos
                else f"leaves a gap of {begin - pos} bytes"
            )
            raise _fail(p, f"malformed header: tensor {t.name!r} {what}")
        pos = begin + t.nbytes
    if pos > data_len:
        raise _fail(
            p, f"truncated: the header needs {pos} bytes of tensor data, the file has {data_len}"
        )
    if pos < data_len:
        raise _fail(p, f"malformed: {data_len - pos} bytes after the last tensor")
    return infos, meta


class SafetensorsWriter:
    """Write a safetensors file tensor by tensor, chunk by chunk, atomically.

    ``tensors`` lists ``(name, dtype, shape)``; ``dtype`` is a numpy dtype or safetensors name. The
    header is written first; ``write(name, chunk)`` appends a chunk's bytes to that tensor (any
    dtype of the same item size: raw codes are fine). Tensors are laid out widest item first so
    every tensor is naturally aligned. On a clean exit every tensor must be complete; the file is
    fsynced and renamed to ``path``. On an exception the temporary file is removed.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        tensors: Sequence[tuple[str, Any, Sequence[int]]],
        metadata: Mapping[str, str] | None = None,
        *,
        inputs: Iterable[Any] = (),
        overwrite: bool = False,
        fsync: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self._inputs, self._overwrite, self._fsync = list(inputs), overwrite, fsync
        names = [t[0] for t in tensors]
        if len(set(names)) != len(names) or "__metadata__" in names:
            raise DumpError(f"{self.path}: duplicate or reserved tensor names")
        specs = []
        for name, dt, shape in tensors:
            st = dt if isinstance(dt, str) else safetensors_dtype(dt)
            if not isinstance(st, str) or st not in SAFETENSORS_DTYPES:
                raise DumpError(f"{self.path}: tensor {name!r}: unknown safetensors dtype {st!r}")
            specs.append((name, st, tuple(int(d) for d in shape)))
        specs.sort(key=lambda s: -SAFETENSORS_DTYPES[s[1]].itemsize)  # stable: keeps input order
        header: dict[str, Any] = {}
        if metadata:
            header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
        self._spans: dict[str, tuple[int, int, int]] = {}
        pos = 0
        for name, st, shape in specs:
            nbytes = prod(shape) * SAFETENSORS_DTYPES[st].itemsize
            header[name] = {"dtype": st, "shape": list(shape), "data_offsets": [pos, pos + nbytes]}
            self._spans[name] = (pos, nbytes, SAFETENSORS_DTYPES[st].itemsize)
            pos += nbytes
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        self._head = struct.pack("<Q", len(text)) + text
        self._data_start = len(self._head)
        self._total = self._data_start + pos
        self._written = dict.fromkeys(self._spans, 0)
        self._stack = ExitStack()
        self._fd = -1
        self._early = EarlyWriteback(-1)

    def __enter__(self) -> SafetensorsWriter:
        fh = self._stack.enter_context(
            atomic_file(self.path, self._inputs, overwrite=self._overwrite, fsync=self._fsync)
        )
        try:
            fh.write(self._head)
            fh.flush()
            os.ftruncate(fh.fileno(), self._total)
        except OSError as exc:
            self._stack.__exit__(type(exc), exc, exc.__traceback__)
            raise write_error(self.path, exc) from exc
        self._fd = fh.fileno()
        self._early = EarlyWriteback(self._fd)
        return self

    def write(self, name: str, chunk: np.ndarray) -> None:
        """Append ``chunk``'s bytes (C order) to tensor ``name``."""
        if name not in self._spans:
            raise DumpError(f"{self.path}: no tensor {name!r} was declared")
        begin, nbytes, item = self._spans[name]
        a = np.asarray(chunk)
        if a.dtype.itemsize != item:
            raise DumpError(f"{self.path}: tensor {name!r} has {item}-byte items, got {a.dtype}")
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        buf = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        done = self._written[name]
        if done + buf.size > nbytes:
            raise DumpError(
                f"{self.path}: tensor {name!r}: {done + buf.size} bytes written, only "
                f"{nbytes} declared"
            )
        mv = buf.data
        at = self._data_start + begin + done
        try:
            while mv:
                n = os.pwrite(self._fd, mv, at)
                mv, at = mv[n:], at + n
        except OSError as exc:
            raise write_error(self.path, exc) from exc
        self._early.wrote(self._data_start + begin + done, buf.size)
        self._written[name] = done + buf.size

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._early.close()
        if exc_type is None:
            short = [n for n, (_, nb, _) in self._spans.items() if self._written[n] != nb]
            if short:
                err = DumpError(f"{self.path}: incomplete tensors {short[:5]}; nothing was written")
                self._stack.__exit__(DumpError, err, None)
                raise err
        self._stack.__exit__(exc_type, exc, tb)


def save_safetensors(
    path: str | os.PathLike[str],
    tensors: Mapping[str, np.ndarray],
    metadata: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> None:
    """Write whole arrays (numpy or ml_dtypes dtypes) to a safetensors file atomically."""
    specs = [(k, v.dtype, v.shape) for k, v in tensors.items()]
    with SafetensorsWriter(path, specs, metadata, **kwargs) as w:
        for k, v in tensors.items():
            w.write(k, v)


__all__ += ["save_safetensors"]
