"""The arithmetic of the IR evaluator: exact results of the unary, binary and matmul instructions.

Floats compute in float64 (correctly rounded for + - * / sqrt of operands of at most fp32 precision):
the float32 values are widened inside the ufunc (``dtype=np.float64``, NumPy's buffered loop, no
temporary copies); integers as Python ints (exact); the evaluator then rounds once to the result dtype.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pyprecision.emulate.ir.numbers import round_to
from pyprecision.emulate.shared.numeric import first_nan
from pyprecision.errors import EmulationError
from pyprecision.formats import format as pyprecision_format
from pyprecision.ir import is_identity_matrix
from pyprecision.kernel import codes_of, decode, pe_matmul

#: IEEE single operations: on float32 operands, NumPy's float32 result is the correctly rounded one,
#: which is the float64 result rounded once to fp32 (53 >= 2*24 + 2: the double rounding is
#: innocuous), so an fp32 result needs no float64 detour (decision EM-10). NaN: these are hardware
#: arithmetic in both widths, which quiets a signalling NaN alike; abs/neg/max/min are not here
#: (they may pass a signalling NaN through unquieted in float32 where the float64 route quiets it).
_F32_BINARY: dict[str, Callable[..., Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    # exact in any precision; NaN lanes are first_nan's either way (EM-13)
    "max": lambda p, q: _signed_zero_max(p, q), "min": lambda p, q: _signed_zero_min(p, q),
}
_F32_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sqrt": np.sqrt,
    "square": lambda x: np.multiply(x, x),
    "reciprocal": lambda x: np.divide(np.float32(1), x),
}


def _fp32(dt: Any) -> bool:
    return bool(dt.is_float and dt.fmt is None)


def binary_rounded(kind: str, a: np.ndarray, b: np.ndarray, is_float: bool, dt: Any,
                   src: tuple[Any, ...] = ()) -> np.ndarray:
    """``round_to(binary_values(kind, a, b, is_float), dt)``: computed directly in float32 when the
    result is fp32, both operands are float32 values and ``kind`` is an IEEE single operation;
    in float32 then rounded once to ``dt`` when ``dt`` is bf16 / fp16 / an fp8 and ``src`` (the
    operands' dtypes) are ``dt`` too (EM-11, EM-19)."""
    fast = _F32_BINARY.get(kind) if is_float else None
    if fast is not None and a.dtype == np.float32 and b.dtype == np.float32:
        if _fp32(dt):
            with np.errstate(all="ignore"):
                return first_nan(np.asarray(fast(a, b)), a, b)
        if _narrow_same(dt, src):
            with np.errstate(all="ignore"):
                r = np.asarray(fast(a, b))

            def slow(bad: np.ndarray) -> np.ndarray:
                return round_to(binary_values(kind, np.broadcast_to(a, r.shape)[bad],
                                              np.broadcast_to(b, r.shape)[bad], True), dt)
            return _narrow_from_f32(r, dt, slow)
    return round_to(binary_values(kind, a, b, is_float), dt)


def unary_rounded(kind: str, x: np.ndarray, dt: Any, src: Any = None) -> np.ndarray:
    """``round_to(unary_float(kind, x), dt)``, in float32 directly for sqrt / square / reciprocal
    of float32 values to an fp32 result, and in float32 then rounded once to ``dt`` when ``dt``
    is bf16 / fp16 / an fp8 and ``src`` (the operand's dtype) is ``dt`` too (EM-11, EM-19)."""
    fast = _F32_UNARY.get(kind) if x.dtype == np.float32 else None
    if fast is not None and _fp32(dt):
        with np.errstate(all="ignore"):
            return np.asarray(fast(x))
    if fast is not None and _narrow_same(dt, (src,)):
        with np.errstate(all="ignore"):
            r = np.asarray(fast(x))
        return _narrow_from_f32(
            r, dt, lambda bad: round_to(unary_float(kind, np.broadcast_to(x, r.shape)[bad]), dt))
    if kind in _TABLED and dt.is_float and src is not None and src.is_float \
            and src.fmt in _NARROW_F32 and x.dtype == np.float32 and x.size >= TABLE_MIN:
        got = _by_table(kind, x, src, dt)
        if got is not None:
            return got
    direct = _F64_UFUNC.get(kind) if x.dtype == np.float32 and _fp32(dt) else None
    if direct is not None:  # EM-26: the float64 loop writing float32, without a float64 array
        out = np.empty(x.shape, np.float32)
        with np.errstate(all="ignore"):
            direct(x, dtype=np.float64, out=out, casting="unsafe")
        return out
    return round_to(unary_float(kind, x), dt)


#: EM-26: the kinds ``unary_float`` computes as one NumPy ufunc on the float64 widening of the
#: operand; to a float32 result, the ufunc's float64 loop (``dtype=np.float64``) widens each
#: element, computes and narrows it (round to nearest even, as ``astype``) in its buffer, with
#: the bits of the widened array's result narrowed afterwards
_F64_UFUNC: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
    "log1p": np.log1p, "expm1": np.expm1, "cbrt": np.cbrt,
}


#: EM-23: the unary kinds whose results on an operand of a narrow format (at most 2^16 values) are
#: looked up in a table of that function on every code of the format, built once: the table holds
#: ``round_to(unary_float(kind, v), dt)`` for each value v, the elementwise function the float64
#: route applies, so a lookup is that route's result bit for bit (the NaN lanes aside, below)
_TABLED = frozenset({"exp", "log", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos", "log1p", "expm1",
                     "cbrt"})
#: operands smaller than this take the float64 route (a table is 256 or 65 536 entries)
TABLE_MIN = 1 << 12


def _by_table(kind: str, x: np.ndarray, src: Any, dt: Any) -> np.ndarray | None:
    """``round_to(unary_float(kind, x), dt)`` for ``x`` float32 values of ``src``'s format, by
    table; None when ``x`` holds a NaN (whose payload the float64 route carries: that route
    takes the whole array)."""
    if np.isnan(np.min(x)):  # min propagates a NaN (x is not empty)
        return None
    codes = codes_of(np.ascontiguousarray(x), src.fmt)
    return np.take(_unary_table(kind, src, dt), codes)


@functools.lru_cache(maxsize=128)
def _unary_table(kind: str, src: Any, dt: Any) -> np.ndarray:
    """``round_to(unary_float(kind, v), dt)`` (float32) for the value v of every code of ``src``'s
    format, indexed by code (a NaN code's entry is never read)."""
    f = pyprecision_format(src.fmt)
    values = decode(np.arange(1 << f.bits, dtype=f.storage_dtype), src.fmt)
    table = np.ascontiguousarray(round_to(unary_float(kind, values), dt), dtype=np.float32)
    table.flags.writeable = False
    return table


#: EM-11: the narrow formats whose IEEE + - * / sqrt (and square = x * x, reciprocal = 1 / x) on
#: operands of the same format may be computed in float32 and rounded once from there to the
#: format: float32 keeps p' = 24 significand bits and 24 >= 2p + 2 (bf16 p = 8, fp16 p = 11), so
#: rounding the correctly rounded float32 result again is the correct rounding (Figueroa);
#: the ranges where that argument needs care are checked in docs/decisions/ir.md (EM-11). The fp8s
#: (p = 4, 3) too: every float32 result of their operands is normal, and every pair of codes is
#: checked (EM-19, tests/emulate/test_ir_narrow_routes.py).
_NARROW_F32 = frozenset({"bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5"})
_SATURATES = {name: bool(pyprecision_format(name).default_saturate) for name in _NARROW_F32}


def _narrow_same(dt: Any, src: tuple[Any, ...]) -> bool:
    return bool(dt.is_float and dt.fmt in _NARROW_F32 and src and all(s is dt for s in src))


def _narrow_from_f32(r: np.ndarray, dt: Any,
                     slow: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``r`` (the float32 result of an EM-11 operation) rounded once to ``dt`` by the cast core;
    the NaN lanes of ``r`` (whose payload the two routes may choose differently) take the float64
    route, ``slow(mask)``, so they keep exactly the bits they had before EM-11. A ±inf lane of
    ``r`` needs no such care: it is the exact result (an infinite operand, x / 0) or the exact
    result overflowed float32, beyond bf16's and fp16's own overflow threshold, and neither
    saturates by default (the fp8s saturate: their ±inf lanes take the float64 route too)."""
    out = round_to(r, dt)
    if r.size and np.isfinite(np.minimum.reduce(r, axis=None)) \
            and np.isfinite(np.maximum.reduce(r, axis=None)):
        return out  # min and max finite: no NaN (it propagates) and no ±inf
    bad = ~np.isfinite(r) if _SATURATES[dt.fmt] else np.isnan(r)
    if bad.any():
        out = np.array(out)
        out[bad] = slow(bad)
    return out

__all__ = ["binary_rounded", "binary_values", "int_binop", "int_unary", "matmul_batched",
           "matmul_fp32", "pe_identity", "pe_transpose", "unary_float", "unary_rounded"]


def unary_float(kind: str, x: np.ndarray) -> np.ndarray:
    """The exact (float64) result of float unary op ``kind`` on ``x``; the caller rounds it."""
    if kind in ("copy", "cast"):
        return x
    with np.errstate(all="ignore"):  # a signalling NaN is quieted by the widening
        x = np.asarray(x, dtype=np.float64)
        if kind == "neg":
            return -x
        if kind == "abs":
            return np.abs(x)
        if kind == "exp":
            return np.exp(x)
        if kind == "log":
            return np.log(x)
        if kind == "sqrt":
            return np.sqrt(x)
        if kind == "rsqrt":
            return 1.0 / np.sqrt(x)
        if kind == "reciprocal":
            return 1.0 / x
        if kind == "relu":
            return np.where(np.isnan(x), x, np.where(x > 0, x, 0.0))
        if kind == "tanh":
            return np.tanh(x)
        if kind == "sigmoid":
            return 1.0 / (1.0 + np.exp(-x))
        if kind == "square":
            return x * x
        if kind in _NUMPY_UNARY:
            return _NUMPY_UNARY[kind](x)
        if kind == "erf":
            return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.float64)
    raise EmulationError(f"unknown unary op {kind!r}")


_NUMPY_UNARY: dict[str, Callable[[Any], Any]] = {
    "floor": np.floor,
    "ceil": np.ceil,
    "round_ne": np.rint,
    "sign": lambda v: np.where((v == 0) | np.isnan(v), v, np.sign(v)),  # sign(-0) = -0 (OP5)
    "sin": np.sin,
    "cos": np.cos,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "cbrt": np.cbrt,
}


def int_unary(kind: str, x: np.ndarray) -> np.ndarray:
    """The exact (Python int, object array) result of integer unary op ``kind``; the caller wraps it."""
    o = x.astype(object)
    table: dict[str, Callable[[Any], Any]] = {
        "cast": lambda v: v,
        "copy": lambda v: v,
        "neg": lambda v: -v,
        "abs": abs,
        "relu": lambda v: max(v, 0),
        "square": lambda v: v * v,
        "sign": lambda v: (v > 0) - (v < 0),
        "not": lambda v: ~v,
    }
    if kind not in table:
        raise EmulationError(f"'{kind}' is not defined on integers")
    fn = table[kind]
    return np.array([fn(int(v)) for v in o.ravel()], dtype=object).reshape(x.shape)


def _signed_zero_max(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """max with -0 < +0, as XLA orders them (decision OP9); NaN as np.maximum."""
    return np.where((p == q) & (p == 0), np.where(np.signbit(p), q, p), np.maximum(p, q))


def _signed_zero_min(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """min with -0 < +0, as XLA orders them (decision OP9); NaN as np.minimum."""
    return np.where((p == q) & (p == 0), np.where(np.signbit(p), p, q), np.minimum(p, q))


_FLOAT_BINARY: dict[str, Callable[..., Any]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": lambda p, q, dtype: _signed_zero_max(np.asarray(p, dtype), np.asarray(q, dtype)),
    "min": lambda p, q, dtype: _signed_zero_min(np.asarray(p, dtype), np.asarray(q, dtype)),
    "pow": np.power,
    "rem": np.fmod,
    "atan2": np.arctan2,
}
#: comparisons are exact in the operands' own precision (no widening needed)
_FLOAT_COMPARE: dict[str, Callable[..., Any]] = {
    "cmp_eq": np.equal,
    "cmp_ne": np.not_equal,
    "cmp_lt": np.less,
    "cmp_le": np.less_equal,
    "cmp_gt": np.greater,
    "cmp_ge": np.greater_equal,
}


def binary_values(kind: str, a: np.ndarray, b: np.ndarray, is_float: bool) -> np.ndarray:
    """The exact result of binary op ``kind`` (float64 for floats, Python ints for integers; a
    comparison gives 0/1), before rounding to the result dtype."""
    if is_float:
        with np.errstate(all="ignore"):
            cmp = _FLOAT_COMPARE.get(kind)
            if cmp is not None:
                return cmp(a, b)
            return first_nan(_FLOAT_BINARY[kind](a, b, dtype=np.float64), a, b)
    a, b = np.broadcast_arrays(a.astype(object), b.astype(object))
    out = [int_binop(kind, int(x), int(y)) for x, y in zip(a.ravel(), b.ravel(), strict=True)]
    return np.array(out, dtype=object).reshape(a.shape)


def int_binop(kind: str, x: int, y: int) -> int:
    """Integer binary op ``kind`` on Python ints (division truncates toward zero). Division and
    remainder follow XLA (decision OP6): x / 0 = -1 (all ones once wrapped to an unsigned width),
    x % 0 = x, INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0 once wrapped; an arithmetic right
    shift by a negative or too large amount fills with the sign bit."""
    if kind == "div":
        if y == 0:
            return -1
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    table: dict[str, Callable[[int, int], int]] = {
        "add": lambda p, q: p + q,
        "sub": lambda p, q: p - q,
        "mul": lambda p, q: p * q,
        "max": max,
        "min": min,
        "and": lambda p, q: p & q,
        "or": lambda p, q: p | q,
        "xor": lambda p, q: p ^ q,
        "pow": _int_pow,
        "rem": _int_rem,
        "shl": lambda p, q: p << q if 0 <= q < 64 else 0,
        "shr_a": lambda p, q: p >> q if 0 <= q < 64 else p >> 63,
        "shr_l": _int_shr_l,
        "cmp_eq": lambda p, q: int(p == q),
        "cmp_ne": lambda p, q: int(p != q),
        "cmp_lt": lambda p, q: int(p < q),
        "cmp_le": lambda p, q: int(p <= q),
        "cmp_gt": lambda p, q: int(p > q),
        "cmp_ge": lambda p, q: int(p >= q),
    }
    return table[kind](x, y)



def _int_pow(x: int, y: int) -> int:
    if y >= 0:
        return x**y
    if x == 1:
        return 1
    if x == -1:
        return 1 if y % 2 == 0 else -1
    return 0


def _int_shr_l(x: int, y: int) -> int:
    if x < 0:
        raise EmulationError("shr_l of a negative integer is not emulated (it needs the width)")
    return x >> y if 0 <= y < 64 else 0


def _int_rem(x: int, y: int) -> int:
    if y == 0:
        return x
    r = abs(x) % abs(y)
    return r if x >= 0 else -r


def matmul_fp32(s: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``s.T @ m`` the way the PE array computes it: operands exact in fp32 (every float dtype is a subset
    of fp32), each product rounded to fp32, summed sequentially over K in fp32 from +0, no FMA
    (``pyprecision.kernel.pe_matmul``). Returns float32. ``s`` [..., K, M] and ``m`` [..., K, N]
    may carry batch dimensions (one C call for all of them). A 2-D product with an identity
    operand (the PE transpose, ``matmul %x, %ident``; ``ir.is_identity_matrix``, which remembers
    the read-only ones) is worked out without the K-long sums, with the same bits (decision
    EM-12)."""
    s, m = np.asarray(s), np.asarray(m)
    if s.ndim == 2 and m.ndim == 2 and s.dtype == np.float32 and m.dtype == np.float32:
        if is_identity_matrix(m):
            return pe_identity(s).T
        if is_identity_matrix(s):
            return pe_identity(m)
    return pe_matmul(np.swapaxes(s, -1, -2), m).astype(np.float32, copy=False)


#: EM-24: the result dtypes whose round to nearest even leaves every value of the format as it is,
#: ±inf and the canonical NaN included (no saturation by default; float32's rounding of a float32
#: array is the array)
_UNSATURATED = frozenset({None, "bf16", "fp16"})


def pe_transpose(s: np.ndarray, m: np.ndarray, sdt: Any, mdt: Any, dt: Any) -> np.ndarray | None:
    """``round_to(matmul_fp32(s, m), dt)`` for a PE transpose (an identity operand) whose other
    operand is of the result dtype ``dt`` (decision EM-24), else None. ``pe_identity`` gives the
    operand's values (a -0 made +0, a NaN made the canonical one, both values of every float
    format), so they are ``dt``'s values, which ``dt``'s rounding leaves as they are when it
    does not saturate: the rounding is skipped."""
    if s.ndim != 2 or m.ndim != 2 or s.dtype != np.float32 or m.dtype != np.float32 \
            or not dt.is_float or dt.fmt not in _UNSATURATED:
        return None
    if sdt is dt and is_identity_matrix(m):
        return pe_identity(s).T
    if mdt is dt and is_identity_matrix(s):
        return pe_identity(m)
    return None


_QNAN = np.array(0x7FC00000, np.uint32).view(np.float32)


def pe_identity(y: np.ndarray) -> np.ndarray:
    """``pe_matmul(I.T, y)`` for the identity I of y's K (y [K, C] float32): each output is
    +0 + y[0, c]·I[0, k] + y[1, c]·I[1, k] + ..., so it is y[k, c] exactly, except that a zero is
    +0 (every term is a zero and the sum starts at +0) and the result is the canonical NaN (N6)
    where y[k, c] is NaN or another element of column c is ±inf or NaN (its product with 0 is
    NaN). Returns ``y`` itself (no copy) when it has no -0, inf or NaN."""
    finite = np.isfinite(y)
    if finite.all():
        if not (y.view(np.uint32) == 0x80000000).any():
            return y
        return np.add(y, np.float32(0))  # -0 + +0 = +0; every other value unchanged
    with np.errstate(invalid="ignore"):  # a signalling NaN lane; it is overwritten below
        out = np.add(y, np.float32(0))
    bad = ~finite
    others = bad.sum(axis=0, dtype=np.int64)[None, :] - bad  # non-finite elsewhere in the column
    out[(others > 0) | np.isnan(y)] = _QNAN
    return out


def matmul_batched(ss: list[np.ndarray], ms: list[np.ndarray]) -> np.ndarray:
    """``matmul_fp32`` of each pair (ss[i] [K, M], ms[i] [K, N], same shapes) as one batched call:
    result [B, M, N], entry i bit-identical to ``matmul_fp32(ss[i], ms[i])`` (the batch entries
    of a dot are independent sums in the same order)."""
    k, mm = ss[0].shape
    a = np.empty((len(ss), mm, k), np.float32)
    for i, x in enumerate(ss):
        a[i] = x.T
    b = ms[0][None] if all(x is ms[0] for x in ms) else np.stack(ms)
    return pe_matmul(a, b).astype(np.float32, copy=False)
