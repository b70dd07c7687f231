"""XLA's PrimitiveType codes and their HLO-text spellings.

The numeric codes are those of ``enum PrimitiveType`` in XLA's ``xla/xla_data.proto`` (checked
against openxla/xla; the FP8/FP4/sub-byte block 19..33 is what spec 004's selector table indexes).
"""
from __future__ import annotations

import enum

import numpy as np


class PrimitiveType(enum.IntEnum):
    """Element types of HLO shapes, with XLA's proto numbers."""

    PRIMITIVE_TYPE_INVALID = 0
    PRED = 1
    S8 = 2
    S16 = 3
    S32 = 4
    S64 = 5
    U8 = 6
    U16 = 7
    U32 = 8
    U64 = 9
    F16 = 10
    F32 = 11
    F64 = 12
    TUPLE = 13
    OPAQUE_TYPE = 14
    C64 = 15
    BF16 = 16
    TOKEN = 17
    C128 = 18
    F8E5M2 = 19
    F8E4M3FN = 20
    S4 = 21
    U4 = 22
    F8E4M3B11FNUZ = 23
    F8E5M2FNUZ = 24
    F8E4M3FNUZ = 25
    S2 = 26
    U2 = 27
    F8E4M3 = 28
    F8E3M4 = 29
    S1 = 30
    U1 = 31
    F4E2M1FN = 32
    F8E8M0FNU = 33
    BUFFER = 34


#: HLO-text spelling of each type (``primitive_util::LowercasePrimitiveTypeName``).
_TEXT_NAMES: dict[PrimitiveType, str] = {
    PrimitiveType.OPAQUE_TYPE: "opaque",
    PrimitiveType.TUPLE: "tuple",
}

for _t in PrimitiveType:
    _TEXT_NAMES.setdefault(_t, _t.name.lower())

_BY_TEXT: dict[str, PrimitiveType] = {v: k for k, v in _TEXT_NAMES.items()}

_SIGNED = {PrimitiveType.S1, PrimitiveType.S2, PrimitiveType.S4, PrimitiveType.S8,
           PrimitiveType.S16, PrimitiveType.S32, PrimitiveType.S64}
_UNSIGNED = {PrimitiveType.U1, PrimitiveType.U2, PrimitiveType.U4, PrimitiveType.U8,
             PrimitiveType.U16, PrimitiveType.U32, PrimitiveType.U64}
_FLOATS = {PrimitiveType.F16, PrimitiveType.F32, PrimitiveType.F64, PrimitiveType.BF16,
           PrimitiveType.F8E5M2, PrimitiveType.F8E4M3FN, PrimitiveType.F8E4M3B11FNUZ,
           PrimitiveType.F8E5M2FNUZ, PrimitiveType.F8E4M3FNUZ, PrimitiveType.F8E4M3,
           PrimitiveType.F8E3M4, PrimitiveType.F4E2M1FN, PrimitiveType.F8E8M0FNU}
_SUB_BYTE = {PrimitiveType.S1, PrimitiveType.S2, PrimitiveType.S4, PrimitiveType.U1,
             PrimitiveType.U2, PrimitiveType.U4, PrimitiveType.F4E2M1FN}


def type_name(t: PrimitiveType) -> str:
    """The lower-case spelling used in HLO text (``f32``, ``bf16``, ``f8e4m3fn`` ...)."""
    return _TEXT_NAMES[t]


def type_from_name(name: str) -> PrimitiveType | None:
    """The type spelt ``name`` in HLO text, or None when it is not a type name."""
    return _BY_TEXT.get(name)


def is_integer(t: PrimitiveType) -> bool:
    """Signed or unsigned integer (XLA's ``primitive_util::IsIntegralType``; PRED is not one)."""
    return t in _SIGNED or t in _UNSIGNED


def is_float(t: PrimitiveType) -> bool:
    """Real floating-point type (F16/F32/F64/BF16 and the FP8/FP4 family)."""
    return t in _FLOATS


def is_sub_byte(t: PrimitiveType) -> bool:
    """A non-PRED type narrower than 8 bits (its layouts may carry ``E(n)``)."""
    return t in _SUB_BYTE


_NUMPY: dict[PrimitiveType, np.dtype] = {}


def numpy_dtype(t: PrimitiveType) -> np.dtype:
    """NumPy dtype holding values of ``t`` (ml_dtypes for bf16/fp8/fp4; s4/u4 etc. as int8/uint8)."""
    if not _NUMPY:
        _NUMPY.update(_numpy_table())
    dt = _NUMPY.get(t)
    if dt is None:
        raise ValueError(f"no NumPy dtype for HLO type {type_name(t)}")
    return dt


def _numpy_table() -> dict[PrimitiveType, np.dtype]:
    import ml_dtypes

    table: dict[PrimitiveType, object] = {
        PrimitiveType.PRED: np.bool_,
        PrimitiveType.S1: np.int8, PrimitiveType.S2: np.int8, PrimitiveType.S4: np.int8,
        PrimitiveType.S8: np.int8, PrimitiveType.S16: np.int16, PrimitiveType.S32: np.int32,
        PrimitiveType.S64: np.int64,
        PrimitiveType.U1: np.uint8, PrimitiveType.U2: np.uint8, PrimitiveType.U4: np.uint8,
        PrimitiveType.U8: np.uint8, PrimitiveType.U16: np.uint16, PrimitiveType.U32: np.uint32,
        PrimitiveType.U64: np.uint64,
        PrimitiveType.F16: np.float16, PrimitiveType.F32: np.float32,
        PrimitiveType.F64: np.float64, PrimitiveType.BF16: ml_dtypes.bfloat16,
        PrimitiveType.F8E5M2: ml_dtypes.float8_e5m2,
        PrimitiveType.F8E4M3FN: ml_dtypes.float8_e4m3fn,
        PrimitiveType.F8E4M3B11FNUZ: ml_dtypes.float8_e4m3b11fnuz,
        PrimitiveType.F8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
        PrimitiveType.F8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
        PrimitiveType.F8E4M3: ml_dtypes.float8_e4m3,
        PrimitiveType.F8E3M4: ml_dtypes.float8_e3m4,
        PrimitiveType.F4E2M1FN: ml_dtypes.float4_e2m1fn,
        PrimitiveType.F8E8M0FNU: ml_dtypes.float8_e8m0fnu,
        PrimitiveType.C64: np.complex64, PrimitiveType.C128: np.complex128,
    }
    return {k: np.dtype(v) for k, v in table.items()}  # type: ignore[call-overload]

_WIDTHS = {PrimitiveType.PRED: 8, PrimitiveType.S1: 1, PrimitiveType.U1: 1, PrimitiveType.S2: 2,
           PrimitiveType.U2: 2, PrimitiveType.S4: 4, PrimitiveType.U4: 4, PrimitiveType.S8: 8,
           PrimitiveType.U8: 8, PrimitiveType.S16: 16, PrimitiveType.U16: 16,
           PrimitiveType.S32: 32, PrimitiveType.U32: 32, PrimitiveType.S64: 64,
           PrimitiveType.U64: 64, PrimitiveType.F16: 16, PrimitiveType.BF16: 16,
           PrimitiveType.F32: 32, PrimitiveType.F64: 64, PrimitiveType.C64: 64,
           PrimitiveType.C128: 128, PrimitiveType.F4E2M1FN: 4}


def bit_width(t: PrimitiveType) -> int:
    """Bits of one element (XLA's ``primitive_util::BitWidth``; every fp8 type is 8)."""
    if t in _WIDTHS:
        return _WIDTHS[t]
    if t in _FLOATS:
        return 8
    raise ValueError(f"{type_name(t)} has no bit width")
