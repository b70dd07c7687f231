"""The numeric routines every room shares, each written once (docs/decisions/numerics.md N3-N5).

* ``round_to_format`` — a NumPy array rounded once (RNE) into a cast-core format, through the core;
* ``as_float32`` — an array of a format's value dtype (bf16, fp16, fp8) as float32, bit for bit what
  ``astype(np.float32)`` gives, through the core's decode (N7);
* ``wrap_int`` — integers wrapped to a width, two's complement;
* ``ordered_codes`` / ``is_nan_code`` — a code's position on its format's number line (the ULP
  ordering) and the NaN test on codes;
* ``pe_matmul`` — the PE array's matmul: products rounded to the accumulation type, summed in
  contraction order from a zeroed accumulator (+0), one rounding per addition, no FMA: the C core's
  PE dot (csrc/dot.c), which ``int_dot``'s F32 route also runs.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pyprecision.formats import format as _format
from pyprecision.formats import formats as _formats
from pyprecision.kernel.cast import cast, decode
from pyprecision.kernel.dot import pe_dot

__all__ = ["as_float32", "codes_of", "is_nan_code", "ordered_codes", "pe_matmul", "quantize_f32",
           "round_to_format", "wrap_int"]


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


#: value dtype -> format name, for the cast-core formats narrower than 32 bits
_DECODABLE = {f.dtype: f.name for f in _formats() if f.bits <= 16}
#: formats whose core decode is ``astype(np.float32)`` on every code (tests/kernel/
#: test_as_float32.py sweeps them all); on fp16 the two differ on NaN codes only: NumPy keeps a
#: signalling NaN signalling (0x7c01 -> 0x7f802000), the core quiets it (CAST_SEMANTICS §6)
_DECODE_IS_ASTYPE = frozenset({"bf16", "fp8e4", "fp8e4m3fn", "fp8e5"})


def as_float32(x: Any) -> np.ndarray:
    """``x.astype(np.float32)``, bit for bit (NaN payloads included), for any NumPy array: arrays of
    a cast-core format's value dtype (bfloat16, float16, the float8 types) go through the core's
    decode, which runs at memory bandwidth where ml_dtypes' element loop takes 2-25x longer (0.3
    against 0.55 ms for bf16 and 7.7 ms for fp8 at 1.5 M elements); fp16's NaN lanes, where the
    core's decode quiets a signalling NaN, are taken from ``astype``. Everything else is
    ``astype(np.float32, copy=False)`` (decision N7)."""
    a = np.asarray(x)
    name = _DECODABLE.get(a.dtype)
    if name is None or a.size < 4096:  # small arrays: astype's fixed cost is lower
        return a.astype(np.float32, copy=False)
    out = decode(np.ascontiguousarray(a), name).reshape(a.shape)
    if name not in _DECODE_IS_ASTYPE:
        nan = np.isnan(out)
        if nan.any():
            out[nan] = a[nan].astype(np.float32)
    return out


_QUANTIZE_SOURCES = {np.dtype(np.float32): "PP_T_F32", np.dtype(np.float64): "PP_T_F64"}


def quantize_f32(x: Any, fmt: Any) -> np.ndarray:
    """``as_float32(round_to_format(x, fmt))`` bit for bit, for a float32 or float64 array: the
    values of ``x`` rounded once to nearest even into ``fmt`` (Neuron default saturation), as
    float32. One encode and one decode of the core on a scratch code buffer, without the public
    API's per-call checks (the IR evaluator makes one such call per instruction and block, where
    those checks cost more than the cast of 64 Ki elements). Other sources go the general way."""
    from pyprecision._core import lib
    from pyprecision.kernel import _args

    a = np.asarray(x)
    source = _QUANTIZE_SOURCES.get(a.dtype)
    f = _format(fmt)
    if source is None or a.dtype.byteorder not in ("=", "|") or f.bits > 16:
        return as_float32(round_to_format(a, fmt))
    if a.ndim > 1 and not a.flags.c_contiguous and a.flags.f_contiguous:
        return quantize_f32(a.T, fmt).T  # elementwise: a transposed view needs no copy
    src = a if a.flags.c_contiguous else a.copy(order="C")
    small = _SMALL.get(f.name) if a.dtype == np.float32 and src.size <= SMALL_ELEMENTS else None
    if small is not None:  # one single-threaded pass of the chain kernel; a NaN goes on below
        got = _chain_rounding(small)([src], src.size)
        if got is not None:
            return got[0].reshape(src.shape)
    codes = np.empty(src.shape, f.storage_dtype)
    out = np.empty(src.shape, np.float32)
    opts = _options(f.index, bool(f.default_saturate))
    threads = _args.threads_arg(None)
    opts.threads = threads
    _args.check_status(lib.pp_encode(_args.ptr(src), getattr(lib, source), src.size,
                                     _args.ptr(codes), opts), "encode")
    _args.check_status(lib.pp_decode(_args.ptr(codes), codes.size, f.index,
                                     _args.ptr(out, "float *"), threads, opts.isa), "decode")
    # no NaN patch as in as_float32: an RNE encode writes quiet NaN codes only, which the core
    # decodes as astype does (tests/kernel/test_as_float32.py: every NaN float32 word into fp16)
    return out


def codes_of(x: np.ndarray, fmt: Any) -> np.ndarray:
    """The codes (the format's storage dtype, ``x``'s shape) of ``x``, a C-contiguous float32 array
    of ``fmt``'s values none of which is a NaN: each value's own code, ±inf included (an RNE encode
    without saturation, which leaves a representable value as it is). One threaded core call,
    without the public API's per-call checks: the caller has checked the array."""
    from pyprecision._core import lib
    from pyprecision.kernel import _args

    f = _format(fmt)
    codes = np.empty(x.shape, f.storage_dtype)
    opts = _options(f.index, False)
    opts.threads = _args.threads_arg(None)
    _args.check_status(lib.pp_encode(_args.ptr(x), lib.PP_T_F32, x.size, _args.ptr(codes), opts),
                       "encode")
    return codes


_OPTIONS: dict[tuple[int, bool], Any] = {}

#: float32 arrays up to this size round into bf16 / fp16 / the fp8s through one chain program
#: (csrc/chain.c, RNE with each format's Neuron default saturation; EM-19): one C call instead of an
#: encode, a decode and their thread set-up, which cost more than the rounding of the PE tiles
#: (4 Ki-16 Ki elements) the IR evaluator quantizes one at a time (4 Ki: 13.8 -> 7.1 us); larger
#: arrays take the threaded encode. A NaN in the array makes the program decline, and the encode
#: rounds it.
SMALL_ELEMENTS = 1 << 18


@functools.cache
def _chain_rounding(op: str) -> Any:
    from pyprecision.kernel.chain import Program

    return Program([(op, 1, 0)], 2, 1, [(1, np.float32)])


#: each rounds as the format's Neuron default: bf16 / fp16 without saturation, the fp8s with it
_SMALL = {"bf16": "round_bf16", "fp16": "round_fp16", "fp8e4": "round_fp8e4",
          "fp8e4m3fn": "round_fp8e4m3fn", "fp8e5": "round_fp8e5"}


def _options(index: int, saturate: bool) -> Any:
    """The core's options of an RNE encode into format ``index`` (one struct per format, reused;
    the caller sets ``threads`` before each call)."""
    opts = _OPTIONS.get((index, saturate))
    if opts is None:
        from pyprecision._core import ffi
        from pyprecision.kernel import _args

        opts = ffi.new("pp_cast_options *")
        opts.format = index
        opts.rounding = _args.ROUNDINGS["rne"]
        opts.nan_policy = _args.NAN_POLICIES["ml_dtypes"]
        opts.saturate = int(saturate)
        opts.isa = _args.isa_code(None)
        opts.random_bits = ffi.NULL
        _OPTIONS[(index, saturate)] = opts
    return opts


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
