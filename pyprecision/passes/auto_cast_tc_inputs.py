"""AutoCastTCInputs (spec 000 §4, §6): matmul operands cast to the target's legal dtype, then the
backing SBUF tensors physically shrunk."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pyprecision.ir import (
    DType,
    Function,
    Instruction,
    LoadInst,
    Rewriter,
    SingleValueTensor,
    Tensor,
    TensorContractOp,
    UnaryOp,
    Value,
    is_identity_matrix,
    make_cast,
)
from pyprecision.passes.auto_cast_fp32 import AutoCastFP32, AutoCastRun
from pyprecision.passes.autocast_rules import contract_verdict, shrink_verdict
from pyprecision.passes.provenance import Verdict, record
from pyprecision.passes.statistics import register_stats


def is_matmult_transpose(tc: TensorContractOp) -> bool:
    """A matmult-based transpose: the moving operand is a load of a const identity matrix, so
    ``r = stationary^T`` (decision P8)."""
    moving = tc.operands[1]
    owner = moving.owner if isinstance(moving, Value) else None
    if not isinstance(owner, LoadInst) or not owner.load_const or owner.is_reinterpreted:
        return False
    tensor = owner.tensor
    if isinstance(tensor, SingleValueTensor) or tensor.value is None:
        return False
    return is_identity_matrix(np.asarray(tensor.value))  # remembers the lowering's (P28, P29)


def truncated_dtype(load: Instruction) -> DType | None:
    """The dtype a loader's value is down-cast to: that of its sole user when that user is a cast
    to a narrower float (decision P7); None otherwise."""
    result = load.result
    if result is None or not result.has_single_user:
        return None
    (user,) = result.users
    if not (isinstance(user, UnaryOp) and user.is_cast and user.data is result):
        return None
    dt = user.dtype
    if dt is None or not (dt.is_float and result.dtype.is_float and dt.bits < result.dtype.bits):
        return None
    return dt


@dataclass(frozen=True)
class AutoCastTCInputs(AutoCastFP32):
    """matmul(s, m) → matmul(cast(s, T(s)), cast(m, T(m))) with T = target.getMatmultOperandType;
    then an SBUF tensor whose only loader is down-cast is stored narrow."""

    name: ClassVar[str] = "auto-cast-tc-inputs"
    #: CLASS-level byte counter (spec 000 §6 NOTE): cumulative across every instance
    tensor_shrink: ClassVar[int] = 0

    def before_stmt_transform(self, f: Function, run: AutoCastRun | None = None) -> bool:
        """The matmult-* modes do not drive the base boundary casts (spec 000 §1)."""
        return False

    def decide(self, inst: Instruction, run: AutoCastRun) -> Verdict:
        """Only TensorContractOps are transformed (spec 000 §4)."""
        return contract_verdict(inst)

    def apply_other(self, inst: Instruction, verdict: Verdict, run: AutoCastRun) -> bool:
        """``contract``: cast the matmul's operands."""
        assert isinstance(inst, TensorContractOp) and verdict.action == "contract"
        return self.transform_tensor_contract_op(inst, run)

    # -- spec 000 §4 -----------------------------------------------------------------------------------
    def transform_tensor_contract_op(self, tc: TensorContractOp,
                                     run: AutoCastRun | None = None) -> bool:
        """Cast the stationary (operands[0]) then the moving (operands[1]) operand."""
        rw = (run or self.new_run()).rewriter
        transpose = is_matmult_transpose(tc)
        stationary = tc.operands[0]
        assert isinstance(stationary, Value)
        changed = self.cast_tc_operand(stationary, rw, transpose=transpose)
        # re-read operands[1]: when stationary is moving, the first call already rewired it
        moving = tc.operands[1]
        assert isinstance(moving, Value)
        changed |= self.cast_tc_operand(moving, rw, transpose=transpose)
        if self.provenance is not None and tc.dtype is not None:
            self._note(tc, "", f"its operands are cast (spec 000 §4); the result stays "
                       f"{tc.dtype.name} (PSUM)")
        return changed

    def cast_tc_operand(self, v: Value, rewriter: Rewriter | None = None,
                        transpose: bool = False) -> bool:
        """Ask the target for the legal operand dtype; cast and rewire only when it differs."""
        target = self.target.get_matmult_operand_type(v.dtype, transpose=transpose)
        if v.dtype == target:
            if self.provenance is not None:
                self._note(v, "castTCOperand", f"matmul operand already {target.name} "
                           "(getMatmultOperandType)")
            return False  # already legal — no cast
        rw = rewriter or Rewriter()
        cast = make_cast(v, target, function=v.owner.function if v.owner else None)
        rw.insert_after_definition(cast, v)  # inserted right after v's definition
        # rewire users, exclude the cast; a bitcast keeps reading v's bits (decision L25)
        keep = [u for u in v.users if isinstance(u, UnaryOp) and u.reinterpret]
        rw.replace_all_uses(v, cast, except_=[cast, *keep])
        if self.provenance is not None:
            self._note(cast, "castTCOperand", f"matmul operand cast to {target.name} "
                       "(getMatmultOperandType, spec 000 §4)")
        return True

    # -- spec 000 §6 -----------------------------------------------------------------------------------
    def after_stmt_transform(self, f: Function, run: AutoCastRun | None = None) -> bool:
        """Visit EVERY tensor (eager, no short-circuit), then drop dead tensors."""
        rw = (run or self.new_run()).rewriter
        results = [self.shrink_tensor(t, rw) for t in f.ordered_all_tensors]
        f.drop_dead_tensors()
        return any(results)

    def shrink_tensor(self, tensor: Tensor, rewriter: Rewriter | None = None) -> bool:
        """Decide (the guard chain, :func:`.autocast_rules.shrink_verdict`), then narrow."""
        verdict = shrink_verdict(tensor, truncated_dtype)
        if not verdict.applies:
            record(self.provenance, tensor, self.name, verdict)
            return False
        (ld,) = frozenset(tensor.load_insts)
        narrow_dt = truncated_dtype(ld)
        assert narrow_dt is not None
        self._narrow(tensor, ld, narrow_dt, rewriter or Rewriter())
        if self.provenance is not None:
            record(self.provenance, tensor, self.name, verdict)
            self._note(ld, "shrinkTensor", f"the loaded tensor is stored {narrow_dt.name}; the "
                       "down-cast is gone (spec 000 §6)")
        return True

    def _narrow(self, tensor: Tensor, ld: Instruction, narrow_dt: DType, rw: Rewriter) -> None:
        AutoCastTCInputs.tensor_shrink += tensor.size_in_bytes  # class attr, before narrowing
        tensor.mutate_tensor_ty(narrow_dt)  # writers now convert on store
        (cast,) = ld.result.users  # type: ignore[union-attr]
        ld.mutate_dst_ty(narrow_dt)  # the load reads the narrow bytes
        rw.replace_and_erase(cast, ld.result)  # the down-cast is now an identity


register_stats(AutoCastTCInputs, {"tensor_shrink": "Tensor shrink for matmult down-cast (in bytes"})
