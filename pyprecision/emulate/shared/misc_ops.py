"""Elementwise opcodes beyond hlo_ops: reduce-precision, popcnt, count-leading-zeros, erf; and the
custom-call targets the evaluator knows.

* reduce-precision follows XLA's bit recipe (``EmitReducePrecisionIR``): round the mantissa to
  ``mantissa_bits`` to nearest even, then exponents above the reduced range become inf and those
  at or below its minimum normal exponent become a signed zero (no subnormals); NaN stays NaN
  when ``mantissa_bits > 0``.
* erf is evaluated in float64 (a positive series below 2, a continued fraction for erfc above;
  within 16 float64 ulp of the exact value, 2^-48 relative, far inside one f32 rounding step)
  and rounded once, like the other transcendental functions.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import int_bits, is_float_type, round_to, widen
from pyprecision.errors import EmulationError
from pyprecision.hlo import PrimitiveType

P = PrimitiveType
_FLOAT_BITS = {P.F16: (5, 10, np.uint16), P.BF16: (8, 7, np.uint16), P.F32: (8, 23, np.uint32),
               P.F64: (11, 52, np.uint64)}


def reduce_precision_bits(x: np.ndarray, t: PrimitiveType, exp_bits: int,
                          man_bits: int) -> np.ndarray:
    """XLA's reduce-precision of ``x`` (element type ``t``), bit for bit."""
    if t not in _FLOAT_BITS:
        raise EmulationError(f"reduce-precision of {t.name.lower()} is not supported")
    src_e, src_m, ut = _FLOAT_BITS[t]
    nbits = 8 * np.dtype(ut).itemsize
    one = ut(1)
    v = np.ascontiguousarray(x).view(ut).copy()
    with np.errstate(all="ignore"):
        if man_bits < src_m:
            shift = ut(src_m - man_bits)
            last = one << shift
            bias = (last >> one) - one
            v = (v + ((v & last) >> shift) + bias) & ~(last - one)
        if exp_bits < src_e:
            sign = one << ut(nbits - 1)
            exp_mask = ut(((1 << src_e) - 1) << src_m)
            ebias = (1 << (src_e - 1)) - 1
            rbias = (1 << (exp_bits - 1)) - 1
            e = v & exp_mask
            over = e > ut((ebias + rbias) << src_m)
            under = e <= ut((ebias - rbias) << src_m)
            signed_zero = v & sign
            v = np.where(over, signed_zero | exp_mask, np.where(under, signed_zero, v))
    out = v.astype(ut).view(x.dtype)
    if man_bits > 0:
        out = np.where(np.isnan(widen(x)), x, out)
    return out


def reduce_precision(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """reduce-precision(x), exponent_bits=, mantissa_bits=."""
    (x,) = args
    e = (inst.attr_ints("exponent_bits") or [0])[0]
    m = (inst.attr_ints("mantissa_bits") or [0])[0]
    return reduce_precision_bits(x, inst.shape.element_type, e, m)


def _unsigned(x: np.ndarray, t: PrimitiveType) -> tuple[np.ndarray, int]:
    """The two's-complement bits of integer ``x`` (type ``t``) as uint64, and the width."""
    bits, _ = int_bits(t)
    u = np.asarray(x).astype(np.int64).view(np.uint64)
    if bits < 64:
        u = u & np.uint64((1 << bits) - 1)
    return u, bits


def popcount_of(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """The number of one bits of integer ``x`` (type ``t``) in the type's width (int64)."""
    u, _ = _unsigned(x, t)
    return np.bitwise_count(u).astype(np.int64)


def leading_zeros_of(x: np.ndarray, t: PrimitiveType) -> np.ndarray:
    """The zeros above the highest one bit of integer ``x`` (type ``t``), in its width (int64)."""
    u, bits = _unsigned(x, t)
    n = np.zeros(u.shape, dtype=np.int64)
    seen = np.zeros(u.shape, dtype=bool)
    for b in range(bits - 1, -1, -1):
        seen |= ((u >> np.uint64(b)) & np.uint64(1)).astype(bool)
        n += ~seen
    return n


def popcnt(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """popcnt(x): the number of one bits in the type's width."""
    return round_to(popcount_of(args[0], inst.shape.element_type), inst.shape.element_type)


def count_leading_zeros(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """count-leading-zeros(x): zeros above the highest one bit, in the type's width."""
    return round_to(leading_zeros_of(args[0], inst.shape.element_type), inst.shape.element_type)


def erf64(x: np.ndarray) -> np.ndarray:
    """erf in float64, vectorised."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    small = np.minimum(a, 2.0)
    # erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!  (positive terms)
    term = small.copy()
    total = small.copy()
    for n in range(1, 60):
        term = term * 2.0 * small * small / (2 * n + 1)
        total = total + term
    series = 2.0 / np.sqrt(np.pi) * np.exp(-small * small) * total
    big = np.maximum(a, 2.0)
    # erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))
    frac = big.copy()
    for k in range(100, 0, -1):
        frac = big + (k / 2.0) / frac
    erfc = np.exp(-big * big) / np.sqrt(np.pi) / frac
    out = np.where(a < 2.0, series, 1.0 - erfc)
    out = np.where(np.isnan(x), np.nan, out)
    return np.copysign(out, x)


def erf(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """erf(x), float types."""
    t = inst.shape.element_type
    if not is_float_type(t):
        raise EmulationError(f"{inst.name}: erf needs a float operand")
    with np.errstate(all="ignore"):
        return round_to(erf64(np.asarray(widen(args[0])).astype(np.float64)), t)


#: custom-call targets that are the identity on a single-program evaluation (sharding marks).
IDENTITY_TARGETS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                    "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
                    "xla.sdy.FuncResultSharding", "annotate_device_placement",
                    "MoveToHost", "MoveToDevice", "LayoutConstraint")


def custom_call(inst: Any, args: list[Any]) -> Any:
    """The custom-call targets XLA:CPU emits for common JAX code (docs/hlo.md lists them); any
    other target is one error naming it."""
    from pyprecision.emulate.shared.sort import topk

    target = inst.attr_str("custom_call_target")
    why = "unknown target"
    if target in IDENTITY_TARGETS and len(args) == 1:
        if not inst.shape.is_tuple and np.shape(args[0]) == tuple(inst.shape.dimensions):
            return args[0]
        why = "it changes the shape (a sharded program's view), which one program cannot model"
    if target == "TopK" and len(args) == 1 and inst.shape.is_tuple:
        k = inst.shape.tuple_shapes[0].dimensions[-1]
        return topk(inst, args[0], k, largest=True)
    raise EmulationError(f"unsupported opcode 'custom-call' (custom_call_target={target!r}) in "
                         f"instruction {inst.name}: {why} (known: "
                         f"{', '.join((*IDENTITY_TARGETS, 'TopK'))})")


def _rng_bit_generator(inst: Any, args: list[Any]) -> Any:
    """rng-bit-generator (hlo_rng)."""
    from pyprecision.emulate.shared.rng import rng_bit_generator

    return rng_bit_generator(inst, args)


MISC_OPS = {
    "rng-bit-generator": _rng_bit_generator,
    "reduce-precision": reduce_precision,
    "popcnt": popcnt,
    "count-leading-zeros": count_leading_zeros,
    "erf": erf,
    "custom-call": custom_call,
}

__all__ = ["MISC_OPS", "custom_call", "erf64", "leading_zeros_of", "popcount_of",
           "reduce_precision_bits"]
