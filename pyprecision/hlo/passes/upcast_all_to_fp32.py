"""UpcastAllToFP32 (spec 004): every non-F32 floating-point element type in the module → F32."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyprecision.errors import PassError
from pyprecision.hlo import rewrite as R
from pyprecision.hlo.literal import convert_literal_to_shape
from pyprecision.hlo.model import HloInstruction, HloModule
from pyprecision.hlo.shape import Shape
from pyprecision.hlo.types import PrimitiveType

F32 = PrimitiveType.F32  # 0x0B, the edx immediate of every ChangeElementType call

#: CSWTCH_446 @ VA 0x410830, indexed by element_type - 0x13 (15 entries; 1 = convert to F32).
#: Codes per xla_data.proto: 19 F8E5M2, 20 F8E4M3FN, 21 S4, 22 U4, 23 F8E4M3B11FNUZ,
#: 24 F8E5M2FNUZ, 25 F8E4M3FNUZ, 26 S2, 27 U2, 28 F8E4M3, 29 F8E3M4, 30 S1, 31 U1,
#: 32 F4E2M1FN, 33 F8E8M0FNU.
CSWTCH_446 = (1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1)


def _u32(x: int) -> int:
    return x & 0xFFFFFFFF


def upcast_shape_to_fp32(shape: Shape) -> Shape:
    """UpcastShapeToFP32 @0x1f74020: the dtype dispatch, in the binary's order."""
    et = int(shape.element_type)
    if _u32(et - 0xA) <= 2 or et == 0x10:             # F16/F32/F64, or BF16
        if et == 0xB:                                   # already F32
            return shape
        return shape.change_element_type(F32)
    if _u32(et - 0x13) <= 0xE:                          # FP8/FP4 + S4/U4 block, 0x13..0x21
        if CSWTCH_446[et - 0x13] != 0:
            return shape.change_element_type(F32)
        if _u32(et - 0x20) <= 1:                        # GOTCHA: 0x20 (table 0) still converted
            return shape.change_element_type(F32)
        return shape                                    # S4/U4/S2/U2/S1/U1 unchanged
    if et == 0xD:                                       # TUPLE: recurse element-wise
        return Shape.tuple_of([upcast_shape_to_fp32(s) for s in shape.tuple_shapes],
                              index_comments=shape.index_comments)
    return shape                                        # PRED, S8..U64, token, complex ...


@dataclass(frozen=True)
class UpcastAllToFP32:
    """``T x → f32 x`` for every float type T ≠ F32 (F16, F64, BF16, FP8/FP4): shapes retyped in
    place, constants rebuilt with converted literals; integers (S4/U4 too) untouched (B25-2)."""

    name: ClassVar[str] = "upcast-all-to-fp32"

    def run(self, module: HloModule) -> bool:
        """Retype the whole module; return whether any shape changed."""
        changed = False
        for comp in module.computations:
            rw = R.Rewrite(comp)
            for inst in comp.instructions:
                new_shape = upcast_shape_to_fp32(inst.shape)
                if new_shape.equal(inst.shape):         # Shape::Equal → skip
                    continue
                changed = True
                if inst.opcode == "constant":
                    self._rebuild_constant(module, rw, inst, new_shape)
                else:
                    inst.shape = new_shape              # retyped in place
            rw.commit()
        if changed:
            self._update_entry_layout(module)
        return changed

    @staticmethod
    def _rebuild_constant(module: HloModule, rw: R.Rewrite, const: HloInstruction,
                          new_shape: Shape) -> None:
        """literal → ConvertToShape(newShape) → CreateConstant → ReplaceAllUsesWith → Remove."""
        try:
            literal = convert_literal_to_shape(const.literal_text or "", const.shape, new_shape)
        except ValueError as exc:
            raise PassError(f"{module.name}: cannot convert constant '{const.name}': {exc}") from None
        new = R.make(module, "constant", new_shape, [])
        new.literal_text = literal
        rw.insert_before(const, [new])
        rw.replace_all_uses(const, new)

    @staticmethod
    def _update_entry_layout(module: HloModule) -> None:
        """Keep ``entry_computation_layout`` equal to the retyped entry signature."""
        layout = module.entry_computation_layout()
        if layout is None:
            return
        layout.parameters = [upcast_shape_to_fp32(s) for s in layout.parameters]
        if layout.result is not None:
            layout.result = upcast_shape_to_fp32(layout.result)
        module.set_attr("entry_computation_layout", "{" + layout.to_text() + "}")
