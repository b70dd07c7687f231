"""BatchNormTrainingUpcast (spec 004): BF16 batch-norm-training statistics computed in F32."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from pyprecision.hlo import rewrite as R
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule
from pyprecision.hlo.passes.base import OpExpanderPass
from pyprecision.hlo.shape import Shape
from pyprecision.hlo.types import PrimitiveType

_BNT_KEYS = ("epsilon", "feature_index")


@dataclass(frozen=True)
class BatchNormTrainingUpcast(OpExpanderPass):
    """``(bf16,bf16,bf16) batch-norm-training(x, s, o) → tuple(bf16 convert(gte(f32
    batch-norm-training(f32 convert(x), f32 convert(s), f32 convert(o)), i)) for i in 0..2)``.

    batch-norm-inference and batch-norm-grad are never touched.
    """

    name: ClassVar[str] = "batch-norm-training-upcast"

    @staticmethod
    def matches(inst: HloInstruction) -> bool:
        """AllOfPattern @0x1e891d0: opcode kBatchNormTraining ∧ lambda#1 (any BF16 operand)."""
        if inst.opcode != "batch-norm-training":       # OpcodeImpl 0x12
            return False
        # lambda#1 @0x1e89440: any operand whose element type is BF16 (cmp [rax], 0x10)
        return any(op.shape.element_type == PrimitiveType.BF16 for op in inst.operands)

    def candidates(self, comp: HloComputation) -> Iterable[HloInstruction]:
        """Post order (operands before users)."""
        return comp.post_order()

    def expand(self, module: HloModule, rw: R.Rewrite, bnt: HloInstruction) -> None:
        """Widen the operands, run the op in F32, narrow each tuple element back."""
        new: list[HloInstruction] = []
        cvts = []
        for op in bnt.operands[:3]:                     # every operand widened to F32
            cvt = R.make_convert(module, op.shape.change_element_type(PrimitiveType.F32), op)
            cvts.append(cvt)
            new.append(cvt)
        orig_elems = list(bnt.shape.tuple_shapes)
        f32_elems = [s.change_element_type(PrimitiveType.F32) for s in orig_elems]
        attrs = [(k, v) for k, v in bnt.attributes if k in _BNT_KEYS]   # epsilon, feature_index
        f32_bnt = R.make(module, "batch-norm-training", Shape.tuple_of(f32_elems), cvts, attrs)
        new.append(f32_bnt)
        outs = []
        for i in range(3):                              # GTE (F32) + convert back to the BF16 shape
            gte = R.make(module, "get-tuple-element", f32_elems[i], [f32_bnt], [("index", str(i))])
            cvt = R.make_convert(module, orig_elems[i], gte)
            new.extend([gte, cvt])
            outs.append(cvt)
        tup = R.make(module, "tuple", Shape.tuple_of(orig_elems), outs)
        new.append(tup)
        rw.insert_before(bnt, new)
        rw.replace_instruction(bnt, tup)           # CHECK_OK(ReplaceInstruction(bf16Bnt, ...))
