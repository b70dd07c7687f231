"""AutoCastInputs (spec 000 §8): the lighter subclass that casts only at the input boundary."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyprecision.ir import Function, Instruction, LoadInst, OffloadedMemCpy, float32
from pyprecision.passes.auto_cast_fp32 import AutoCastFP32, AutoCastRun
from pyprecision.passes.autocast_rules import SKIP, load_verdict, memcpy_verdict
from pyprecision.passes.mutate import mutate_fp32
from pyprecision.passes.provenance import Verdict


@dataclass(frozen=True)
class AutoCastInputs(AutoCastFP32):
    """fp32 input @x → D input @x; its loads (and DMA copies out of it) produce D; nothing else.

    Interior arithmetic stays fp32: consumers read the narrow values (engines read any float dtype).
    """

    name: ClassVar[str] = "auto-cast-inputs"

    def before_stmt_transform(self, f: Function, run: AutoCastRun | None = None) -> bool:
        """Narrow only ``isInput and dtype == float32`` tensors (spec 000 §8, sub_23C20)."""
        changed = False
        for tensor in f.tensors:
            if tensor.is_input and tensor.dtype == float32 and not tensor.is_reinterpreted:
                changed |= mutate_fp32(tensor, self.dtype, self.provenance, self.name,
                                       "input @{name} narrowed to {dtype} (spec 000 §8)")
        return changed

    def decide(self, inst: Instruction, run: AutoCastRun) -> Verdict:
        """Loads of inputs (the base load rule gated only on ``tensor.isInput``) and offloaded
        memcpys out of inputs (sub_22BB0); every other instruction is left alone."""
        if isinstance(inst, LoadInst):
            if not inst.tensor.is_input:
                return Verdict(SKIP, "", "not a load of an input (spec 000 §8)")
            return load_verdict(inst, self.dtype)
        if isinstance(inst, OffloadedMemCpy):
            return memcpy_verdict(inst, inst.src.tensor.is_input,
                                  run.on_call_edge(inst.dst.tensor))
        return Verdict(SKIP, "", "only loads of inputs are transformed (spec 000 §8)")
