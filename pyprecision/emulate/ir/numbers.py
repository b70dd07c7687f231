"""Numbers of the IR evaluator: rounding exact values to an IR dtype, and the storage arrays of memory.

Internal values are float32 arrays (every float dtype: each is a subset of fp32, so float32 holds its
values exactly, at half the memory of float64) or int64 / uint64 (integers). Arithmetic widens them to
float64 where it needs to (``ops``); ``round_to`` rounds once through the cast core (RNE, Neuron default
saturation) and wraps integers (two's complement). Decision EM-8 (docs/decisions/ir.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.formats import format as format_of
from pyprecision.ir import DType
from pyprecision.kernel import as_float32, quantize_f32, round_to_format, wrap_int

__all__ = ["TileRounding", "convert", "finite_max", "from_storage", "round_to", "to_storage",
           "view_bits"]


def finite_max(dt: DType) -> float:
    """The largest finite value of float dtype ``dt`` (what ``satinf`` clamps +inf to)."""
    return float(np.finfo(np.float32).max) if dt.fmt is None else float(format_of(dt.fmt).max)


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


#: TileRounding's limits: tiles up to this many elements, roots up to ``_ROOT_ELEMENTS`` (the
#: rounded copy of a root is kept until ``_ROOTS`` newer roots replace it)
_TILE_ELEMENTS = 1 << 16
_ROOT_ELEMENTS = 1 << 22
_ROOTS = 4


class TileRounding:
    """``round_to`` for one frame of the IR evaluator, cheaper on the lowering's PE tiles
    (decision EM-16), with the same bits:

    - a narrow rounding of a small view into a larger float32 array (the root: a batched
      operand the lowering slices into one tile per batch entry) rounds the whole root the second
      time one of its views is rounded, and every later view is a slice of that rounded copy
      (rounding is elementwise: rounding then slicing is slicing then rounding);
    - a view into such a rounded copy, rounded again to the same dtype (the cast after a PE
      transpose of a tile, which returns the tile's values), is returned as it is, as is a bf16
      rounding (no saturation) of values that are already bf16 values, none NaN: RNE of a
      representable value is the value.
    """

    def __init__(self) -> None:
        #: [root, dtype, its rounded copy (root's shape) or None], newest last
        self._roots: list[list[Any]] = []

    def __call__(self, x: Any, dt: DType) -> np.ndarray:
        """``round_to(x, dt)``, bit for bit."""
        a = np.asarray(x)
        if dt.fmt is None or a.dtype != np.float32 or not 0 < a.size <= _TILE_ELEMENTS \
                or not dt.is_float:
            return round_to(a, dt)
        root = a.base
        if isinstance(root, np.ndarray):
            while isinstance(root.base, np.ndarray):
                root = root.base
            got = self._from_root(a, root, dt)
            if got is not None:
                return got
        if dt.fmt == "bf16" and _bf16_values(a):
            return a
        return round_to(a, dt)

    def convert(self, x: Any, src: DType | None, dst: DType) -> np.ndarray:
        """``convert`` with this rounding."""
        if src is dst:
            return np.asarray(x)
        return self(x, dst)

    def _from_root(self, a: np.ndarray, root: np.ndarray, dt: DType) -> np.ndarray | None:
        for entry in self._roots:
            if entry[1] is not dt:
                continue
            if entry[2] is root:  # already rounded to dt: unchanged
                return a
            if entry[0] is root:
                rounded = entry[2]
                if rounded is None:
                    rounded = entry[2] = round_to(root, dt)
                    rounded.flags.writeable = False
                return _same_view(a, root, rounded)
        if root.dtype == np.float32 and root.flags.c_contiguous \
                and 2 * a.size <= root.size <= _ROOT_ELEMENTS:
            self._roots = self._roots[1 - _ROOTS:] + [[root, dt, None]]  # first sight: a tile only
        return None


def _same_view(a: np.ndarray, root: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The view of ``other`` (``root``'s shape, C order) that ``a`` is of ``root``."""
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    flat = other.reshape(-1)
    if a.flags.c_contiguous:
        return flat[offset // 4:offset // 4 + a.size].reshape(a.shape)
    return np.lib.stride_tricks.as_strided(flat[offset // 4:], a.shape, a.strides, writeable=False)


def _bf16_values(a: np.ndarray) -> bool:
    """Every element of float32 ``a`` is a bf16 value (low 16 bits zero) and none is NaN."""
    return not bool((a.view(np.uint32) & 0xFFFF).any()) and not bool(np.isnan(a).any())
