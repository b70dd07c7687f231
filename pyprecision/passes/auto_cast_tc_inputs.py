"""AutoCastTCInputs (spec 000 §4, §6): matmul operands cast to the target's legal dtype, then the
backing SBUF tensors physically shrunk."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pyprecision.ir import (
    CallOpBase,
    DType,
    Function,
    Instruction,
    IRBuilder,
    LoadInst,
    OffloadedMemCpy,
    OpaqueOp,
    SingleValueTensor,
    StoreInst,
    Tensor,
    TensorContractOp,
    UnaryOp,
    Value,
)
from pyprecision.passes.auto_cast_fp32 import AutoCastFP32
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
    value = np.asarray(tensor.value).astype(np.float64)
    return value.ndim == 2 and value.shape[0] == value.shape[1] and bool(
        np.array_equal(value, np.eye(value.shape[0]))
    )


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

    def before_stmt_transform(self, f: Function) -> bool:
        """The matmult-* modes do not drive the base boundary casts (spec 000 §1)."""
        return False

    def transform_instruction(self, inst: Instruction) -> bool:
        """Only TensorContractOps are transformed."""
        if isinstance(inst, TensorContractOp):
            return self.transform_tensor_contract_op(inst)
        self._note(inst, "", "only matmul operands are cast (spec 000 §4)")
        return False

    # -- spec 000 §4 -----------------------------------------------------------------------------------
    def transform_tensor_contract_op(self, tc: TensorContractOp) -> bool:
        """Cast the stationary (operands[0]) then the moving (operands[1]) operand."""
        builder = IRBuilder(function=tc.function)
        transpose = is_matmult_transpose(tc)
        stationary = tc.operands[0]
        assert isinstance(stationary, Value)
        changed = self.cast_tc_operand(stationary, builder=builder, transpose=transpose)
        # re-read operands[1]: when stationary is moving, the first call already rewired it
        moving = tc.operands[1]
        assert isinstance(moving, Value)
        changed |= self.cast_tc_operand(moving, builder=builder, transpose=transpose)
        if self.provenance is not None and tc.dtype is not None:
            self._note(tc, "", f"its operands are cast (spec 000 §4); the result stays "
                       f"{tc.dtype.name} (PSUM)")
        return changed

    def cast_tc_operand(self, v: Value, builder: IRBuilder, transpose: bool = False) -> bool:
        """Ask the target for the legal operand dtype; cast and rewire only when it differs."""
        target = self.target.getMatmultOperandType(v.dtype, transpose=transpose)
        if v.dtype == target:
            if self.provenance is not None:
                self._note(v, "castTCOperand", f"matmul operand already {target.name} "
                           "(getMatmultOperandType)")
            return False  # already legal — no cast
        cast = builder.cast_to(v, target)  # inserted right after v's definition
        cast.allocateId()
        v.replaceAllUsesWithExcept(cast, cast)  # rewire users, exclude the cast
        if self.provenance is not None:
            self._note(cast, "castTCOperand", f"matmul operand cast to {target.name} "
                       "(getMatmultOperandType, spec 000 §4)")
        return True

    # -- spec 000 §6 -----------------------------------------------------------------------------------
    def after_stmt_transform(self, f: Function) -> bool:
        """Visit EVERY tensor (eager, no short-circuit), then drop dead tensors."""
        results = [self.shrink_tensor(t) for t in f.ordered_all_tensors]
        f.dropDeadTensors()
        return any(results)

    def shrink_tensor(self, tensor: Tensor) -> bool:
        """The guard chain of spec 000 §6, one guard per line, then the physical narrowing."""
        for op in tensor.load_insts:
            if isinstance(op, (OpaqueOp, CallOpBase)):
                return self._guard(tensor, 1, "opaque/call reader: cannot rewrite")
        for op in tensor.store_insts:
            if isinstance(op, (OpaqueOp, CallOpBase)):
                return self._guard(tensor, 2, "opaque/call writer: cannot rewrite")
        if not tensor.are_all_dim_affine:
            return self._guard(tensor, 3, "non-affine access")
        if tensor.n_loads != 1:  # expected exactly one (decision P7)
            return self._guard(tensor, 4, "read {} times, not exactly once", tensor.n_loads)
        if tensor.isInputOrOutput:
            return self._guard(tensor, 5, "boundary tensor")
        if tensor.is_const:
            return self._guard(tensor, 6, "constant tensor")
        loaders = frozenset(tensor.load_insts)
        if len(loaders) > 1:
            return self._guard(tensor, 7, "more than one distinct loader")
        (ld,) = loaders
        narrow_dt = truncated_dtype(ld)
        if narrow_dt is None:
            return self._guard(tensor, 8, "the loader is not down-cast (decision P7)")
        if ld.dtype == narrow_dt:
            return self._guard(tensor, 9, "already narrow")
        if ld.is_reinterpreted:
            return self._guard(tensor, 10, "reinterpreted view")
        if not all(isinstance(op, (StoreInst, OffloadedMemCpy)) for op in tensor.store_insts):
            return self._guard(tensor, 11, "a computing writer would round differently "
                               "(decision P7)")
        self._narrow(tensor, ld, narrow_dt)
        if self.provenance is not None:
            self._note(tensor, "shrinkTensor", f"@{tensor.name} is stored {narrow_dt.name}: its "
                       "only loader was down-cast (spec 000 §6)")
            self._note(ld, "shrinkTensor", f"the loaded tensor is stored {narrow_dt.name}; the "
                       "down-cast is gone (spec 000 §6)")
        return True

    def _guard(self, tensor: Tensor, n: int, why: str, *args: object) -> bool:
        """A failed shrinkTensor guard (numbered in the chain's order): record it (``why``
        formatted with ``args``), return False."""
        if self.provenance is not None:
            self._note(tensor, f"shrinkTensor guard {n}", why.format(*args))
        return False

    def _narrow(self, tensor: Tensor, ld: Instruction, narrow_dt: DType) -> None:
        AutoCastTCInputs.tensor_shrink += tensor.size_in_bytes  # class attr, before narrowing
        tensor.mutateTensorTy(narrow_dt)  # writers now convert on store
        (cast,) = ld.result.users  # type: ignore[union-attr]
        ld.mutate_dst_ty(narrow_dt)  # the load reads the narrow bytes
        cast.replaceAllUsesWith(ld.result)  # the down-cast is now an identity
        cast.eraseFromParent()


register_stats(AutoCastTCInputs, {"tensor_shrink": "Tensor shrink for matmult down-cast (in bytes"})
