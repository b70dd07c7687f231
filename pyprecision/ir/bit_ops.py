"""Elementwise ops on the bits of a value, for the HLO lowering: ``reduce_precision`` (XLA's
rounding of a float to fewer exponent and mantissa bits) and ``popcnt`` / ``clz`` (integer bit
counts); one declaration each, see :mod:`pyprecision.ir.opdef`. Their arithmetic is the HLO
evaluator's (``ev.num``; decision L22)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyprecision.ir.dtypes import FLOAT_DTYPES, INTEGER_DTYPES
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.opdef import Int, Val, register
from pyprecision.ir.rules import RuleViolation, need, shape_text
from pyprecision.ir.values import Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = ["BIT_COUNT_KINDS", "BitCountOp", "ReducePrecisionOp"]

#: popcnt: the one bits; clz: the zeros above the highest one bit (in the dtype's width)
BIT_COUNT_KINDS = ("popcnt", "clz")


def _same_shape(d: Any, r: Value) -> None:
    need(isinstance(d, Value), "the operand must be a value")
    if d.shape != r.shape:
        raise RuleViolation(f"operand shape {shape_text(d)} != result shape {shape_text(r)}")


@register
class ReducePrecisionOp(Instruction):
    """``%r = reduce_precision %x exponent_bits=E mantissa_bits=M : T`` — XLA's reduce-precision
    in T: the mantissa rounded to M bits (to nearest even), exponents beyond an E-bit range to
    ±inf, those at or below its smallest normal to ±0, NaN kept (M > 0)."""

    opname = "reduce_precision"
    WORDS = {"reduce_precision": {}}
    SYNTAX = (Val("data"), Int("exponent_bits", "exponent_bits"),
              Int("mantissa_bits", "mantissa_bits"))

    def __init__(self, data: Value, exponent_bits: int, mantissa_bits: int, result: Value):
        self.exponent_bits, self.mantissa_bits = int(exponent_bits), int(mantissa_bits)
        super().__init__([data], result)

    @property
    def data(self) -> Any:
        """The input."""
        return self._operands[0]

    allowed_dtypes = FLOAT_DTYPES

    @property
    def can_mutate_dst_ty(self) -> bool:
        """A float op: its result may be retyped (spec 002 gate 8)."""
        return True

    def check(self, f: Function) -> None:
        """A float operand and result of one shape; E >= 1, M >= 0."""
        r = self.result
        assert r is not None
        _same_shape(self.data, r)
        need(self.data.dtype.is_float and r.dtype.is_float, "reduce_precision needs floats")
        need(self.exponent_bits >= 1 and self.mantissa_bits >= 0,
             "exponent_bits must be >= 1 and mantissa_bits >= 0")

    def evaluate(self, ev: Any) -> Any:
        """The HLO evaluator's bit recipe in the result dtype (``ev.num.reduce_precision``)."""
        r = self.result
        assert r is not None
        x = ev.num.convert(ev.operand(self.data), self.data.dtype, r.dtype)
        return ev.num.reduce_precision(x, r.dtype, self.exponent_bits, self.mantissa_bits)


@register
class BitCountOp(Instruction):
    """``%r = popcnt %x : T`` / ``%r = clz %x : T`` — the one bits / the leading zeros of each
    integer element in its dtype's width (HLO popcnt, count-leading-zeros)."""

    opname = "bit_count"
    WORDS = {k: {"kind": k} for k in BIT_COUNT_KINDS}
    SYNTAX = (Val("data"),)

    def __init__(self, kind: str, data: Value, result: Value):
        if kind not in BIT_COUNT_KINDS:
            raise ValueError(f"unknown bit count {kind!r}")
        self.kind = kind
        super().__init__([data], result)

    def word(self) -> str:
        """The kind is the keyword."""
        return self.kind

    @property
    def data(self) -> Any:
        """The input."""
        return self._operands[0]

    allowed_dtypes = INTEGER_DTYPES
    can_mutate_dst_ty = False

    def check(self, f: Function) -> None:
        """An integer operand and a result of its dtype and shape."""
        r = self.result
        assert r is not None
        _same_shape(self.data, r)
        need(self.data.dtype.is_integer and r.dtype is self.data.dtype,
             f"{self.kind} needs an integer operand and a result of its dtype")

    def evaluate(self, ev: Any) -> Any:
        """The HLO evaluator's count (``ev.num.bit_count``)."""
        r = self.result
        assert r is not None
        return ev.num.round_to(ev.num.bit_count(self.kind, ev.operand(self.data), r.dtype), r.dtype)
