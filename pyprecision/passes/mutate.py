"""The leaf rewriters of spec 000 §3: ``mutate_fp32`` and ``mutate_result_and_scalar_operands``.

Scalars are narrowed in place; tensor operands get a spliced cast node (spec 000 §3 NOTE — the cost
model of the pass).
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pyprecision.ir import DType, Instruction, ScalarValue, Value, float32, make_cast


def mutate_fp32(v: Any, dtype: DType) -> bool:
    """Spec 000 §3 ``mutate_fp32(v, dtype)``: if ``v`` (a tensor, value, scalar or instruction) is
    float32, retype it to ``dtype`` in place; any other dtype is left alone (decision P5).
    Returns whether anything changed."""
    if v.dtype is float32:  # RichCompare vs np.float32 (float32r is NOT float32)
        if isinstance(v, Instruction):
            v.mutate_dst_ty(dtype)
        else:
            v.mutateTensorTy(dtype)
        return True
    return False


def cast_operand_before(inst: Instruction, index: int, dtype: DType) -> Instruction:
    """Splice ``cast operands[index] → dtype`` just before ``inst`` and make ``inst`` read it
    (every slot of ``inst`` reading the same value is rewired: replaceUseOfWith)."""
    operand = inst.operands[index]
    assert isinstance(operand, Value)
    cast = make_cast(operand, dtype, function=inst.function)
    cast.insert_before(inst)
    cast.allocateId()
    cast.updateDebugLoc(inst.dl)
    inst.replaceUseOfWith(operand, cast)
    return cast


def mutate_result_and_scalar_operands(
    inst: Instruction, dtype: DType, skip: Collection[int] = ()
) -> bool:
    """Spec 000 §3: narrow the RESULT in place, narrow scalar operands in place, and give every
    float32 tensor operand a cast node (operand slots in ``skip`` are left alone — the SelectOp
    predicate, skip rule 3). Returns whether anything changed."""
    changed = False
    if inst.result is not None:
        changed |= mutate_fp32(inst.result, dtype)
    for index in range(len(inst.operands)):
        if index in skip:
            continue
        operand = inst.operands[index]  # re-read: an earlier cast may have rewired this slot
        if isinstance(operand, ScalarValue):
            changed |= mutate_fp32(operand, dtype)  # scalars ride along for free
        elif operand.dtype is float32:  # decision P5: only fp32 tensors need converting
            cast_operand_before(inst, index, dtype)
            changed = True
    return changed
