"""The leaf rewriters of spec 000 §3: ``mutate_fp32`` and ``mutate_result_and_scalar_operands``.

Scalars are narrowed in place; tensor operands get a spliced cast node (spec 000 §3 NOTE — the cost
model of the pass).
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pyprecision.ir import DType, Instruction, Rewriter, ScalarValue, Value, float32, make_cast
from pyprecision.passes.provenance import ProvenanceLog, note

#: the default provenance message of a narrowing (``{dtype}`` is the new dtype's name)
NARROWED = "fp32 result narrowed to {dtype} (spec 000 §3)"


def mutate_fp32(v: Any, dtype: DType, log: ProvenanceLog | None = None, pass_name: str = "",
                why: str = NARROWED) -> bool:
    """Spec 000 §3 ``mutate_fp32(v, dtype)``: if ``v`` (a tensor, value, scalar or instruction) is
    float32, retype it to ``dtype`` in place; any other dtype is left alone (decision P5).
    Returns whether anything changed. With a provenance ``log``, records the outcome on ``v``
    (``why`` formatted with the new dtype's ``dtype`` and ``v``'s ``name`` and ``kind`` when it
    narrows; a constant template, so nothing is built when ``log`` is None)."""
    if v.dtype is float32:  # RichCompare vs np.float32 (float32r is NOT float32)
        if isinstance(v, Instruction):
            v.mutate_dst_ty(dtype)
        else:
            v.mutate_tensor_ty(dtype)
        if log is not None:
            note(log, v, pass_name, "", why.format(dtype=dtype.name, name=getattr(v, "name", ""),
                                                   kind=getattr(v, "kind", "")))
        return True
    if log is not None and v.dtype is not None:
        note(log, v, pass_name, "", f"already {v.dtype.name}; only fp32 is narrowed (decision P5)")
    return False


def cast_operand_before(inst: Instruction, index: int, dtype: DType,
                        log: ProvenanceLog | None = None, pass_name: str = "",
                        rewriter: Rewriter | None = None) -> Instruction:
    """Splice ``cast operands[index] → dtype`` just before ``inst`` and make ``inst`` read it
    (every slot of ``inst`` reading the same value is rewired: replaceUseOfWith)."""
    rw = rewriter or Rewriter()
    operand = inst.operands[index]
    assert isinstance(operand, Value)
    cast = make_cast(operand, dtype, function=inst.function)
    rw.insert_before(cast, inst, dl=inst.dl)
    rw.replace_uses_in(inst, operand, cast)
    if log is not None:
        note(log, cast, pass_name, "", f"inserted, fp32 operand cast to {dtype.name} (spec 000 §3)")
    return cast


def mutate_result_and_scalar_operands(
    inst: Instruction, dtype: DType, skip: Collection[int] = (),
    log: ProvenanceLog | None = None, pass_name: str = "", rewriter: Rewriter | None = None,
) -> bool:
    """Spec 000 §3: narrow the RESULT in place, narrow scalar operands in place, and give every
    float32 tensor operand a cast node (operand slots in ``skip`` are left alone — the SelectOp
    predicate, skip rule 3). Returns whether anything changed. With a provenance ``log`` the
    result's outcome is recorded on ``inst`` and every inserted cast on the cast. Casts are placed
    through ``rewriter`` (a fresh one when None)."""
    rw = rewriter or Rewriter()
    changed = False
    if inst.result is not None:
        narrowed = mutate_fp32(inst.result, dtype)
        changed |= narrowed
        if log is not None:
            note(log, inst, pass_name, "", NARROWED.format(dtype=dtype.name) if narrowed
                 else f"already {inst.result.dtype.name}; only fp32 is narrowed (decision P5)")
    for index in range(len(inst.operands)):
        if index in skip:
            continue
        operand = inst.operands[index]  # re-read: an earlier cast may have rewired this slot
        if isinstance(operand, ScalarValue):
            changed |= mutate_fp32(operand, dtype)  # scalars ride along for free
        elif operand.dtype is float32:  # decision P5: only fp32 tensors need converting
            cast_operand_before(inst, index, dtype, log, pass_name, rw)
            changed = True
    return changed
