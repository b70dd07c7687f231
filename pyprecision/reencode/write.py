"""Output side of a re-encode: one writer interface over safetensors and .npz, and the index."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.formats import format as _format
from pyprecision.io import SAFETENSORS_DTYPES, SafetensorsWriter, atomic_file

if TYPE_CHECKING:
    from pyprecision.io import NpzWriter

__all__ = ["Sink", "OutSpec", "open_sink", "write_index", "BackgroundWriter", "QUEUE_DEPTH"]

#: Chunks that may wait for the background writer (the encoder runs ahead by this much).
QUEUE_DEPTH = 2

#: (tensor name, safetensors dtype name, shape, pyprecision format name or None)
OutSpec = tuple[str, str, tuple[int, ...], "str | None"]


class Sink(Protocol):
    """Where encoded chunks go: ``write(name, chunk)`` appends to tensor ``name``; tensors are
    written one after another in any order for safetensors, in declaration order for .npz."""

    def write(self, name: str, chunk: np.ndarray) -> None:
        """Append ``chunk`` to tensor ``name``."""


class _NpzSink:
    def __init__(self, writer: NpzWriter, specs: Sequence[OutSpec]) -> None:
        self._w = writer
        self._specs = {s[0]: s for s in specs}
        self._current: str | None = None

    def write(self, name: str, chunk: np.ndarray) -> None:
        if name != self._current:
            _, st, shape, fmt = self._specs[name]
            self._w.begin(name, _npz_dtype(st, fmt), shape)
            self._current = name
        self._w.write(chunk)


def _npz_dtype(st: str, fmt: str | None) -> np.dtype:
    """float16 / float32 / ints as themselves; bf16 and fp8 as their raw codes (uint)."""
    from pyprecision.io import npy_can_store

    dt = SAFETENSORS_DTYPES[st]
    if npy_can_store(dt):
        return dt
    if fmt is not None:
        return _format(fmt).storage_dtype
    raise DumpError(f"{dt} cannot be stored in .npz without a pyprecision format name")


_Item = tuple[str, np.ndarray, int, "Callable[[], None] | None"]


class BackgroundWriter:
    """Writes chunks to ``sink`` on a thread while the caller encodes the next ones.

    ``write(name, chunk, nbytes, before)`` queues a chunk (the caller must not reuse its buffer
    until QUEUE_DEPTH more chunks are queued); the thread calls ``before()`` (e.g. counting the
    chunk's special values), writes the chunk and reports ``nbytes`` to ``progress``. An error on
    the thread is re-raised in the caller at the next ``write`` or on exit.
    """

    def __init__(self, sink: Sink, progress: Callable[[int], None]) -> None:
        self._sink, self._progress = sink, progress
        self._queue: queue.Queue[_Item | None] = queue.Queue(QUEUE_DEPTH)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="reencode-writer", daemon=True)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is None:
                try:
                    if item[3] is not None:
                        item[3]()
                    self._sink.write(item[0], item[1])
                    self._progress(item[2])
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    self._error = exc

    def __enter__(self) -> BackgroundWriter:
        self._thread.start()
        return self

    def write(
        self, name: str, chunk: np.ndarray, nbytes: int, before: Callable[[], None] | None = None
    ) -> None:
        """Queue ``chunk`` for tensor ``name``."""
        if self._error is not None:
            raise self._error
        self._queue.put((name, chunk, nbytes, before))

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._queue.put(None)
        self._thread.join()
        if exc_type is None and self._error is not None:
            raise self._error


@contextmanager
def open_sink(
    path: str,
    kind: str,
    specs: Sequence[OutSpec],
    metadata: Mapping[str, str],
    *,
    inputs: Iterable[Any],
    overwrite: bool,
) -> Iterator[Sink]:
    """A writer for one output file (``kind``: safetensors | npz | pt), committed on a clean exit."""
    if kind == "safetensors":
        with SafetensorsWriter(
            path,
            [(n, st, sh) for n, st, sh, _ in specs],
            metadata,
            inputs=inputs,
            overwrite=overwrite,
        ) as w:
            yield w
    elif kind == "pt":  # a torch.save state dict (io/torch_files.py)
        from pyprecision.io import TorchWriter

        with TorchWriter(path, [(n, st, sh) for n, st, sh, _ in specs], metadata, inputs=inputs,
                         overwrite=overwrite) as tw:
            yield tw
    else:
        from pyprecision.io import NpzWriter

        with NpzWriter(path, metadata, inputs=inputs, overwrite=overwrite) as nw:
            yield _NpzSink(nw, specs)


def write_index(
    path: str,
    index: Mapping[str, Any],
    weight_map: Mapping[str, str],
    total_size: int,
    metadata: Mapping[str, Any],
    *,
    inputs: Iterable[Any],
    overwrite: bool,
) -> None:
    """Write a ``*.safetensors.index.json`` for the output shards (atomically, last)."""
    meta = dict(index.get("metadata") or {})
    meta.update(metadata)
    meta["total_size"] = total_size
    doc = {
        **{k: v for k, v in index.items() if k not in ("metadata", "weight_map")},
        "metadata": meta,
        "weight_map": dict(weight_map),
    }
    with atomic_file(path, inputs, overwrite=overwrite) as fh:
        fh.write(json.dumps(doc, indent=2).encode() + b"\n")
