"""A reduce's sequential fold of float32 rows in the C core (csrc/fold.c, decision EM-17):
``fold_f32("add", x, init)[r]`` is ``(((init[r] + x[r, 0]) + x[r, 1]) + ...)``, one float32
rounding per step in index order: what ``np.add.accumulate(..., axis=-1)[..., -1]`` computes,
with several rows in flight. Operands with a NaN are refused (``None``): an IEEE operation's NaN
payload depends on the operand order, which C does not fix, and the callers fold those their way.

``sqdiff_f32(x, r)`` is the two float64 sums of a relative l2 error, ``(sum r², sum (x - r)²)``, in
an order fixed by the size alone (decision TU12); ``sq_sums(x, r)`` is the same for any two real
arrays, never through BLAS (decision TU23).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision._core import lib
from pyprecision.errors import CastError
from pyprecision.kernel import _args

__all__ = ["SQDIFF_CHUNK", "SQ_BLOCK", "fold_f32", "sq_sums", "sqdiff_f32"]

#: the elements of one of ``sqdiff_f32``'s chunks (the C API's ``PP_SQDIFF_CHUNK``, which
#: csrc/fold.c cuts by): the sums over an array are its chunks' sums added in order from 0, so
#: summing blocks of this size (aligned) in order gives the whole array's bits (decision TU20)
SQDIFF_CHUNK: int = lib.PP_SQDIFF_CHUNK

_KINDS = {"add": lib.PP_FOLD_ADD, "mul": lib.PP_FOLD_MUL}


#: ``fold_f32``'s roundings: each step's float32 result rounded to nearest even to the format's
#: grid as the chain's rounding operations do (bf16 / fp16 overflow to ±inf, the fp8s saturate)
ROUNDINGS = {"bf16": lib.PP_CHAIN_BF16_ROUND, "fp16": lib.PP_CHAIN_F16_ROUND,
             "fp8e4": lib.PP_CHAIN_FP8E4_ROUND, "fp8e4m3fn": lib.PP_CHAIN_FP8E4M3FN_ROUND,
             "fp8e5": lib.PP_CHAIN_FP8E5_ROUND}


def fold_f32(kind: str, x: Any, init: Any, *, rounding: str | None = None,
             threads: int | None = None) -> np.ndarray | None:
    """The fold over the last axis of float32 ``x`` ([..., n]) from float32 ``init`` (x's shape
    without the last axis, or broadcastable to it): a new float32 array of that shape, or None
    when ``x`` or ``init`` holds a NaN. ``kind``: "add" or "mul". ``rounding`` (a
    :data:`ROUNDINGS` name): each step's float32 result is rounded to that format (csrc/chain.c
    ``pp_chain_fold``, decision EM-21; the operands should be values of the format), and a step
    that makes a NaN gives None too. Bad arguments: CastError."""
    code = _KINDS.get(kind)
    if code is None:
        raise CastError(f"fold_f32: kind must be 'add' or 'mul', not {kind!r}")
    rnd = None if rounding is None else ROUNDINGS.get(rounding)
    if rounding is not None and rnd is None:
        raise CastError(f"fold_f32: rounding must be one of {', '.join(ROUNDINGS)}, not "
                        f"{rounding!r}")  # fmt: skip
    a = np.asarray(x)
    if a.dtype != np.float32 or a.ndim < 1:
        raise CastError(f"fold_f32: x must be a float32 array of at least 1 dimension, got "
                        f"{a.dtype}{list(a.shape)}")  # fmt: skip
    start = np.asarray(init)
    if start.dtype != np.float32:
        raise CastError(f"fold_f32: init must be float32, got {start.dtype}")
    try:
        start = np.broadcast_to(start, a.shape[:-1]).copy()  # C order; 0-d stays 0-d
    except ValueError:
        raise CastError(f"fold_f32: init of shape {list(start.shape)} does not broadcast to "
                        f"{list(a.shape[:-1])}") from None  # fmt: skip
    if np.isnan(start).any() or np.isnan(a).any():
        return None
    if a.shape[-1] == 0 or start.size == 0:
        return start.copy()
    src = np.ascontiguousarray(a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a[None])
    out = np.empty(start.shape, np.float32)
    rows, n = src.shape
    call = (_args.ptr(src, "float *"), rows, n, _args.ptr(start, "float *"),
            _args.ptr(out, "float *"), _args.threads_arg(threads))
    if rnd is None:
        status = lib.pp_fold_f32(code, *call)
    else:
        status = lib.pp_chain_fold(code, rnd, *call)
        if status == lib.PP_CHAIN_NAN:
            return None
    _args.check_status(status, "fold_f32")
    return out


def sqdiff_f32(x: Any, r: Any, *, threads: int | None = None) -> tuple[float, float]:
    """``(sum r², sum (x - r)²)`` over two float32 arrays of one shape, each square and
    difference rounded to float64 and summed in an order fixed by the size alone (csrc/fold.c),
    whatever ``threads``; a non-finite element gives a non-finite sum. Bad arguments: CastError."""
    a, b = np.asarray(x), np.asarray(r)
    if a.dtype != np.float32 or b.dtype != np.float32:
        raise CastError(f"sqdiff_f32: x and r must be float32 arrays, got {a.dtype} and {b.dtype}")
    if a.shape != b.shape:
        raise CastError(f"sqdiff_f32: x and r must have one shape, got {list(a.shape)} and "
                        f"{list(b.shape)}")  # fmt: skip
    a, b = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    out = np.zeros(2, np.float64)
    status = lib.pp_sqdiff_f32(_args.ptr(a, "float *"), _args.ptr(b, "float *"), a.size,
                               _args.ptr(out, "double *"), _args.threads_arg(threads))  # fmt: skip
    _args.check_status(status, "sqdiff_f32")
    return float(out[0]), float(out[1])


#: the elements of one of ``sq_sums``' float64 blocks: 32 Ki doubles are 256 KiB, two blocks sit in
#: L2 (decision TU11)
SQ_BLOCK = 1 << 15


def sq_sums(x: Any, r: Any, *, threads: int | None = None) -> tuple[float, float]:
    """``(sum r², sum (x - r)²)`` in float64 over two real arrays of one shape, in an order fixed
    by the size and the dtypes alone: the same bits whatever the threads, the CPU or the BLAS
    (decision TU23). Two float32 arrays go through :func:`sqdiff_f32` (``threads`` for it); any
    other pair (integers, bool, float16, float64, ml_dtypes' formats) is converted to float64
    :data:`SQ_BLOCK` elements at a time, each block's squares summed by NumPy's own pairwise
    reduction and the blocks' sums added in order. ``np.linalg.norm`` is not used: it sums by
    BLAS, whose dot splits the sum by its thread count and kernel, so its last bits change between
    machines. A non-finite element, or squares past float64's range, gives a non-finite sum.
    Complex, object and other non-real arrays, and shapes that differ: CastError."""
    a, b = np.asarray(x), np.asarray(r)
    for v in (a, b):
        if v.dtype.kind == "c" or not np.can_cast(v.dtype, np.float64, "same_kind"):
            raise CastError(f"sq_sums: x and r must be real arrays, got {a.dtype} and {b.dtype}")
    if a.shape != b.shape:
        raise CastError(f"sq_sums: x and r must have one shape, got {list(a.shape)} and "
                        f"{list(b.shape)}")  # fmt: skip
    if a.dtype == np.float32 and b.dtype == np.float32:
        return sqdiff_f32(a, b, threads=threads)
    af, bf = a.reshape(-1), b.reshape(-1)
    xb = np.empty(min(SQ_BLOCK, af.size), np.float64)
    rb = np.empty_like(xb)
    sr = sd = 0.0
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, a square past the range:
        for s in range(0, af.size, SQ_BLOCK):  # a non-finite sum, answered by the caller
            n = min(SQ_BLOCK, af.size - s)
            xs, rs = xb[:n], rb[:n]
            xs[...] = af[s:s + n]
            rs[...] = bf[s:s + n]
            np.subtract(xs, rs, out=xs)
            np.multiply(rs, rs, out=rs)
            np.multiply(xs, xs, out=xs)
            sr += float(np.add.reduce(rs))
            sd += float(np.add.reduce(xs))
    return sr, sd
