"""Dumps as devices write them: raw binary (dtype, shape, byte order, offset), or a self-describing
.npy / .npz / safetensors file — one array, checked against what the caller says it should be."""

from __future__ import annotations

import os
from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.io.dtypes import parse_dtype
from pyprecision.io.store import open_tensors
from pyprecision.io.tensors import map_bytes
from pyprecision.io.torch_files import is_torch_file

__all__ = ["read_raw", "load_dump"]

_BYTE_ORDERS = {"little": "<", "big": ">", "native": "=", "<": "<", ">": ">", "=": "="}
_SELF_DESCRIBING = (".npy", ".npz", ".safetensors")


def _shape(shape: Any) -> tuple[int, ...] | None:
    if shape is None:
        return None
    if isinstance(shape, str):
        text = shape.strip().strip("()[]").replace("x", ",")
        try:
            shape = [int(s) for s in text.split(",") if s.strip()]
        except ValueError as exc:
            raise DumpError(f"bad shape {shape!r}; write it like 4,128 or 4x128") from exc
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise DumpError(f"bad shape {dims}: negative dimension")
    return dims


def read_raw(
    path: str | os.PathLike[str],
    dtype: Any,
    shape: Sequence[int] | str | None = None,
    *,
    byte_order: str = "little",
    offset: int = 0,
) -> np.ndarray:
    """A raw binary dump as a read-only array in native byte order.

    ``dtype``: any spelling :func:`parse_dtype` takes. ``shape``: a sequence or ``"4,128"``; None
    reads a flat array. The bytes after ``offset`` must be exactly ``prod(shape) × itemsize`` (with
    no shape: a whole number of items) — a mismatch is a DumpError, never a guess. ``byte_order``:
    little | big | native. Memory-mapped unless the bytes must be swapped.
    """
    p = os.fspath(path)
    dt = parse_dtype(dtype)
    if byte_order not in _BYTE_ORDERS:
        raise DumpError(f"byte order must be little, big or native, not {byte_order!r}")
    if not os.path.isfile(p):
        raise DumpError(f"{p}: no such file")
    size = os.path.getsize(p)
    if offset < 0 or offset > size:
        raise DumpError(f"{p}: offset {offset} is outside the file ({size} bytes)")
    avail = size - offset
    dims = _shape(shape)
    if dims is None:
        if avail % dt.itemsize:
            raise DumpError(
                f"{p}: {avail} bytes after offset {offset} is not a whole number of "
                f"{dt} items ({dt.itemsize} bytes each)"
            )
        dims = (avail // dt.itemsize,)
    want = prod(dims) * dt.itemsize
    if avail != want:
        raise DumpError(
            f"{p}: size does not match the shape: {dt}{list(dims)} needs {want} bytes, "
            f"the file has {avail} after offset {offset}"
        )
    swap = (
        dt.itemsize > 1 and np.dtype(f"{_BYTE_ORDERS[byte_order]}u{dt.itemsize}").byteorder == ">"
    )
    if not swap:
        return map_bytes(p, offset, dt, dims)
    codes = map_bytes(p, offset, np.dtype(f">u{dt.itemsize}"), dims)
    return codes.astype(f"=u{dt.itemsize}").view(dt)


def load_dump(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    dtype: Any = None,
    shape: Sequence[int] | str | None = None,
    byte_order: str | None = None,
    offset: int | None = None,
) -> np.ndarray:
    """One array from a dump file.

    .npy / .npz / .safetensors files describe themselves: ``name`` picks the tensor (needed when
    there are several); a given ``shape`` must match; a given ``dtype`` must match or have the same
    item size as a stored raw-code / void type (bf16 saved by numpy is ``V2``), which it then
    relabels. Any other file is raw binary and needs ``dtype`` (see :func:`read_raw`).
    """
    p = os.fspath(path)
    if not (p.endswith(_SELF_DESCRIBING) or is_torch_file(p)):
        if dtype is None:
            raise DumpError(f"{p}: a raw binary dump needs a dtype (and a shape)")
        return read_raw(p, dtype, shape, byte_order=byte_order or "little", offset=offset or 0)
    if byte_order is not None or offset:
        raise DumpError(f"{p}: byte order and offset apply to raw binary dumps only")
    store = open_tensors(p)
    if name is None:
        if len(store) != 1:
            raise DumpError(
                f"{p}: holds {len(store)} arrays ({', '.join(list(store)[:8])}); say which one"
            )
        name = next(iter(store))
    if name not in store:
        raise DumpError(f"{p}: no array {name!r}; have {', '.join(list(store)[:8])}")
    info = store[name]
    dims = _shape(shape)
    if dims is not None and dims != info.shape:
        raise DumpError(f"{p}: {name!r} has shape {list(info.shape)}, expected {list(dims)}")
    arr = store.load(name)
    if dtype is not None:
        dt = parse_dtype(dtype)
        if dt != arr.dtype:
            if dt.itemsize != arr.dtype.itemsize or arr.dtype.kind not in "uiV":
                raise DumpError(f"{p}: {name!r} is stored as {arr.dtype}, not {dt}")
            arr = arr.view(dt)
    return arr
