"""The loop IR's ``reduce_precision``, ``popcnt`` and ``clz`` on NumPy values: the HLO evaluator's
bit recipes (:mod:`.hlo_misc_ops`; called, not copied) on the IR dtype's HLO type."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from pyprecision.emulate.ir.numbers import round_to
from pyprecision.emulate.shared.misc_ops import leading_zeros_of, popcount_of, reduce_precision_bits
from pyprecision.hlo import PrimitiveType

__all__ = ["bit_count", "reduce_precision"]

P = PrimitiveType
#: IR float dtype name -> (HLO type, numpy dtype) of the formats XLA's recipe is written for
_FLOATS = {"float32": (P.F32, np.float32), "bfloat16": (P.BF16, ml_dtypes.bfloat16),
           "float16": (P.F16, np.float16)}
_INTS = {f"{k}{b}": getattr(P, f"{h}{b}") for k, h in (("int", "S"), ("uint", "U"))
         for b in (8, 16, 32, 64)}


def reduce_precision(x: np.ndarray, dt: Any, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """XLA's reduce-precision of values ``x`` (exact in ``dt``) in ``dt``: bit for bit in f32,
    bf16 and f16; in the other float dtypes (fp32r, the fp8s) on the values' f32 bits, then
    rounded to ``dt`` (decision L22)."""
    t, npdt = _FLOATS.get(dt.name, (P.F32, np.float32))
    out = reduce_precision_bits(np.asarray(x, np.float64).astype(npdt), t, exponent_bits,
                                mantissa_bits)
    return round_to(out.astype(np.float64), dt)


def bit_count(kind: str, x: np.ndarray, dt: Any) -> np.ndarray:
    """popcnt / clz of integer values ``x`` of IR dtype ``dt`` in its width (int64)."""
    count = popcount_of if kind == "popcnt" else leading_zeros_of
    return count(np.asarray(x), _INTS[dt.name])
