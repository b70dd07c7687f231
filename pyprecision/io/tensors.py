"""TensorInfo — where one tensor's bytes live — and read-only memory maps of those bytes."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.io.remote import is_remote, read_range

__all__ = ["TensorInfo", "map_bytes", "check_shape", "MAX_DIMS"]

#: The most dimensions a tensor may have (numpy's limit).
MAX_DIMS = 64
_MAX_BYTES = (1 << 63) - 1


#: File name suffixes of torch.save state dicts (a ``.bin`` is one only by its bytes).
TORCH_EXTS = (".pt", ".pth")


def check_shape(where: str, shape: Any, itemsize: int) -> tuple[int, ...]:
    """``shape`` as a tuple when it is a list/tuple of at most MAX_DIMS non-negative integers
    (booleans are not integers here) whose non-zero product × ``itemsize`` fits in 63 bits, so
    numpy can represent it; else DumpError ``{where}: ...``."""
    if not isinstance(shape, (list, tuple)) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise DumpError(f"{where}: shape {shape!r} is not a list of non-negative integers")
    if len(shape) > MAX_DIMS:
        raise DumpError(f"{where}: shape has {len(shape)} dimensions; at most {MAX_DIMS}")
    span = itemsize
    for d in shape:
        span *= max(d, 1)
        if span > _MAX_BYTES:
            raise DumpError(f"{where}: shape {list(shape)} is too large to address")
    return tuple(shape)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a dump or checkpoint file.

    ``dtype`` is the dtype of the values (ml_dtypes types for bf16/fp8); ``stored`` is the file's
    own name for it (``'BF16'``, ``'<f4'`` ...); ``offset`` is the byte offset of the data in
    ``path``, or None when the bytes are compressed (a deflated .npz member) and must be read,
    not mapped.
    ``format`` is the pyprecision format recorded for the tensor in the file's metadata, if any.
    """

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    path: str
    kind: str
    offset: int | None
    stored: str
    fortran_order: bool = False
    format: str | None = None
    reader: Callable[[], np.ndarray] | None = field(default=None, compare=False, repr=False)

    @property
    def size(self) -> int:
        """Number of elements."""
        return prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of data."""
        return self.size * self.dtype.itemsize


def _open_map(path: str) -> mmap.mmap | None:
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return None
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mm, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
        mm.madvise(mmap.MADV_SEQUENTIAL)
    return mm


def map_bytes(
    path: str,
    offset: int,
    dtype: Any,
    shape: tuple[int, ...],
    *,
    fortran_order: bool = False,
    cache: dict[str, mmap.mmap | None] | None = None,
) -> np.ndarray:
    """A read-only array over ``path``'s bytes at ``offset`` (copied only if misaligned for its
    item size: 2-byte items at an even address, 4-byte at a multiple of 4, ...).

    With ``cache`` (path -> map), every tensor of a file shares one map; a map lives as long as
    the cache or any array over it. A remote ``path`` (a URL) is read with one ranged read of the
    tensor's bytes instead (no map; ``cache`` is not used).
    """
    dt = np.dtype(dtype)
    count = prod(shape)
    if count == 0:
        return np.empty(shape, dt, order="F" if fortran_order else "C")
    if is_remote(path):  # one ranged read of the tensor's bytes
        return _remote_array(path, offset, dt, shape, fortran_order)
    if cache is None:
        mm = _open_map(path)
    else:
        if path not in cache:
            cache[path] = _open_map(path)
        mm = cache[path]
    if mm is None or offset + count * dt.itemsize > len(mm):
        raise DumpError(
            f"{path}: truncated: needs {offset + count * dt.itemsize} bytes, "
            f"has {0 if mm is None else len(mm)}"
        )
    arr = np.frombuffer(mm, dtype=dt, count=count, offset=offset)
    return _aligned(arr.reshape(shape, order="F" if fortran_order else "C"))


def _remote_array(
    url: str, offset: int, dt: np.dtype, shape: tuple[int, ...], fortran_order: bool
) -> np.ndarray:
    need = prod(shape) * dt.itemsize
    data = read_range(url, offset, offset + need)
    if len(data) != need:
        raise DumpError(
            f"{url}: truncated: needs {offset + need} bytes, has {offset + len(data)}"
        )
    arr = np.frombuffer(data, dtype=dt).reshape(shape, order="F" if fortran_order else "C")
    return _aligned(arr)


def _aligned(arr: np.ndarray) -> np.ndarray:
    dt = arr.dtype
    # numpy calls a raw-void (V2) or fp8 array aligned at any address, but a later view as
    # bfloat16/uint16 is not, and the C core loads whole items: copy unless naturally aligned
    natural = min(dt.itemsize & -dt.itemsize, 8) if dt.itemsize else 1
    if not arr.flags.aligned or arr.ctypes.data % natural:
        arr = arr.copy(order="K")
        arr.flags.writeable = False
    return arr
