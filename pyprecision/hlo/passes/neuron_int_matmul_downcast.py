"""NeuronIntMatmulDowncast (spec 004): integer dots routed through the F32 PE datapath."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyprecision.hlo import attrs as A
from pyprecision.hlo import rewrite as R
from pyprecision.hlo.model import HloInstruction, HloModule
from pyprecision.hlo.passes.base import OpExpanderPass
from pyprecision.hlo.shape import Shape
from pyprecision.hlo.types import PrimitiveType, is_integer

#: The note add_auto_cast_none appends to the copied OpMetadata (rodata @0x224b86).
DOWNCAST_NOTE = " Downcast for int support "
#: The frontend-attribute lock stamped on every new op (kAuto_cast @0x22c785, value "none").
AUTO_CAST_NONE = A.format_frontend_attributes([("auto_cast", A.quote("none"))])
#: Dot attributes CreateDot carries over: dimension numbers and precision config, verbatim.
_DOT_KEYS = ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims",
             "operand_precision", "algorithm")


def all_leaves_integers(shape: Shape) -> bool:
    """XLA's Shape::AreAllLeavesIntegers (PRED is not an integer)."""
    return all(is_integer(s.element_type) for s in shape.leaves())


@dataclass(frozen=True)
class NeuronIntMatmulDowncast(OpExpanderPass):
    """``s32 dot(s8 a, s8 b) → s32 convert(f32 dot(f32 convert(a), f32 convert(b)))``, every new op
    locked with ``frontend_attributes={auto_cast="none"}``.

    "Downcast" routes the dot down onto the float PE path; nothing is narrowed (CORRECTION B25-1).
    There is no overflow guard: products beyond 2^24 lose low bits in F32 (GOTCHA).
    """

    name: ClassVar[str] = "neuron-int-matmul-downcast"

    @staticmethod
    def matches(inst: HloInstruction) -> bool:
        """InstructionMatchesPattern @0x1fa9f10: kDot whose OUTPUT shape is all-integer."""
        if inst.opcode != "dot":                       # cmp byte [rsi+0x14], 0x2E
            return False
        return all_leaves_integers(inst.shape)         # tail-call AreAllLeavesIntegers

    def expand(self, module: HloModule, rw: R.Rewrite, dot: HloInstruction) -> None:
        """ExpandInstruction @0x1faa9b0, step for step."""
        new: list[HloInstruction] = []
        lhs, rhs = dot.operands[0], dot.operands[1]
        cvt0 = self._to_f32(module, lhs, new)           # operand 0: int → F32 only if integer
        cvt1 = self._to_f32(module, rhs, new)           # operand 1: symmetric
        attrs = [(k, v) for k, v in dot.attributes if k in _DOT_KEYS]
        newdot = R.make(module, "dot", dot.shape.change_element_type(PrimitiveType.F32),
                        [cvt0, cvt1], attrs)            # dims + precision config verbatim
        new.append(newdot)
        result = R.make_convert(module, dot.shape, newdot)   # back to the original int shape
        new.append(result)
        for op in new:                                   # add_auto_cast_none on each new op
            self._add_auto_cast_none(op, dot)
        rw.insert_before(dot, new)
        rw.replace_instruction(dot, result)

    @staticmethod
    def _to_f32(module: HloModule, op: HloInstruction, new: list[HloInstruction]) -> HloInstruction:
        if not all_leaves_integers(op.shape):
            return op                                   # non-integer operand: fed as is
        cvt = R.make_convert(module, op.shape.change_element_type(PrimitiveType.F32), op)
        new.append(cvt)
        return cvt

    @staticmethod
    def _add_auto_cast_none(op: HloInstruction, dot: HloInstruction) -> None:
        """add_auto_cast_none @0x1faa1a0: the dot's metadata + note, and auto_cast="none"."""
        op.attributes.append(("frontend_attributes", AUTO_CAST_NONE))
        op.attributes.append(("metadata", R.metadata_with_note(dot, DOWNCAST_NOTE)))
