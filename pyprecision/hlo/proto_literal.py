"""A LiteralProto as XLA prints a constant: ``0``, ``{1, 2}``, ``{ { 1, 2 }, { 3, 4 } }``.

The text is XLA's multi-line literal form compacted to one line (every run of spaces and newlines
becomes one space), with each float printed by XLA's RoundTripFpToString: for f32/f64 ``%.{digits10}g``, or
``%.{max_digits10}g`` when that does not read back as the same value; for the narrower types
(f16, bf16, fp8) always ``%.{max_digits10}g``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pyprecision.hlo.proto_wire import ProtoError, ProtoUnsupported
from pyprecision.hlo.types import PrimitiveType, is_float, numpy_dtype, type_name

__all__ = ["literal_text", "shape_dims"]

_BYTES_FIELD = {PrimitiveType.U8: "u8s", PrimitiveType.S8: "s8s", PrimitiveType.F16: "f16s",
                PrimitiveType.BF16: "bf16s", PrimitiveType.U16: "u16s", PrimitiveType.S16: "s16s",
                PrimitiveType.F8E5M2: "f8e5m2s", PrimitiveType.F8E4M3FN: "f8e4m3fns",
                PrimitiveType.F8E4M3B11FNUZ: "f8e4m3b11fnuzs",
                PrimitiveType.F8E5M2FNUZ: "f8e5m2fnuzs", PrimitiveType.F8E4M3FNUZ: "f8e4m3fnuzs",
                PrimitiveType.F8E4M3: "f8e4m3s", PrimitiveType.F8E3M4: "f8e3m4s"}
_LIST_FIELD = {PrimitiveType.S32: "s32s", PrimitiveType.S64: "s64s", PrimitiveType.U32: "u32s",
               PrimitiveType.U64: "u64s", PrimitiveType.F32: "f32s", PrimitiveType.F64: "f64s",
               PrimitiveType.PRED: "preds"}


def shape_dims(shape: dict[str, Any]) -> tuple[PrimitiveType, list[int]]:
    """(element type, dimensions) of a decoded ShapeProto."""
    try:
        t = PrimitiveType(shape.get("element_type", 0))
    except ValueError:
        raise ProtoError(f"corrupted: element type {shape.get('element_type')}") from None
    return t, list(shape.get("dimensions", []))


def _values(lit: dict[str, Any], t: PrimitiveType, count: int) -> np.ndarray:
    if t in _LIST_FIELD:
        raw = lit.get(_LIST_FIELD[t], [])
        dtype = np.bool_ if t == PrimitiveType.PRED else numpy_dtype(t)
        if t in (PrimitiveType.U32, PrimitiveType.U64, PrimitiveType.S32, PrimitiveType.S64):
            bits = 32 if t in (PrimitiveType.U32, PrimitiveType.S32) else 64
            raw = [v & ((1 << bits) - 1) for v in raw]
            arr = np.array(raw, dtype=np.uint64 if bits == 64 else np.uint32)
            arr = arr.view(dtype)
        else:
            arr = np.array(raw, dtype=np.float64 if is_float(t) else dtype).astype(dtype)
    elif t in _BYTES_FIELD:
        dtype = numpy_dtype(t)
        data = lit.get(_BYTES_FIELD[t], b"")
        if len(data) % dtype.itemsize:
            raise ProtoError(f"corrupted: {len(data)} bytes of {type_name(t)} literal data")
        arr = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)
    else:
        raise ProtoUnsupported(f"a constant of type {type_name(t)}")
    if arr.size != count:
        raise ProtoError(f"corrupted: a {type_name(t)} constant of {count} elements holds "
                         f"{arr.size}")
    return arr


def _digits(t: PrimitiveType) -> tuple[int, int]:
    """(digits10, max_digits10) of a float type, as std::numeric_limits defines them."""
    p = int(np.finfo(numpy_dtype(t)).nmant) + 1
    return math.floor((p - 1) * math.log10(2)), math.ceil(1 + p * math.log10(2))


def float_text(value: Any, t: PrimitiveType) -> str:
    """XLA's RoundTripFpToString for one element of float type ``t``."""
    dtype = numpy_dtype(t)
    v = np.asarray(value, dtype=dtype)
    if np.isnan(v):
        bits = int(v.view(np.dtype(f"u{dtype.itemsize}")))
        nbits = dtype.itemsize * 8
        sign = bits >> (nbits - 1) if t not in _UNSIGNED_NAN else 0
        nmant = int(np.finfo(dtype).nmant)
        payload = bits & ((1 << nmant) - 1) if nmant else 0
        text = "-nan" if sign else "nan"
        if nmant and payload != 1 << (nmant - 1) and t in _PAYLOAD_NAN:
            text += f"(0x{payload:x})"
        return text
    if np.isinf(v):
        return "-inf" if float(v) < 0 else "inf"
    d10, dmax = _digits(t)
    x = float(v)
    if t not in (PrimitiveType.F32, PrimitiveType.F64):  # the narrow types: max_digits10 only
        return f"{x:.{dmax}g}"
    text = f"{x:.{d10}g}"
    if np.asarray(float(text)).astype(dtype) != v:
        text = f"{x:.{dmax}g}"
    return text


_PAYLOAD_NAN = {PrimitiveType.F16, PrimitiveType.BF16, PrimitiveType.F32, PrimitiveType.F64}
_UNSIGNED_NAN = {PrimitiveType.F8E8M0FNU}


def _element(arr: np.ndarray, t: PrimitiveType, rank: int, i: int) -> str:
    v = arr[i]
    if t == PrimitiveType.PRED:
        return ("1" if v else "0") if rank else ("true" if v else "false")
    if is_float(t):
        return float_text(v, t)
    return str(int(v))


def literal_text(lit: dict[str, Any]) -> str:
    """The constant's literal as HLO text prints it (arrays only; tuples are refused)."""
    t, dims = shape_dims(lit.get("shape", {}))
    if t == PrimitiveType.TUPLE or lit.get("tuple_literals"):
        raise ProtoUnsupported("a tuple constant")
    count = int(np.prod(dims)) if dims else 1
    arr = _values(lit, t, count)
    rank = len(dims)
    if rank == 0:
        return _element(arr, t, 0, 0)
    pieces: list[str] = []
    counter = [0]

    def brace(dims_left: list[int], b: str, accum: list[int]) -> str:
        if rank == 1:
            return b
        if len(dims_left) == 1:
            if b == "{":
                return "  {" + ("" if dims_left[0] <= 1 else " ")
            return ("" if dims_left[0] <= 1 else " ") + "}"
        if b == "{":
            if rank > 3 and accum and len(accum) < rank:
                return f"{b} /*i{len(accum) - 1}={accum[-1]}*/\n"
            return b + "\n"
        return "\n" + b

    def rec(dims_left: list[int], accum: list[int]) -> None:
        if not dims_left:
            pieces.append(_element(arr, t, rank, counter[0]))
            counter[0] += 1
            return
        pieces.append(brace(dims_left, "{", accum))
        for i in range(dims_left[0]):
            rec(dims_left[1:], [*accum, i])
            if i < dims_left[0] - 1:
                pieces.append(",")
                pieces.append("\n" if len(dims_left) > 1 else " ")
        pieces.append(brace(dims_left, "}", accum))

    rec(dims, [])
    return " ".join(s for s in "".join(pieces).replace("\n", " ").split(" ") if s)
