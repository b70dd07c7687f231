"""Elementwise HLO ops → IR compute ops: unary and binary arithmetic, compare, select, clamp,
convert, copy, bitcast-convert, reduce-precision, popcnt and count-leading-zeros."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyprecision import ir
from pyprecision.hlo import HloInstruction, typed_attrs
from pyprecision.lower.context import LV, LoweringContext, ir_shape

__all__ = ["ELEMENTWISE"]

_UNARY = {
    "negate": "neg", "abs": "abs", "exponential": "exp", "log": "log", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "tanh": "tanh", "logistic": "sigmoid", "floor": "floor", "ceil": "ceil",
    "round-nearest-even": "round_ne", "sign": "sign", "sine": "sin", "cosine": "cos",
    "erf": "erf", "log-plus-one": "log1p", "exponential-minus-one": "expm1", "copy": "copy",
    "cbrt": "cbrt",
}  # fmt: skip
_BINARY = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "maximum": "max",
    "minimum": "min", "power": "pow", "remainder": "rem", "atan2": "atan2", "and": "and",
    "or": "or", "xor": "xor", "shift-left": "shl", "shift-right-arithmetic": "shr_a",
    "shift-right-logical": "shr_l",
}  # fmt: skip
_COMPARE = {d: f"cmp_{d.lower()}" for d in typed_attrs.DIRECTIONS}


def result_dtype(ctx: LoweringContext, inst: HloInstruction) -> ir.DType:
    """The IR dtype of an array-shaped instruction's result."""
    return ctx.ir_dtype(inst, inst.shape.element_type)


def dims_of(inst: HloInstruction) -> tuple[int, ...]:
    """The HLO dimensions of an array result."""
    return tuple(inst.shape.dimensions)


def fit(ctx: LoweringContext, v: ir.Value, dims: tuple[int, ...], base: str) -> ir.Value:
    """``v`` broadcast to ``dims`` when it is an HLO scalar (a [1]) and ``dims`` is not."""
    if v.shape == ir_shape(dims):
        return v
    out = ctx.value(base, v.dtype, dims)
    ctx.emit(ir.BroadcastOp(v, (), out), role="aux")
    return out


def _unary(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    rdt = result_dtype(ctx, inst)
    if inst.opcode == "not":
        if inst.shape.element_type.name == "PRED":
            out = ctx.value(inst.name, rdt, dims_of(inst))
            ctx.emit(ir.BinaryOp("xor", x, ir.ScalarValue(1, rdt), out))
            return out
        kind = "not"
    else:
        kind = _UNARY[inst.opcode]
    out = ctx.value(inst.name, rdt, dims_of(inst))
    ctx.emit(ir.UnaryOp(kind, x, out))
    return out


def _binary(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    a, b = ops
    rdt = result_dtype(ctx, inst)
    if inst.opcode == "shift-right-logical" and rdt.is_integer and rdt.is_signed:
        return _shift_as(ctx, inst, a, b, rdt, "uint", "shr_l")
    if inst.opcode == "shift-right-arithmetic" and rdt.is_integer and not rdt.is_signed:
        return _shift_as(ctx, inst, a, b, rdt, "int", "shr_a")
    out = ctx.value(inst.name, rdt, dims_of(inst))
    ctx.emit(ir.BinaryOp(_BINARY[inst.opcode], a, b, out))
    return out


def _shift_as(ctx: LoweringContext, inst: HloInstruction, a: ir.Value, b: ir.Value,
              rdt: ir.DType, sign: str, kind: str) -> ir.Value:
    """A logical shift of a signed integer, or an arithmetic shift of an unsigned one, works on its
    bits (XLA): bitcast both operands to the ``sign`` dtype of the width, shift, bitcast back. The
    amount keeps its bits: a negative amount of a logical shift is a huge unsigned one (all
    zeros); a u8 amount of 200 is -56 for the arithmetic shift, out of range either way (sign
    fill, decision OP6)."""
    udt = ir.as_dtype(f"{sign}{rdt.bits}")
    dims = dims_of(inst)
    ua, ub, us = (ctx.value(f"{inst.name}.{k}", udt, dims) for k in ("a", "b", "u"))
    ctx.emit(ir.UnaryOp("bitcast", a, ua), role="aux")
    ctx.emit(ir.UnaryOp("bitcast", b, ub), role="aux")
    ctx.emit(ir.BinaryOp(kind, ua, ub, us), role="aux")
    out = ctx.value(inst.name, rdt, dims)
    ctx.emit(ir.UnaryOp("bitcast", us, out))
    return out


def _total_order_key(ctx: LoweringContext, inst: HloInstruction, v: ir.Value, k: str) -> ir.Value:
    """The signed integer whose order is XLA's total order of float ``v`` (decision OP7):
    ``i ^ ((i >> (w-1)) & INT_MAX)`` of its bits ``i``, so -NaN < -inf < … < -0 < +0 < … < +NaN."""
    w = v.dtype.bits
    sdt = ir.as_dtype(f"int{w}")
    dims = dims_of(inst)
    i, s, m, key = (ctx.value(f"{inst.name}.{k}{n}", sdt, dims) for n in ("bits", "sign", "mag", "key"))
    ctx.emit(ir.UnaryOp("bitcast", v, i), role="aux")
    ctx.emit(ir.BinaryOp("shr_a", i, ir.ScalarValue(w - 1, sdt), s), role="aux")
    ctx.emit(ir.BinaryOp("and", s, ir.ScalarValue((1 << (w - 1)) - 1, sdt), m), role="aux")
    ctx.emit(ir.BinaryOp("xor", i, m, key), role="aux")
    return key


def _compare(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    a, b = ops
    try:
        direction, order = typed_attrs.comparison(inst)
    except ValueError as e:
        raise ctx.error(inst, str(e)) from None
    if order == "TOTALORDER" and a.dtype.is_float:
        a, b = _total_order_key(ctx, inst, a, "a"), _total_order_key(ctx, inst, b, "b")
    out = ctx.value(inst.name, ir.uint8, dims_of(inst))
    ctx.emit(ir.BinaryOp(_COMPARE[direction], a, b, out))
    return out


def _is_finite(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """is-finite(x) = |x| < +inf: false for ±inf and every NaN (decision OP4)."""
    (x,) = ops
    dims = dims_of(inst)
    a = ctx.value(f"{inst.name}.abs", x.dtype, dims)
    ctx.emit(ir.UnaryOp("abs", x, a), role="aux")
    out = ctx.value(inst.name, ir.uint8, dims)
    ctx.emit(ir.BinaryOp("cmp_lt", a, ir.ScalarValue(float("inf"), x.dtype), out))
    return out


def _round_afz(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """round-nearest-afz from exact steps (decision OP4): t = trunc(x) (ceil below 0, else floor),
    |x - t| (exact), and t ± 1 chosen by select where that is ≥ 0.5, else t itself, so -0.3 and
    -0.0 keep their -0, NaN and ±inf pass through, and 0.49999997 is not rounded up."""
    (x,) = ops
    dims, dt = dims_of(inst), x.dtype
    v = {k: ctx.value(f"{inst.name}.{k}", dt, dims)
         for k in ("floor", "ceil", "trunc", "diff", "abs", "step", "away")}
    neg, up = (ctx.value(f"{inst.name}.{k}", ir.uint8, dims) for k in ("isneg", "up"))
    one = ir.ScalarValue(1.0, dt)
    ctx.emit(ir.BinaryOp("cmp_lt", x, ir.ScalarValue(0.0, dt), neg), role="aux")
    ctx.emit(ir.UnaryOp("floor", x, v["floor"]), role="aux")
    ctx.emit(ir.UnaryOp("ceil", x, v["ceil"]), role="aux")
    ctx.emit(ir.SelectOp(neg, v["ceil"], v["floor"], v["trunc"]), role="aux")
    ctx.emit(ir.BinaryOp("sub", x, v["trunc"], v["diff"]), role="aux")
    ctx.emit(ir.UnaryOp("abs", v["diff"], v["abs"]), role="aux")
    ctx.emit(ir.BinaryOp("cmp_ge", v["abs"], ir.ScalarValue(0.5, dt), up), role="aux")
    ctx.emit(ir.SelectOp(neg, ir.ScalarValue(-1.0, dt), one, v["step"]), role="aux")
    ctx.emit(ir.BinaryOp("add", v["trunc"], v["step"], v["away"]), role="aux")
    out = ctx.value(inst.name, dt, dims)
    ctx.emit(ir.SelectOp(up, v["away"], v["trunc"], out))
    return out


def _select(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    p, a, b = ops
    dims = dims_of(inst)
    if not isinstance(a, ir.Value):
        raise ctx.error(inst, "select of tuples is malformed (the verifier's rule); select each element")
    p = fit(ctx, p, dims, f"{inst.name}.pred")
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims)
    ctx.emit(ir.SelectOp(p, a, b, out))
    return out


def _clamp(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    """clamp(lo, x, hi) = min(max(x, lo), hi) (XLA's order)."""
    lo, x, hi = ops
    dims = dims_of(inst)
    rdt = result_dtype(ctx, inst)
    lo, hi = fit(ctx, lo, dims, f"{inst.name}.lo"), fit(ctx, hi, dims, f"{inst.name}.hi")
    m = ctx.value(f"{inst.name}.max", rdt, dims)
    ctx.emit(ir.BinaryOp("max", x, lo, m), role="aux")
    out = ctx.value(inst.name, rdt, dims)
    ctx.emit(ir.BinaryOp("min", m, hi, out))
    return out


def _convert(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    rdt = result_dtype(ctx, inst)
    out = ctx.value(inst.name, rdt, dims_of(inst))
    if inst.shape.element_type.name == "PRED":  # x != 0, NaN included (XLA)
        zero = ir.ScalarValue(0.0 if x.dtype.is_float else 0, x.dtype)
        ctx.emit(ir.BinaryOp("cmp_ne", x, zero, out))
    else:
        ctx.emit(ir.UnaryOp("cast", x, out))
    return out


def _reduce_precision(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    e, m = inst.attr_ints("exponent_bits"), inst.attr_ints("mantissa_bits")
    if not e or not m:
        raise ctx.error(inst, "missing exponent_bits= or mantissa_bits=")
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.ReducePrecisionOp(x, e[0], m[0], out))
    return out


def _bit_count(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    out = ctx.value(inst.name, result_dtype(ctx, inst), dims_of(inst))
    ctx.emit(ir.BitCountOp("popcnt" if inst.opcode == "popcnt" else "clz", x, out))
    return out


def _bitcast_convert(ctx: LoweringContext, inst: HloInstruction, ops: list[LV]) -> LV:
    (x,) = ops
    rdt = result_dtype(ctx, inst)
    if rdt.bits != x.dtype.bits:
        raise ctx.refuse(inst, "bitcast-convert:widths", "bitcast-convert between widths")
    out = ctx.value(inst.name, rdt, dims_of(inst))
    load = getattr(x, "owner", None)
    if isinstance(load, ir.AffineLoad) and load.src.reinterpret is None and x.shape == out.shape:
        # the bits of a tensor: a second load through a reinterpreting view, as the compiler
        # keeps reinterpretation on the access (decision L25); no pass retypes such a load
        ctx.emit(ir.AffineLoad(ir.NeuronAP(load.src.tensor, rdt), out))
        return out
    ctx.emit(ir.UnaryOp("bitcast", x, out))
    return out


Handler = Callable[[LoweringContext, HloInstruction, list[Any]], LV]

ELEMENTWISE: dict[str, Handler] = {
    **dict.fromkeys(_UNARY, _unary),
    "not": _unary,
    **dict.fromkeys(_BINARY, _binary),
    "compare": _compare,
    "is-finite": _is_finite,
    "round-nearest-afz": _round_afz,
    "select": _select,
    "clamp": _clamp,
    "convert": _convert,
    "bitcast-convert": _bitcast_convert,
    "reduce-precision": _reduce_precision,
    "popcnt": _bit_count,
    "count-leading-zeros": _bit_count,
}
