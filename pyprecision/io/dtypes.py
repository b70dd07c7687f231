"""Dtype names in dumps and checkpoints: safetensors, numpy / ml_dtypes and format names."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from pyprecision.errors import DumpError, FormatError
from pyprecision.formats import format as _format

__all__ = ["SAFETENSORS_DTYPES", "parse_dtype", "safetensors_dtype", "safetensors_name_of_format"]

#: safetensors dtype name -> numpy dtype. ``F8_E4M3`` is OCP e4m3fn (torch.float8_e4m3fn), not the
#: IEEE-like e4m3 of pyprecision's ``fp8e4``, which has no safetensors name (docs/decisions/io.md IO1).
SAFETENSORS_DTYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype(np.uint8),
    "I8": np.dtype(np.int8),
    "U16": np.dtype(np.uint16),
    "I16": np.dtype(np.int16),
    "U32": np.dtype(np.uint32),
    "I32": np.dtype(np.int32),
    "U64": np.dtype(np.uint64),
    "I64": np.dtype(np.int64),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F32": np.dtype(np.float32),
    "F64": np.dtype(np.float64),
    "C64": np.dtype(np.complex64),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
}
_NAME_OF = {dt: name for name, dt in SAFETENSORS_DTYPES.items()}



def safetensors_dtype(dtype: Any) -> str:
    """The safetensors name of a numpy dtype (native or little-endian); DumpError if it has none."""
    dt = np.dtype(dtype)
    if dt.byteorder == ">":
        dt = dt.newbyteorder("<")
    name = _NAME_OF.get(dt)
    if name is None:
        raise DumpError(
            f"dtype {dt} has no safetensors name; supported: {', '.join(_NAME_OF.values())}"
        )
    return name


def safetensors_name_of_format(fmt: Any) -> str:
    """The safetensors dtype that stores ``fmt``'s codes: the format's own safetensors name, else raw
    unsigned codes of its width (``U8`` for fp8e4, see decisions/io.md IO1)."""
    f = _format(fmt)
    return f.safetensors_name or f"U{f.bits}"


def parse_dtype(spec: Any) -> np.dtype:
    """A numpy dtype from a user's spelling.

    Accepts numpy dtypes and names (``float32``, ``<f4``, ``uint8``), ml_dtypes names
    (``bfloat16``, ``float8_e4m3fn``), safetensors names (``BF16``, ``F8_E4M3``) and pyprecision
    format names and aliases (``bf16``, ``fp8e4``, ``fp32r`` → float32). Unknown names: DumpError.
    """
    return _numeric(spec, _parse_dtype(spec))


def _numeric(spec: Any, dt: np.dtype) -> np.dtype:
    """Refuse dtypes that hold no numbers (object, strings, dates, structured or untyped void)."""
    if dt.kind in "biufc" or (dt.kind == "V" and dt.type is not np.void):
        return dt
    raise DumpError(
        f"dtype {spec!r} ({dt}) holds no numbers; use a numeric, bool, ml_dtypes or format name"
    )


def _parse_dtype(spec: Any) -> np.dtype:
    if not isinstance(spec, str):
        try:
            return np.dtype(spec)
        except (TypeError, ValueError) as exc:
            raise DumpError(f"not a dtype: {spec!r}") from exc
    text = spec.strip()
    if text in SAFETENSORS_DTYPES:
        return SAFETENSORS_DTYPES[text]
    try:
        return _format(text).dtype
    except FormatError:
        pass
    if hasattr(ml_dtypes, text):
        try:
            return np.dtype(getattr(ml_dtypes, text))
        except TypeError:
            pass
    try:
        return np.dtype(text)
    except (TypeError, ValueError, SyntaxError) as exc:  # numpy's dtype-string parser raises all three
        raise DumpError(
            f"unknown dtype {spec!r}; use a numpy name (float32, uint16, ...), an ml_dtypes name "
            "(bfloat16, float8_e4m3fn, ...), a safetensors name (BF16, F8_E4M3, ...) or a format "
            "name (bf16, fp16, fp8e4, fp8e4m3fn, fp8e5, fp32r)"
        ) from exc
