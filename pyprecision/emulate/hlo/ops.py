"""Elementwise HLO opcodes: arithmetic, math functions, compare/select, converts.

Each handler takes the instruction and its operand values and returns the result already rounded
to the instruction's element type (``hlo_numeric.round_to``). Float arithmetic that IEEE rounds
correctly (add, subtract, multiply, divide, sqrt, negate, abs, max/min...) is done in float32 for
every float type narrower than f64 (float64 for F64) and rounded once to the element type; the
transcendental functions (exp, log, tanh, power, rsqrt ...) are evaluated in float64 and rounded
once. Integer arithmetic wraps around; division and remainder follow XLA (x/0 = -1 or all ones,
INT_MIN/-1 = INT_MIN, x%0 = x). See docs/decisions/hlo-eval.md.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import (
    compute_dtype,
    first_nan,
    int_bits,
    is_float_type,
    is_int_type,
    round_to,
    widen,
)
from pyprecision.errors import EmulationError
from pyprecision.hlo import PrimitiveType

P = PrimitiveType
Handler = Callable[[Any, list[Any]], np.ndarray]


def _et(inst: Any) -> PrimitiveType:
    return inst.shape.element_type


def _operand_type(inst: Any, i: int = 0) -> PrimitiveType:
    return inst.operands[i].shape.element_type


def _in(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """Operand ``x`` in the compute dtype of type ``t``."""
    return np.asarray(widen(x)).astype(compute_dtype(t), copy=False)


def _fresh_f32(r: Any) -> np.ndarray:
    """The float32 result of a NumPy ufunc on float32 operands as the F32 value: it is already
    rounded (IEEE single arithmetic is correctly rounded) and is a new array, so no second pass
    or copy (``round_to`` would copy it)."""
    r = np.asarray(r)
    return r if r.dtype == np.float32 else round_to(r, P.F32)


# -- binary ---------------------------------------------------------------------------------

def _int_divide(a: np.ndarray, b: np.ndarray, t: PrimitiveType) -> np.ndarray:
    bits, signed = int_bits(t)
    zero = b == 0
    safe = np.where(zero, 1, b)
    if signed:  # truncation toward zero, without |INT_MIN| (which overflows int64)
        minus_one = safe == -1
        safe = np.where(minus_one, 1, safe)
        q = a // safe
        q = q + ((q * safe != a) & ((a < 0) != (safe < 0)))
        return np.where(zero, -1, np.where(minus_one, -a, q))  # INT_MIN / -1 wraps to INT_MIN
    return np.where(zero, (1 << bits) - 1, a // safe)


def _int_remainder(a: np.ndarray, b: np.ndarray, t: PrimitiveType) -> np.ndarray:
    zero = b == 0
    safe = np.where(zero, 1, b)
    if int_bits(t)[1]:
        r = np.fmod(a, np.where(safe == -1, 1, safe))  # sign of the dividend; x % -1 = 0
    else:
        r = a % safe
    return np.where(zero, a, r)


def _int_power(a: np.ndarray, b: np.ndarray, t: PrimitiveType) -> np.ndarray:
    bits, _ = int_bits(t)
    mask = (1 << bits) - 1
    out = np.empty(np.broadcast(a, b).shape, dtype=object)
    for idx, (x, e) in enumerate(np.broadcast(a, b)):
        x, e = int(x), int(e)
        if e < 0:
            v = 1 if x == 1 else ((-1 if e % 2 else 1) if x == -1 else 0)
        else:
            v = pow(x, e, 1 << bits) & mask
        out.flat[idx] = v
    return out.astype(np.int64) if bits < 64 else out.astype(np.uint64).astype(np.int64)


def _shift(kind: str, a: np.ndarray, b: np.ndarray, t: PrimitiveType) -> np.ndarray:
    bits, _ = int_bits(t)
    ua = a.astype(np.int64) & ((1 << bits) - 1) if bits < 64 else a.astype(np.uint64)
    big = (b < 0) | (b >= bits)
    sb = np.where(big, 0, b).astype(ua.dtype)
    if kind == "shift-left":
        return np.where(big, 0, ua << sb)
    if kind == "shift-right-logical":
        return np.where(big, 0, ua >> sb)
    sa = _as_signed(a, t)  # an arithmetic shift of an unsigned type works on its bits (XLA)
    return np.where(big, np.where(sa < 0, -1, 0), sa >> sb.astype(np.int64))


def _as_signed(a: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """The two's-complement value of ``a``'s bits (int64): unsigned 0x80 of u8 is -128."""
    bits, signed = int_bits(t)
    if signed:
        return a.astype(np.int64)
    if bits == 64:
        return a.astype(np.uint64).view(np.int64)
    u = a.astype(np.int64)
    return np.where(u >= 1 << (bits - 1), u - (1 << bits), u)


def _float_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NaN-propagating maximum with -0 < +0 (XLA:CPU: max(+0, -0) = max(-0, +0) = +0; OP9)."""
    m = np.maximum(a, b)
    return np.where((a == b) & (m == 0), np.where(np.signbit(a), b, a), m)


def _float_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NaN-propagating minimum with -0 < +0 (min(+0, -0) = min(-0, +0) = -0; OP9)."""
    m = np.minimum(a, b)
    return np.where((a == b) & (m == 0), np.where(np.signbit(a), a, b), m)


_FLOAT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": _float_max, "minimum": _float_min, "remainder": np.fmod,
}
_F64_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "power": np.power, "atan2": np.arctan2,
}
_INT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def binary(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """add subtract multiply divide remainder maximum minimum power atan2 and or xor shifts."""
    op, t = inst.opcode, _et(inst)
    a, b = args
    with np.errstate(all="ignore"):
        if t == P.PRED:
            fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
                  "maximum": np.logical_or, "minimum": np.logical_and}.get(op)
            if fn is None:
                raise EmulationError(f"{inst.name}: opcode {op} is not defined for pred")
            return fn(a, b)
        if is_float_type(t):
            if op in _FLOAT_BINARY:
                x, y = _in(a, t), _in(b, t)
                r = first_nan(_FLOAT_BINARY[op](x, y), x, y)
                return _fresh_f32(r) if t == P.F32 else round_to(r, t)
            if op in _F64_BINARY:
                x, y = _in(a, P.F64), _in(b, P.F64)
                return round_to(first_nan(_F64_BINARY[op](x, y), x, y), t)
        elif is_int_type(t):
            x, y = _in(a, t), _in(b, t)
            if op in _INT_BINARY:
                return round_to(_INT_BINARY[op](x, y), t)
            if op == "divide":
                return round_to(_int_divide(x, y, t), t)
            if op == "remainder":
                return round_to(_int_remainder(x, y, t), t)
            if op == "power":
                return round_to(_int_power(x, y, t), t)
            if op.startswith("shift-"):
                return round_to(_shift(op, x, y, t), t)
    raise EmulationError(f"{inst.name}: opcode {op} is not supported for this element type")


# -- unary ----------------------------------------------------------------------------------

def _round_afz(x: np.ndarray) -> np.ndarray:
    """Half away from zero, the sign kept: -0.3 and -0.0 give -0 (XLA, decision OP5). ``x - t`` is
    exact, so no ``|x| + 0.5`` rounding error (0.49999997 stays 0)."""
    t = np.trunc(x)
    up = (np.abs(x - t) >= 0.5).astype(x.dtype)
    return np.copysign(t + np.copysign(up, x), x)


def _sign(x: np.ndarray) -> np.ndarray:
    """-1, +1, or x itself for ±0 and NaN (sign(-0.0) = -0.0, XLA; decision OP5)."""
    return np.where((x == 0) | np.isnan(x), x, np.sign(x))


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# exact in the compute dtype (IEEE-correct or exact operations)
_FLOAT_UNARY_EXACT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "negate": np.negative, "abs": np.abs, "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil,
    "round-nearest-even": np.rint, "round-nearest-afz": _round_afz, "sign": _sign,
    "copy": lambda x: x,
}
# transcendental: float64, then rounded once
_FLOAT_UNARY_F64: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exponential": np.exp, "exponential-minus-one": np.expm1, "log": np.log,
    "log-plus-one": np.log1p, "rsqrt": lambda x: 1.0 / np.sqrt(x), "cbrt": np.cbrt,
    "tanh": np.tanh, "logistic": _logistic, "sine": np.sin, "cosine": np.cos, "tan": np.tan,
}
# integer unary ops (wrap-around, as XLA's s/u types)
_INT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "negate": np.negative, "abs": np.abs, "sign": np.sign, "copy": lambda x: x,
}


def unary(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """negate abs sqrt rsqrt exp log tanh ... not is-finite."""
    op, t = inst.opcode, _et(inst)
    (a,) = args
    with np.errstate(all="ignore"):
        if op == "is-finite":
            return np.isfinite(widen(a))
        if op == "not":
            return np.logical_not(a) if t == P.PRED else round_to(np.invert(_in(a, t)), t)
        if is_float_type(t):
            if op in _FLOAT_UNARY_EXACT:
                r = _FLOAT_UNARY_EXACT[op](_in(a, t))
                return _fresh_f32(r) if t == P.F32 and op != "copy" else round_to(r, t)
            if op in _FLOAT_UNARY_F64:
                return round_to(_FLOAT_UNARY_F64[op](_in(a, P.F64)), t)
        elif is_int_type(t):
            x = _in(a, t)
            if op in _INT_UNARY:
                return round_to(_INT_UNARY[op](x), t)
        elif op == "copy":
            return a.copy()
    raise EmulationError(f"{inst.name}: opcode {op} is not supported for this element type")


# -- compare / select / clamp / convert -----------------------------------------------------

def _total_order_key(x: np.ndarray) -> np.ndarray:
    i = np.asarray(widen(x), dtype=np.float64).view(np.int64)
    return i ^ ((i >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
            "GT": np.greater, "GE": np.greater_equal}


def compare(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """compare(a, b), direction=EQ|NE|LT|LE|GT|GE, optional type=TOTALORDER."""
    direction = inst.attr("direction")
    fn = _COMPARE.get(direction or "")
    if fn is None:
        raise EmulationError(f"{inst.name}: compare direction {direction!r} is not supported")
    a, b = args
    t = _operand_type(inst)
    if is_float_type(t) and inst.attr("type") == "TOTALORDER":
        return fn(_total_order_key(a), _total_order_key(b))
    if is_float_type(t) or is_int_type(t):
        return fn(_in(a, t), _in(b, t))
    return fn(a, b)


def select(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """select(pred, on_true, on_false) (a scalar pred selects whole arrays)."""
    p, a, b = args
    return np.where(p, a, b).astype(a.dtype)


def clamp(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """clamp(min, x, max) = min(max(x, min), max)."""
    lo, x, hi = args
    t = _et(inst)
    with np.errstate(all="ignore"):
        return round_to(np.minimum(np.maximum(_in(x, t), _in(lo, t)), _in(hi, t)), t)


def convert(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """convert: round the operand's exact value once to the new element type."""
    (a,) = args
    src = a if a.dtype.kind in "biu" or a.dtype in (np.float32, np.float64) else widen(a)
    return round_to(src, _et(inst))


def bitcast_convert(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """bitcast-convert: the same bits as another element type; to a narrower type the result
    gains a minor dimension (the pieces in memory order, least significant first on this
    little-endian layout, as XLA:CPU), to a wider one the operand's minor dimension is joined."""
    from pyprecision.emulate.shared.numeric import dtype_of

    (a,) = args
    dt = dtype_of(_et(inst))
    if a.dtype.itemsize == dt.itemsize and a.dtype.itemsize * 8 in (8, 16, 32, 64) \
            and inst.shape.dimensions == inst.operands[0].shape.dimensions:
        return np.ascontiguousarray(a).view(dt)
    if dt.itemsize * 8 != _bits(_et(inst)) or a.dtype.itemsize * 8 != _bits(_operand_type(inst)):
        raise EmulationError(f"{inst.name}: bitcast-convert of sub-byte types is not supported")
    flat = np.ascontiguousarray(a).reshape(-1).view(dt)
    return flat.reshape(tuple(inst.shape.dimensions))


def _bits(t: PrimitiveType) -> int:
    from pyprecision.hlo import bit_width

    return bit_width(t)


BINARY_OPS = ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "power", "atan2", "and", "or", "xor", "shift-left", "shift-right-arithmetic",
              "shift-right-logical")
UNARY_OPS = ("negate", "abs", "sqrt", "rsqrt", "cbrt", "floor", "ceil", "round-nearest-even",
             "round-nearest-afz", "sign", "exponential", "exponential-minus-one", "log",
             "log-plus-one", "tanh", "logistic", "sine", "cosine", "tan", "is-finite", "not",
             "copy")

#: opcode → handler for every elementwise opcode.
ELEMENTWISE: dict[str, Handler] = {
    **{op: binary for op in BINARY_OPS},
    **{op: unary for op in UNARY_OPS},
    "compare": compare,
    "select": select,
    "clamp": clamp,
    "convert": convert,
    "bitcast-convert": bitcast_convert,
}
