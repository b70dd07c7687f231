"""Numbers of the IR evaluator: rounding exact values to an IR dtype, and the storage arrays of memory.

Internal values are float32 arrays (every float dtype: each is a subset of fp32, so float32 holds its
values exactly, at half the memory of float64) or int64 / uint64 (integers). Arithmetic widens them to
float64 where it needs to (``ops``); ``round_to`` rounds once through the cast core (RNE, Neuron default
saturation) and wraps integers (two's complement). Decision EM-8 (docs/decisions/ir.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.ir import DType
from pyprecision.kernel import as_float32, quantize_f32, round_to_format, wrap_int

__all__ = ["convert", "from_storage", "round_to", "to_storage", "view_bits"]


def round_to(x: Any, dt: DType) -> np.ndarray:
    """Round exact values ``x`` (float64 array, or integers for int→float) to ``dt``.

    Floats: float32 by numpy (RNE; a float32 array is returned as it is), the narrow formats by the
    cast core (``quantize_f32``: RNE, Neuron default saturation, N7); result float32. Integers: wrap
    modulo 2**bits; result int64 (uint64 for uint64).
    """
    a = np.asarray(x)
    if dt.is_float:
        if dt.fmt is None:
            with np.errstate(over="ignore"):  # past the float32 range RNE gives ±inf, as intended
                return a.astype(np.float32, copy=False)
        return quantize_f32(a, dt.fmt)
    return wrap_int(a, dt.bits, dt.kind == "int")


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
        return round_to_format(np.asarray(x), dt.fmt, saturate=False)
    return np.asarray(x).astype(dt.np_dtype)


def from_storage(a: np.ndarray, dt: DType) -> np.ndarray:
    """An array of ``dt.np_dtype`` as internal values (float32, or int64 / uint64); a float32 array
    is returned as it is (no copy)."""
    if dt.is_float:
        return as_float32(a)
    return np.asarray(a).astype(np.uint64 if dt.kind == "uint" and dt.bits == 64 else np.int64)


def view_bits(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Reinterpret the bits of ``src`` values as ``dst`` (same width)."""
    return from_storage(to_storage(x, src).view(dst.np_dtype), dst)
