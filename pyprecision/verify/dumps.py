"""Reading the arrays ``verify`` compares, through :mod:`pyprecision.io`.

A dump is read exactly as declared: a raw file whose size does not match ``--shape`` × dtype is a
:class:`~pyprecision.errors.DumpError`, never a guess. Containers holding several tensors need a key.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.io import is_torch_file, load_dump, open_tensors
from pyprecision.io import parse_dtype as _io_parse_dtype

__all__ = ["RawSpec", "is_container", "parse_dtype", "parse_shape", "read_array", "read_arrays"]

_CONTAINERS = (".npy", ".npz", ".safetensors")


def is_container(path: str | Path) -> bool:
    """Whether the file describes itself (.npy, .npz, .safetensors, torch .pt) rather than being raw
    binary."""
    return str(path).lower().endswith(_CONTAINERS) or is_torch_file(path)


def parse_dtype(name: str) -> np.dtype:
    """A dtype from a command-line name (numpy, ml_dtypes, safetensors or format names)."""
    return _io_parse_dtype(name)


def parse_shape(text: str) -> tuple[int, ...]:
    """``"4,3"``, ``"4x3"`` or ``"[4, 3]"`` → (4, 3); ``""`` or ``"()"`` → () (a scalar)."""
    body = text.strip().strip("[]()").replace("x", ",").replace(" ", "")
    if not body:
        return ()
    try:
        dims = tuple(int(d) for d in body.split(",") if d != "")
    except ValueError:
        raise DumpError(f"bad shape {text!r}: expected comma-separated integers, e.g. 4,3") from None
    if any(d < 0 for d in dims):
        raise DumpError(f"bad shape {text!r}: dimensions must be non-negative")
    return dims


@dataclass(frozen=True)
class RawSpec:
    """How to read a file: for raw binary the element dtype (required), shape (None: 1-D), byte
    order (``little``, ``big`` or ``native``) and a byte offset; for a container only ``dtype``
    (relabels raw codes, e.g. numpy's ``V2`` for bf16) and ``shape`` (must match) apply."""

    dtype: np.dtype | None
    shape: tuple[int, ...] | None = None
    byte_order: str = "little"
    offset: int = 0


def read_array(path: str | Path, key: str | None = None, raw: RawSpec | None = None,
               void_as: np.dtype | None = None) -> np.ndarray:
    """One array from a dump: the only one in the file, or the one named ``key``. An untyped
    void array (numpy saves fp8 arrays as ``|V1``, bf16 as ``|V2``) of ``void_as``'s item size is
    read as ``void_as`` (e.g. the codes of the format being checked)."""
    spec = raw or RawSpec(None)
    if is_container(path):
        if spec.offset:
            raise DumpError(f"{path}: --offset applies to raw binary dumps only")
        if key is None and str(path).lower().endswith(".npz"):
            names = [n for n in open_tensors(str(path)) if n != "__dtypes__"]
            key = names[0] if len(names) == 1 else None
        arr = load_dump(path, name=key, dtype=spec.dtype, shape=spec.shape)
        if (void_as is not None and spec.dtype is None and arr.dtype.type is np.void
                and arr.dtype.itemsize == np.dtype(void_as).itemsize):
            arr = arr.view(void_as)
    else:
        if key:
            raise DumpError(f"{path}: a raw binary file holds one array; it has no key {key!r}")
        arr = load_dump(path, dtype=spec.dtype, shape=spec.shape, byte_order=spec.byte_order,
                        offset=spec.offset)
    return np.asarray(arr)


def read_arrays(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of a container file, by name (the ``__dtypes__`` side table included)."""
    store = open_tensors(str(path))
    return {name: np.asarray(store.load(name)) for name in store}
