"""AutoCastInputs (spec 000 §8): the lighter subclass that casts only at the input boundary."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyprecision.ir import Function, Instruction, LoadInst, OffloadedMemCpy, float32
from pyprecision.passes.auto_cast_fp32 import AutoCastFP32
from pyprecision.passes.mutate import mutate_fp32


@dataclass(frozen=True)
class AutoCastInputs(AutoCastFP32):
    """fp32 input @x → D input @x; its loads (and DMA copies out of it) produce D; nothing else.

    Interior arithmetic stays fp32: consumers read the narrow values (engines read any float dtype).
    """

    name: ClassVar[str] = "auto-cast-inputs"

    def before_stmt_transform(self, f: Function) -> bool:
        """Narrow only ``isInput and dtype == float32`` tensors (spec 000 §8, sub_23C20)."""
        changed = False
        for tensor in f.tensors:
            if tensor.isInput and tensor.dtype == float32 and not tensor.is_reinterpreted:
                changed |= mutate_fp32(tensor, self.dtype, self.provenance, self.name,
                                       "input @{name} narrowed to {dtype} (spec 000 §8)")
        return changed

    def transform_instruction(self, inst: Instruction) -> bool:
        """Loads of inputs (the base load mechanism gated only on ``tensor.isInput``) and offloaded
        memcpys out of inputs; every other instruction is left alone."""
        if isinstance(inst, LoadInst):
            if not inst.tensor.isInput:
                self._note(inst, "", "not a load of an input (spec 000 §8)")
                return False
            return self.transform_load(inst)
        if isinstance(inst, OffloadedMemCpy):
            return self.transform_offloaded_memcpy(inst)
        self._note(inst, "", "only loads of inputs are transformed (spec 000 §8)")
        return False

    def memcpy_source_ok(self, inst: OffloadedMemCpy) -> bool:
        """Only DMA copies whose source is an input land narrowed (spec 000 §8, sub_22BB0)."""
        return inst.src.tensor.isInput
