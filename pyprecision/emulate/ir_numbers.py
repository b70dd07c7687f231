"""Numbers of the IR evaluator: rounding exact values to an IR dtype, and the storage arrays of memory.

Internal values are float64 (every float dtype) or int64 / uint64 (integers); ``round_to`` rounds once
through the cast core (RNE, Neuron default saturation) and wraps integers (two's complement).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pyprecision
from pyprecision.ir import DType

__all__ = ["convert", "from_storage", "round_to", "to_storage", "view_bits"]


def round_to(x: Any, dt: DType) -> np.ndarray:
    """Round exact values ``x`` (float64 array, or integers for int→float) to ``dt``.

    Floats: float32 by numpy (RNE), the narrow formats by ``pyprecision.quantize`` (RNE, Neuron default
    saturation); result float64. Integers: wrap modulo 2**bits; result int64 (uint64 for uint64).
    """
    a = np.asarray(x)
    if dt.is_float:
        if dt.fmt is None:
            with np.errstate(over="ignore"):  # past the float32 range RNE gives ±inf, as intended
                return a.astype(np.float32).astype(np.float64)
        if a.dtype.kind == "f" and a.dtype != np.float64:
            a = a.astype(np.float64)
        return np.asarray(pyprecision.quantize(a, dt.fmt), dtype=np.float64)
    return _wrap(a, dt)


def _wrap(a: np.ndarray, dt: DType) -> np.ndarray:
    if a.dtype == object:
        m = 1 << dt.bits
        v = np.array([int(i) % m for i in a.ravel()], dtype=object).reshape(a.shape)
        if dt.kind == "int":
            v = np.array([i - m if i >= m >> 1 else i for i in v.ravel()], dtype=object).reshape(
                a.shape
            )
        return v.astype(np.uint64 if dt.kind == "uint" and dt.bits == 64 else np.int64)
    if dt.bits == 64:
        return a.astype(np.uint64 if dt.kind == "uint" else np.int64)
    u = a.astype(np.int64) & ((1 << dt.bits) - 1)
    if dt.kind == "int":
        u = np.where(u >= (1 << (dt.bits - 1)), u - (1 << dt.bits), u)
    return u.astype(np.int64)


def convert(x: Any, src: DType | None, dst: DType) -> np.ndarray:
    """Convert values of dtype ``src`` to ``dst``: the identity when the dtypes are equal (so a same-dtype
    load, store, copy or cast never changes a value — not even an fp8 ±inf under saturation), else
    ``round_to``. ``src=None`` means exact values of no particular dtype."""
    if src is dst:
        return np.asarray(x)
    return round_to(x, dst)


def to_storage(x: np.ndarray, dt: DType) -> np.ndarray:
    """Values (already representable in ``dt``) as an array of ``dt.np_dtype``."""
    if dt.is_float and dt.fmt is not None and dt.np_dtype != np.float32:
        # exact: the values are representable; saturate=False keeps an fp8 ±inf as ±inf
        return np.asarray(pyprecision.cast(np.asarray(x, dtype=np.float64), dt.fmt, saturate=False))
    return np.asarray(x).astype(dt.np_dtype)


def from_storage(a: np.ndarray, dt: DType) -> np.ndarray:
    """An array of ``dt.np_dtype`` as internal values (float64, or int64 / uint64)."""
    if dt.is_float:
        return np.asarray(a).astype(np.float64)
    return np.asarray(a).astype(np.uint64 if dt.kind == "uint" and dt.bits == 64 else np.int64)


def view_bits(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Reinterpret the bits of ``src`` values as ``dst`` (same width)."""
    return from_storage(to_storage(x, src).view(dst.np_dtype), dst)
