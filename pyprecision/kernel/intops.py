"""XLA float -> int conversion and the int -> F32 -> int dot of the HLO integer-dot rewrite (§8)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision._core import lib
from pyprecision.errors import CastError
from pyprecision.kernel import _args

__all__ = ["float_to_int", "int_dot", "IntDotReport"]


def _int_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise CastError(f"unknown integer dtype {dtype!r}") from exc
    if dt.newbyteorder("=") not in _args.INT_TYPES:
        raise CastError(f"dtype must be int8..int64 or uint8..uint64, got {dt}")
    return dt.newbyteorder("=")


def float_to_int(x: Any, dtype: Any, *, threads: int | None = None) -> np.ndarray:
    """XLA ``convert`` float -> integer: truncate toward zero, saturate to the range (±inf too),
    NaN -> 0, negative -> 0 for unsigned. Narrow floats widen exactly first."""
    dt = _int_dtype(dtype)
    src, code = _args.as_source(x)
    if code == lib.PP_T_F64:
        pass
    elif src.dtype.kind in "iu":
        raise CastError(f"x must be a float array, got {src.dtype}")
    elif code != lib.PP_T_F32:
        src, code = _args.native(src.astype(np.float32)), lib.PP_T_F32  # exact widening
    out = np.empty(src.shape, dt)
    status = lib.pp_float_to_int(_args.ptr(src), code, src.size, _args.ptr(out),
                                 _args.INT_TYPES[dt], _args.threads_arg(threads))
    _args.check_status(status, "float_to_int")
    return out


@dataclass(frozen=True)
class IntDotReport:
    """How the F32 route compares with the exact integer product."""

    changed: int                       # output elements that differ from the exact product
    first: tuple[int, int] | None      # index of the first one (C order), or None
    exact: np.ndarray                  # the exact product: int64, or Python ints (dtype object)
                                       # when it does not fit int64; never narrowed or wrapped
    max_abs_diff: int                  # largest |route - exact| over all elements


def _exact_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B exactly: in int64 when no partial sum can leave it (|a|max · |b|max · K < 2^63),
    else in Python integers (an object array), so nothing wraps."""
    def amax(x: np.ndarray) -> int:
        return max(abs(int(x.min())), abs(int(x.max()))) if x.size else 0

    if amax(A) * amax(B) * A.shape[1] < 1 << 63:
        return A.astype(np.int64) @ B.astype(np.int64)
    return A.astype(object) @ B.astype(object)


def int_dot(a: Any, b: Any, out_dtype: Any = np.int32, report: bool = False, *,
            threads: int | None = None) -> np.ndarray | tuple[np.ndarray, IntDotReport]:
    """``out_dtype convert(f32 dot(f32 convert(a), f32 convert(b)))`` for 2-D integer a (M,K), b (K,N).

    Operands are rounded once to float32 (RNE); each product is rounded to float32 and added to a
    float32 accumulator in increasing k without FMA; the result converts back with XLA semantics.
    With ``report=True`` also returns an :class:`IntDotReport` against the exact product
    (a result the output dtype cannot hold counts as changed: the F32 route saturates it).
    """
    dt = _int_dtype(out_dtype)
    A, ta = _args.as_source(a, "a")
    B, tb = _args.as_source(b, "b")
    for name, arr in (("a", A), ("b", B)):
        if arr.dtype.kind not in "iu":
            raise CastError(f"{name} must be an integer array, got {arr.dtype}")
        if arr.ndim != 2:
            raise CastError(f"{name} must be 2-D, got shape {arr.shape}")
    if A.shape[1] != B.shape[0]:
        raise CastError(f"inner dimensions differ: a is {A.shape}, b is {B.shape}")
    m, k = A.shape
    n = B.shape[1]
    acc = np.empty((m, n), np.float32)
    status = lib.pp_int_dot_f32(_args.ptr(A), ta, _args.ptr(B), tb, m, k, n,
                                _args.ptr(acc, "float *"), _args.threads_arg(threads))
    _args.check_status(status, "int_dot")
    result = float_to_int(acc, dt, threads=threads)
    if not report:
        return result
    exact = _exact_product(A, B)
    got = result.astype(exact.dtype)
    diff = got != exact
    idx = np.flatnonzero(diff)
    first = tuple(int(i) for i in np.unravel_index(idx[0], diff.shape)) if idx.size else None
    gap = np.abs(got - exact) if exact.size else np.zeros(0, np.int64)
    return result, IntDotReport(
        changed=int(idx.size), first=first, exact=exact,  # type: ignore[arg-type]
        max_abs_diff=int(gap.max()) if gap.size else 0,
    )


def dot_f32(a: Any, b: Any, threads: int | None = None) -> np.ndarray:
    """``a @ b`` for 2-D float32 arrays the way the PE sums into PSUM: each product rounded to
    float32, added in increasing k to an accumulator starting at +0.0, no FMA (the C loop of
    ``int_dot``'s F32 route). Returns a new float32 array."""
    A = np.ascontiguousarray(a, dtype=np.float32)
    B = np.ascontiguousarray(b, dtype=np.float32)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise CastError(f"dot_f32 needs (M,K) and (K,N) matrices, got {A.shape} and {B.shape}")
    m, k = A.shape
    n = B.shape[1]
    out = np.empty((m, n), np.float32)
    status = lib.pp_dot_f32(_args.ptr(A, "float *"), _args.ptr(B, "float *"), m, k, n,
                            _args.ptr(out, "float *"), _args.threads_arg(threads))
    _args.check_status(status, "dot_f32")
    return out
