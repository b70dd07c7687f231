"""The PE dot in the C core (csrc/dot.c): ``[..., M, K] @ [..., K, N]`` the way the PE array sums
into PSUM, for every contraction the emulators run (2-D dots, batched ``dot_general``, attention).

Operands are converted to the accumulation type (float32 or float64; exact for every narrower
float); each product is rounded to it and the products are added over k = 0, 1, ... to an
accumulator that starts at +0.0, one rounding per addition, no FMA, no reassociation (decision
N5); a NaN result is the positive quiet NaN (N6). Batch dimensions broadcast as in ``np.matmul``;
a broadcast operand is read in place, never copied per batch. No Python loop runs over k or over
the batch: one C call does all of it, vectorised across output columns and threaded over rows,
columns and batch (docs/decisions/kernel.md K9).
"""
from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from pyprecision._core import lib
from pyprecision.errors import CastError
from pyprecision.kernel import _args

__all__ = ["pe_dot"]

_TYPES = {np.dtype(np.float32): lib.PP_T_F32, np.dtype(np.float64): lib.PP_T_F64}


def _operand(x: Any, dt: np.dtype, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "biufV" or a.dtype.fields is not None:
        raise CastError(f"pe_dot: {what} has dtype {a.dtype}; it must be a real number array")
    if a.ndim < 2:
        raise CastError(f"pe_dot: {what} must have at least 2 dimensions, got shape {a.shape}")
    return a


def _too_big(nbytes: int, what: str) -> None:
    if nbytes > _args.physical_memory():
        raise CastError(f"pe_dot: {what} needs {nbytes:,} bytes, more than this machine's "
                        "memory")


def _native(a: np.ndarray, dt: np.dtype, what: str) -> np.ndarray:
    if a.dtype != dt or not a.flags.c_contiguous or a.dtype.byteorder not in ("=", "|"):
        _too_big(a.size * dt.itemsize, what)
        try:  # exact for every narrower float and small integer
            a = np.ascontiguousarray(a, dtype=dt)
        except (TypeError, ValueError) as exc:
            raise CastError(f"pe_dot: {what} (dtype {a.dtype}) does not convert to {dt}: "
                            f"{exc}") from None
    return a


def tile_rows(acc_dtype: Any = np.float32, isa: str | None = None) -> int:
    """Rows of the register tile `pe_dot` runs for ``acc_dtype`` on ``isa`` (0: the reference).
    It never changes a result; the tests use it to see that ``PYPRECISION_DOT_TILE`` took effect
    (docs/decisions/kernel.md K12)."""
    dt = np.dtype(acc_dtype).newbyteorder("=")
    if dt not in _TYPES:
        raise CastError(f"pe_dot: the accumulation dtype must be float32 or float64, got {dt}")
    rows = lib.pp_dot_tile_rows(_TYPES[dt], _args.isa_code(isa))
    if rows < 0:
        _args.check_status(rows, "pe_dot")
    return int(rows)


def _offsets(batch_shape: tuple[int, ...], own: tuple[int, ...], size: int) -> np.ndarray:
    """Element offset of each batch entry's matrix in an operand of batch shape ``own``."""
    index = np.arange(prod(own), dtype=np.int64).reshape(own)
    return np.ascontiguousarray(np.broadcast_to(index, batch_shape).reshape(-1) * size)


def pe_dot(a: Any, b: Any, acc_dtype: Any = np.float32, *, threads: int | None = None,
           isa: str | None = None) -> np.ndarray:
    """``a @ b`` summed the way the PE sums (module docstring), as a new ``acc_dtype`` array of
    shape ``broadcast(a.shape[:-2], b.shape[:-2]) + (M, N)``.

    ``acc_dtype``: float32 or float64. ``threads``: worker threads (None: the default of
    :mod:`pyprecision.kernel.threads`). ``isa``: force an instruction set ("reference" is the
    one-element-at-a-time definition; None: PYPRECISION_ISA or the best this CPU has). Results
    never depend on ``threads`` or ``isa``. A result or operand copy larger than this machine's
    memory is a CastError naming the bytes, raised before anything is allocated.
    """
    try:
        dt = np.dtype(acc_dtype)
    except TypeError as exc:
        raise CastError(f"pe_dot: unknown accumulation dtype {acc_dtype!r}") from exc
    if dt.newbyteorder("=") not in _TYPES:
        raise CastError(f"pe_dot: the accumulation dtype must be float32 or float64, got {dt}")
    dt = dt.newbyteorder("=")
    x, y = _operand(a, dt, "a"), _operand(b, dt, "b")
    m, k = x.shape[-2:]
    k2, n = y.shape[-2:]
    if k != k2:
        raise CastError(f"pe_dot: contracting dimensions differ: a is {x.shape}, b is {y.shape}")
    try:
        batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    except ValueError:
        raise CastError(f"pe_dot: batch dimensions do not broadcast: a is {x.shape}, "
                        f"b is {y.shape}") from None
    count = prod(batch)
    _too_big(count * m * n * dt.itemsize, f"the result {batch + (m, n)} ({dt})")
    code, nthreads, isa_code = _TYPES[dt], _args.threads_arg(threads), _args.isa_code(isa)
    X, Y = _native(x, dt, "a"), _native(y, dt, "b")
    if prod(y.shape[:-2]) == 1 and x.shape[:-2] == batch:
        # b is one matrix: every row of every batch entry of a is a row of one (count*M, K) dot
        rows, count_c = count * m, 1
        a_off = b_off = np.zeros(1, np.int64)
    else:
        rows, count_c = m, count
        a_off = _offsets(batch, x.shape[:-2], m * k)
        b_off = _offsets(batch, y.shape[:-2], k * n)
    out = _args.empty_output(batch + (m, n), dt)
    status = lib.pp_dot(code, _args.ptr(X), X.size, _args.ptr(Y), Y.size, count_c,
                        _args.ptr(a_off, "int64_t *"), _args.ptr(b_off, "int64_t *"), rows, k, n,
                        _args.ptr(out), nthreads, isa_code)
    _args.check_status(status, "pe_dot")
    return out
