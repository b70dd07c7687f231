"""Reading the arrays ``verify`` compares: raw binary, .npy, .npz and safetensors dumps.

A dump is read exactly as declared: a raw file whose size does not match ``--shape`` × dtype is a
:class:`~pyprecision.errors.DumpError`, never a guess. Containers holding several tensors need a key.
The heavy lifting is delegated to :mod:`pyprecision.io` when it is installed; the minimal readers
here are the fallback and give the same results.
"""
from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from pyprecision.errors import DumpError

__all__ = ["RawSpec", "read_array", "read_arrays", "parse_shape", "parse_dtype"]

_NAMED_DTYPES: dict[str, np.dtype] = {
    "bfloat16": np.dtype(ml_dtypes.bfloat16), "bf16": np.dtype(ml_dtypes.bfloat16),
    "fp8e4": np.dtype(ml_dtypes.float8_e4m3), "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "fp8_e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "fp8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "fp8e5": np.dtype(ml_dtypes.float8_e5m2), "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "fp8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "fp16": np.dtype(np.float16), "half": np.dtype(np.float16),
    "fp32": np.dtype(np.float32), "fp32r": np.dtype(np.float32), "fp64": np.dtype(np.float64),
}
_NUMPY_NAMES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                "float16", "float32", "float64", "bool")

# safetensors dtype strings (F8_E4M3 is torch.float8_e4m3fn, the OCP "fn" variant).
_SAFETENSORS: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype(np.uint16), "I16": np.dtype(np.int16), "U32": np.dtype(np.uint32),
    "I32": np.dtype(np.int32), "U64": np.dtype(np.uint64), "I64": np.dtype(np.int64),
    "F16": np.dtype(np.float16), "BF16": np.dtype(ml_dtypes.bfloat16),
    "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn), "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
}


def parse_dtype(name: str) -> np.dtype:
    """A dtype from a command-line name: numpy names, bfloat16 and the format names/aliases."""
    key = name.strip().lower()
    if key in _NAMED_DTYPES:
        return _NAMED_DTYPES[key]
    if key in _NUMPY_NAMES:
        return np.dtype(key)
    valid = ", ".join(sorted(set(_NUMPY_NAMES) | set(_NAMED_DTYPES)))
    raise DumpError(f"unknown dtype {name!r}; valid dtypes: {valid}")


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
    """How to read a headerless binary file: element dtype, shape (None: 1-D, whatever fits),
    byte order (``little``, ``big`` or ``native``) and a byte offset to skip."""

    dtype: np.dtype
    shape: tuple[int, ...] | None = None
    byte_order: str = "little"
    offset: int = 0


def _read_raw(path: Path, spec: RawSpec) -> np.ndarray:
    size = path.stat().st_size
    item = spec.dtype.itemsize
    if spec.offset < 0:
        raise DumpError(f"{path}: --offset must be non-negative, got {spec.offset}")
    if spec.offset > size:
        raise DumpError(f"{path}: offset {spec.offset} is beyond the end of the file ({size} bytes)")
    payload = size - spec.offset
    if spec.shape is None:
        if payload % item:
            raise DumpError(f"{path}: {payload} bytes after offset {spec.offset} is not a whole "
                            f"number of {spec.dtype} elements ({item} bytes each)")
        count, shape = payload // item, (payload // item,)
    else:
        count, shape = math.prod(spec.shape), spec.shape
        if count * item != payload:
            raise DumpError(f"{path}: shape {shape} of {spec.dtype} needs {count * item} bytes, "
                            f"the file has {payload} after offset {spec.offset}")
    order = {"little": "<", "big": ">", "native": "="}.get(spec.byte_order)
    if order is None:
        raise DumpError(f"bad byte order {spec.byte_order!r}; valid: little, big, native")
    stored = spec.dtype.newbyteorder(order) if spec.dtype.kind in "uif" and item > 1 else spec.dtype
    if spec.dtype.kind == "V" and item > 1 and order == ">":  # ml_dtypes types: swap by hand
        raw = np.fromfile(path, np.dtype(f">u{item}"), count, offset=spec.offset)
        return raw.astype(f"u{item}").view(spec.dtype).reshape(shape)
    data = np.fromfile(path, stored, count, offset=spec.offset)
    return data.astype(spec.dtype.newbyteorder("="), copy=False).reshape(shape)


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    blob = path.read_bytes()
    if len(blob) < 8:
        raise DumpError(f"{path}: truncated safetensors file ({len(blob)} bytes)")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise DumpError(f"{path}: safetensors header of {n} bytes runs past the end of the file")
    try:
        header = json.loads(blob[8:8 + n])
    except ValueError as exc:
        raise DumpError(f"{path}: malformed safetensors header ({exc})") from None
    data = memoryview(blob)[8 + n:]
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS.get(info.get("dtype", ""))
        if dtype is None:
            raise DumpError(f"{path}: tensor {name!r} has unsupported dtype {info.get('dtype')!r}")
        shape = tuple(int(d) for d in info["shape"])
        lo, hi = (int(v) for v in info["data_offsets"])
        if hi > len(data) or hi - lo != math.prod(shape) * dtype.itemsize:
            raise DumpError(f"{path}: tensor {name!r} ({shape} {info['dtype']}) does not match its "
                            f"data offsets [{lo}, {hi}) in a {len(data)}-byte payload")
        out[name] = np.frombuffer(data[lo:hi], dtype.newbyteorder("<") if dtype.kind in "uif"
                                  else dtype).astype(dtype, copy=False).reshape(shape)
    return out


def read_arrays(path: str | Path, raw: RawSpec | None = None) -> dict[str, np.ndarray]:
    """Every array in a dump file, by name (``.npy`` and raw files have the one name ``""``).

    The kind follows the extension: ``.npy``, ``.npz``, ``.safetensors``; anything else is raw
    binary and needs ``raw`` (its dtype at least).
    """
    p = Path(path)
    if not p.is_file():
        raise DumpError(f"{p}: no such file")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            return {"": np.load(p, allow_pickle=False)}
        if suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        if suffix == ".safetensors":
            return _read_safetensors(p)
    except DumpError:
        raise
    except (ValueError, OSError, EOFError, KeyError, TypeError) as exc:
        raise DumpError(f"{p}: not a readable {suffix} file ({exc})") from None
    if raw is None:
        raise DumpError(f"{p}: a raw binary dump needs --dtype (and --shape)")
    return {"": _read_raw(p, raw)}


def read_array(path: str | Path, key: str | None = None, raw: RawSpec | None = None) -> np.ndarray:
    """One array from a dump: the only one in the file, or the one named ``key``."""
    arrays = read_arrays(path, raw)
    if key != "__dtypes__":
        arrays.pop("__dtypes__", None)  # the dtype-name side table of `hlo-run` outputs
    if key:
        if key not in arrays:
            raise DumpError(f"{path}: no array named {key!r}; it holds: {', '.join(arrays) or '-'}")
        return arrays[key]
    if len(arrays) != 1:
        raise DumpError(f"{path}: holds {len(arrays)} arrays ({', '.join(arrays)}); choose one "
                        "with a key")
    return next(iter(arrays.values()))
