"""Element types of the HLO evaluator: NumPy dtypes, rounding every result to its type, converts.

Every value the evaluator holds is a NumPy array of ``numpy_dtype(t)`` for its HLO element type
``t`` (bf16/fp8 as ml_dtypes arrays, s4/u4 as int8/uint8, PRED as bool). ``round_to`` is the one
place a computed value becomes a value of an HLO type:

* F32 — NumPy's float32 cast (round to nearest even); F64 — exact (float64);
* BF16, F16, F8E4M3FN, F8E5M2, F8E4M3 — the cast core (``pyprecision.kernel.round_to_format``, RNE,
  ``saturate=False`` so overflow gives inf/NaN as XLA's convert does, NaN kept);
* the other small float types (fnuz fp8, f8e3m4, f4e2m1fn, f8e8m0fnu), which the cast core does
  not model — ml_dtypes' own float32 conversion;
* integers — XLA wraparound (two's complement modulo 2^bits; s4/u4 wrap to 4 bits) for an integer
  source, and XLA's float→int convert (``pyprecision.kernel.float_to_int``: truncate, saturate, NaN→0)
  for a float source.

See docs/decisions/hlo-eval.md.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.errors import EmulationError
from pyprecision.formats import formats
from pyprecision.hlo import PrimitiveType, numpy_dtype, type_name
from pyprecision.kernel import as_float32, float_to_int, round_to_format, wrap_int

P = PrimitiveType

#: HLO element types the cast core rounds to (its format names), from the format table.
CORE_FORMATS: dict[PrimitiveType, str] = {
    PrimitiveType[f.hlo_name.upper()]: f.name for f in formats() if f.hlo_name
}

_FLOATS = {P.F16, P.F32, P.F64, P.BF16, P.F8E5M2, P.F8E4M3FN, P.F8E4M3B11FNUZ, P.F8E5M2FNUZ,
           P.F8E4M3FNUZ, P.F8E4M3, P.F8E3M4, P.F4E2M1FN, P.F8E8M0FNU}
_SIGNED = {P.S1: 1, P.S2: 2, P.S4: 4, P.S8: 8, P.S16: 16, P.S32: 32, P.S64: 64}
_UNSIGNED = {P.U1: 1, P.U2: 2, P.U4: 4, P.U8: 8, P.U16: 16, P.U32: 32, P.U64: 64}


def is_float_type(t: PrimitiveType) -> bool:
    """A real floating-point element type."""
    return t in _FLOATS


def is_int_type(t: PrimitiveType) -> bool:
    """A signed or unsigned integer element type (PRED is not one)."""
    return t in _SIGNED or t in _UNSIGNED


def int_bits(t: PrimitiveType) -> tuple[int, bool]:
    """(bit width, signed) of an integer type."""
    if t in _SIGNED:
        return _SIGNED[t], True
    return _UNSIGNED[t], False


def dtype_of(t: PrimitiveType) -> np.dtype:
    """The NumPy dtype holding values of ``t``; EmulationError for types with none."""
    try:
        return numpy_dtype(t)
    except ValueError as e:
        raise EmulationError(f"element type {type_name(t)} is not supported by the evaluator") from e


def widen(x: np.ndarray) -> np.ndarray:
    """A float array as float32 (exact for every type narrower than f32); f32/f64 unchanged;
    integers and bools unchanged."""
    if x.dtype == np.float64 or x.dtype == np.float32:
        return x
    if x.dtype.kind in "biu":
        return x
    return as_float32(x)  # astype(np.float32) bit for bit, through the core's decode (N7)


def _wrap_int(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Integer (or bool) array → integer type ``t`` with two's-complement wraparound."""
    bits, signed = int_bits(t)
    return wrap_int(x, bits, signed).astype(dtype_of(t))


def _float_to_int(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """XLA convert float → integer: truncate toward zero, saturate, NaN → 0."""
    bits, signed = int_bits(t)
    if bits >= 8:
        src = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
        return np.asarray(float_to_int(src, dtype_of(t)))
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    v = np.trunc(widen(x).astype(np.float64))
    v = np.where(np.isnan(v), 0.0, np.clip(v, lo, hi))
    return v.astype(dtype_of(t))


def _round_float(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Float/int array → float type ``t``, rounded once to nearest even."""
    if t == P.F64:
        return np.asarray(x).astype(np.float64)
    if t == P.F32:
        return np.asarray(x).astype(np.float32)
    fmt = CORE_FORMATS.get(t)
    if fmt is not None:
        return round_to_format(x, fmt, saturate=False).view(dtype_of(t))
    # types the cast core does not model: ml_dtypes' own conversion (from float32)
    return np.asarray(x).astype(np.float32).astype(dtype_of(t))


def round_to(x: Any, t: PrimitiveType) -> np.ndarray:
    """Round a computed value (any NumPy numeric array) to element type ``t``.

    The source's kind decides integer conversion: float sources go through XLA's float→int
    convert, integer/bool sources wrap around."""
    a = np.asarray(x)
    with np.errstate(all="ignore"):
        return _round_any(a, t)


def _round_any(a: np.ndarray, t: PrimitiveType) -> np.ndarray:
    if t == P.PRED:
        return a.astype(np.bool_) if a.dtype.kind in "biu" else (widen(a) != 0)
    if is_int_type(t):
        if a.dtype.kind in "biu":
            return _wrap_int(a, t)
        return _float_to_int(a, t)
    if is_float_type(t):
        return _round_float(a, t)
    raise EmulationError(f"element type {type_name(t)} is not supported by the evaluator")


def compute_dtype(t: PrimitiveType) -> np.dtype:
    """The NumPy dtype arithmetic of element type ``t`` is carried out in before rounding:
    float64 for F64, float32 for every other float type, int64/uint64 for integers, bool for
    PRED."""
    if t == P.F64:
        return np.dtype(np.float64)
    if is_float_type(t):
        return np.dtype(np.float32)
    if is_int_type(t):
        return np.dtype(np.int64 if int_bits(t)[1] else np.uint64)
    if t == P.PRED:
        return np.dtype(np.bool_)
    raise EmulationError(f"element type {type_name(t)} is not supported by the evaluator")


def check_value(x: np.ndarray, t: PrimitiveType, what: str) -> None:
    """Raise EmulationError when ``x`` (an input) is not a valid value of ``t``."""
    if t in (P.S4, P.U4, P.S2, P.U2, P.S1, P.U1):
        bits, signed = int_bits(t)
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if x.size and (int(x.min()) < lo or int(x.max()) > hi):
            raise EmulationError(f"{what}: values of {type_name(t)} must lie in [{lo}, {hi}]")


_QUIET_BIT = {np.dtype(np.float32): (np.uint32, 1 << 22), np.dtype(np.float64): (np.uint64, 1 << 51)}


def has_nan(x: np.ndarray) -> bool:
    """Whether float array ``x`` holds a NaN: NumPy's minimum propagates a NaN through its
    reduction, which reads ``x`` once without the boolean array ``isnan(x).any()`` writes (half
    the time on 64 Ki float32); tests/emulate/test_ir_fast_paths.py checks it on NaNs at every
    position and beside ±inf."""
    return bool(x.size) and bool(np.isnan(np.minimum.reduce(x, axis=None)))


def first_nan(r: np.ndarray, a: Any, b: Any) -> np.ndarray:
    """``r`` (the float32 or float64 result of a binary op on ``a``, ``b``) with each NaN lane that
    an operand NaN reached replaced by the first operand's NaN where it is one, else the second's,
    quieted: the x86
    SSE/AVX rule for the first source (decision OP12). NumPy's loops may commute the operands of
    NaN op NaN, differently for float32 and float64 and by array length, so without this the
    payload of a NaN result depended on the loop, not on the program."""
    r = np.asarray(r)
    if r.dtype not in _QUIET_BIT or not has_nan(r):
        return r
    nan = np.isnan(r)
    with np.errstate(all="ignore"):
        x = np.broadcast_to(np.asarray(a, dtype=r.dtype), r.shape)
        y = np.broadcast_to(np.asarray(b, dtype=r.dtype), r.shape)
        xn = np.isnan(x)
        nan &= xn | np.isnan(y)  # a NaN the operation made (inf - inf, (-1) ** 0.5) stays as it is
        pick = np.where(xn, x, y)
    uint, q = _QUIET_BIT[r.dtype]
    out = np.array(r)
    out[nan] = (pick.view(uint)[nan] | uint(q)).view(r.dtype)
    return out
