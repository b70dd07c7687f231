"""The numeric routines every room shares, each written once (docs/decisions/numerics.md N3-N5).

* ``round_to_format`` — a NumPy array rounded once (RNE) into a cast-core format, through the core;
* ``wrap_int`` — integers wrapped to a width, two's complement;
* ``ordered_codes`` / ``is_nan_code`` — a code's position on its format's number line (the ULP
  ordering) and the NaN test on codes;
* ``pe_matmul`` — the PE array's matmul: products rounded to the accumulation type, summed in
  contraction order from a zeroed accumulator (+0), one rounding per addition, no FMA: the C core's
  PE dot (csrc/dot.c), which ``int_dot``'s F32 route also runs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.formats import format as _format
from pyprecision.kernel.cast import cast, decode
from pyprecision.kernel.dot import pe_dot

__all__ = ["is_nan_code", "ordered_codes", "pe_matmul", "round_to_format", "wrap_int"]


def round_to_format(x: Any, fmt: Any, *, saturate: bool | None = None) -> np.ndarray:
    """``x`` rounded once to nearest even into ``fmt``, as an array of the format's value dtype.

    ``saturate=None`` is the Neuron default (the fp8 formats saturate, §3); XLA's convert passes
    False (overflow gives inf, or NaN where the format has none). Booleans count as 0/1; floats
    narrower than float32 are widened exactly first; integers and float32/float64 go to the core
    as they are.
    """
    src = np.asarray(x)
    if src.dtype == np.bool_:
        src = src.astype(np.int8)
    elif src.dtype.kind not in "biuO" and src.dtype not in (np.float32, np.float64):
        src = src.astype(np.float32)  # f16, bf16, fp8: exact
    options = {} if saturate is None else {"saturate": saturate}
    out = cast(np.ascontiguousarray(src), _format(fmt), rounding="rne", **options)
    return np.asarray(out).reshape(src.shape)


def wrap_int(x: Any, bits: int, signed: bool) -> np.ndarray:
    """Integers (or Python ints in an object array, bools, floats truncated by NumPy) wrapped modulo
    ``2**bits`` into the signed or unsigned range; int64, or uint64 for unsigned 64-bit."""
    a = np.asarray(x)
    out = np.uint64 if bits == 64 and not signed else np.int64
    if a.dtype == object:
        m = 1 << bits
        v = [int(i) % m for i in a.ravel()]
        if signed:
            v = [i - m if i >= m >> 1 else i for i in v]
        return np.array(v, dtype=object).reshape(a.shape).astype(out)
    if bits == 64:
        return a.astype(out)
    u = a.astype(np.int64) & ((1 << bits) - 1)
    if signed:
        u = np.where(u >= (1 << (bits - 1)), u - (1 << bits), u)
    return u.astype(np.int64)


def ordered_codes(codes: Any, bits: int, shift: int = 0) -> np.ndarray:
    """Each sign-magnitude code's position on its number line (int64): the magnitude (the bits below
    the sign, shifted down by the storage shift, so fp32r counts fp32r steps), negated when the sign
    is set. +0 and -0 both sit at 0; +inf is one step above +max."""
    c = np.asarray(codes).astype(np.int64)
    sign = (c >> (bits - 1)) & 1
    mag = (c & ((1 << (bits - 1)) - 1)) >> shift
    return np.where(sign != 0, -mag, mag)


def is_nan_code(codes: Any, fmt: Any = None) -> np.ndarray:
    """True where a code of ``fmt`` (a Format or its name) is one of its NaN codes; ``fmt=None``
    reads the codes as float32 bits."""
    if fmt is None:
        return np.isnan(np.asarray(codes, np.uint32).view(np.float32))
    f = _format(fmt)
    return np.isnan(decode(np.asarray(codes, f.storage_dtype), f))


def pe_matmul(a: Any, b: Any, acc_dtype: Any = np.float32, *,
              threads: int | None = None) -> np.ndarray:
    """``[..., M, K] @ [..., K, N]`` summed the way the PE array sums into PSUM.

    Operands are converted to ``acc_dtype`` (float32 or float64; exact for every format narrower
    than it); each product is rounded to it, and the products are added over k = 0, 1, ... to an
    accumulator that starts at +0.0, one rounding per addition, no FMA and no reassociation. So a
    sum of -0 products is +0 (decision N5: the PSUM accumulator is zeroed; XLA's HloEvaluator
    starts from 0 too), and every NaN is the positive quiet NaN (N6). Batch dimensions broadcast
    as in ``np.matmul``. One call of the C core's dot (:func:`pyprecision.kernel.dot.pe_dot`)."""
    return pe_dot(a, b, acc_dtype, threads=threads)
