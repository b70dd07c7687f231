"""AutoCastFP32's decisions as pure functions (spec 000 §3, §5, §6): the skip rules of
transformInstruction, the per-kind rules for loads, stores, memcpys and unary ops, and
shrinkTensor's guard chain, one guard per line in the spec's order. Nothing here changes the IR:
each function returns a :class:`~pyprecision.passes.provenance.Verdict`; the passes apply its
``action``. ``explain`` asks :func:`instruction_verdict` why an op was left alone.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyprecision.ir import (
    CallOpBase,
    DType,
    GenericStore,
    Instruction,
    LoadInst,
    OffloadedMemCpy,
    OpaqueOp,
    SelectOp,
    StoreInst,
    Tensor,
    TensorContractOp,
    TensorScalarGEPOp,
    UnaryOp,
    float32,
)
from pyprecision.passes.provenance import Verdict

__all__ = ["APPLY", "SKIP", "compute_verdict", "contract_verdict", "instruction_verdict",
           "load_verdict", "memcpy_verdict", "shrink_verdict", "store_verdict", "unary_verdict"]

SKIP, APPLY = "skip", "apply"
_P5 = "only fp32 is narrowed (decision P5)"


def _skip(rule: str, reason: str) -> Verdict:
    return Verdict(SKIP, rule, reason)


def _is_integer(dtype: Any) -> bool:
    return dtype is not None and dtype.is_integer


def _never(tensor: Tensor) -> bool:
    return False


def instruction_verdict(inst: Instruction, dtype: DType,
                        on_call_edge: Callable[[Tensor], bool] = _never) -> Verdict:
    """transformInstruction (spec 000 §3) for AutoCastFP32 narrowing to ``dtype``: the skip rules
    in order, then the rule of the op's kind (``on_call_edge``: the run's all-fp32r call edges)."""
    if isinstance(inst, (OpaqueOp, CallOpBase)):  # SKIP-RULE 1: the boundary owns their I/O
        return _skip("skip rule 1", "opaque/call ops are not transformed")
    if isinstance(inst, LoadInst):
        return load_verdict(inst, dtype)
    if isinstance(inst, (StoreInst, TensorScalarGEPOp)):
        return store_verdict(inst, dtype)
    if isinstance(inst, OffloadedMemCpy):
        return memcpy_verdict(inst, True, on_call_edge(inst.dst.tensor))
    if isinstance(inst, UnaryOp):
        return unary_verdict(inst, dtype)
    return compute_verdict(inst)


def compute_verdict(inst: Instruction) -> Verdict:
    """Binary ops, selects, matmuls: skip rules 2 and 3, then narrow (spec 000 §3)."""
    if _is_integer(inst.dtype):  # SKIP-RULE 2: integer paths short-circuit (decision P4)
        return _skip("skip rule 2", "integer path")
    if isinstance(inst, SelectOp):  # SKIP-RULE 3: a SelectOp keeps its predicate at uint8
        return Verdict(APPLY, "skip rule 3", "the select predicate keeps its dtype", "narrow")
    return Verdict(APPLY, "", "", "narrow")


def load_verdict(inst: LoadInst, dtype: DType) -> Verdict:
    """Spec 000 §5: a load casts its RESULT; a load of memory already narrowed follows it (P3)."""
    if inst.is_reinterpreted:
        return _skip("", "reinterpreted load is never touched")
    if inst.dtype != float32:
        return _skip("", "" if inst.dtype is None else f"already {inst.dtype.name}; {_P5}")
    if inst.src.dtype != float32:
        return Verdict(APPLY, "", f"load of narrowed memory follows it to {dtype.name} "
                       "(decision P3)", "follow")
    return Verdict(APPLY, "", f"inserted, the load casts its result to {dtype.name} "
                   "(spec 000 §5)", "cast-result")


def store_verdict(inst: StoreInst | TensorScalarGEPOp, dtype: DType) -> Verdict:
    """Spec 000 §5: a store into fp32 memory casts its SOURCE (skip rules 4 and 2 first)."""
    if inst.is_reinterpreted:
        return _skip("", "reinterpreted store is never touched")
    if isinstance(inst, GenericStore) and _is_integer(inst.dtype):  # SKIP-RULE 4
        return _skip("skip rule 4", "integer generic store")
    if _is_integer(inst.dtype):  # SKIP-RULE 2
        return _skip("skip rule 2", "integer path")
    if inst.dtype != float32:
        return _skip("", "" if inst.dtype is None else
                     f"destination already {inst.dtype.name}; only fp32 is narrowed")
    if isinstance(inst, TensorScalarGEPOp) and dtype not in inst.allowed_dtypes:
        return _skip("", f"{dtype.name} is not in the GEP's allowed_dtypes")
    return Verdict(APPLY, "", f"inserted, the store casts its source to {dtype.name} "
                   "(spec 000 §5)", "cast-source")


def memcpy_verdict(inst: OffloadedMemCpy, source_ok: bool = True,
                   on_call_edge: bool = False) -> Verdict:
    """An fp32 → fp32 DMA copy lands narrowed (its destination is narrowed) unless reinterpreted,
    its source is not one that arrives narrowed (``source_ok``), it writes a boundary or
    call-edge tensor, or its destination is not fp32 (decision P5)."""
    if inst.is_reinterpreted or not source_ok:
        return _skip("", "memcpy left alone (reinterpreted, or its source is not narrowed)")
    if inst.dst.tensor.is_input_or_output or on_call_edge:
        return _skip("", "memcpy into a boundary/call-edge tensor left alone")
    if inst.dst.tensor.dtype is not float32:  # decision P5
        return _skip("", f"already {inst.dst.tensor.dtype.name}; {_P5}")
    return Verdict(APPLY, "", "@{name} lands narrowed to {dtype}: the DMA carries the cast",
                   "narrow-destination")


def unary_verdict(op: UnaryOp, dtype: DType) -> Verdict:
    """transformUnaryOp (spec 000 §5 GOTCHA): a cast whose source already has the (narrowed)
    target dtype is folded; a cast to fp32 retargets to ``dtype``; bitcasts are never touched,
    but one whose float operand arrives narrowed gets it widened back to float32 (decision L25);
    other unary ops narrow like compute."""
    if op.reinterpret:
        d, r = op.data.dtype, op.dtype
        if d.is_float and d is not float32 and r is not None and r.bits == 32 and d.bits != 32:
            return Verdict(APPLY, "", f"the bitcast reads its operand at 32 bits: the {d.name} "
                           "value widened back to float32 first (decision L25)", "widen-operand")
        return _skip("", "bitcasts are never touched")
    if not op.is_cast:
        return compute_verdict(op)
    target = dtype if op.dtype is float32 else op.dtype  # what the cast targets after narrowing
    if op.data.dtype is target:
        return Verdict(APPLY, "", "redundant cast folded (transformUnaryOp, spec 000 §5 GOTCHA)",
                       "fold")
    if op.dtype is float32:
        return Verdict(APPLY, "", f"a cast to fp32 now targets {dtype.name} (transformUnaryOp)",
                       "retarget")
    return _skip("", "")


def shrink_verdict(tensor: Tensor, truncated: Any) -> Verdict:
    """shrinkTensor (spec 000 §6, guard order CONFIRMED): may ``tensor`` be stored at its only
    loader's down-cast dtype? ``truncated(loader)`` is that dtype or None (decision P7)."""
    for op in tensor.load_insts:
        if isinstance(op, (OpaqueOp, CallOpBase)):
            return _skip("shrinkTensor guard 1", "opaque/call reader: cannot rewrite")
    for op in tensor.store_insts:
        if isinstance(op, (OpaqueOp, CallOpBase)):
            return _skip("shrinkTensor guard 2", "opaque/call writer: cannot rewrite")
    if not tensor.are_all_dim_affine:
        return _skip("shrinkTensor guard 3", "non-affine access")
    if tensor.n_loads != 1:  # expected exactly one (decision P7)
        return _skip("shrinkTensor guard 4", f"read {tensor.n_loads} times, not exactly once")
    if tensor.is_input_or_output:
        return _skip("shrinkTensor guard 5", "boundary tensor")
    if tensor.is_const:
        return _skip("shrinkTensor guard 6", "constant tensor")
    loaders = frozenset(tensor.load_insts)
    if len(loaders) > 1:
        return _skip("shrinkTensor guard 7", "more than one distinct loader")
    (ld,) = loaders
    narrow_dt = truncated(ld)
    if narrow_dt is None:
        return _skip("shrinkTensor guard 8", "the loader is not down-cast (decision P7)")
    if ld.dtype == narrow_dt:
        return _skip("shrinkTensor guard 9", "already narrow")
    if ld.is_reinterpreted:
        return _skip("shrinkTensor guard 10", "reinterpreted view")
    if not all(isinstance(op, (StoreInst, OffloadedMemCpy)) for op in tensor.store_insts):
        return _skip("shrinkTensor guard 11", "a computing writer would round differently "
                     "(decision P7)")
    return Verdict(APPLY, "shrinkTensor", f"@{tensor.name} is stored {narrow_dt.name}: its only "
                   "loader was down-cast (spec 000 §6)", "shrink")


def contract_verdict(inst: Instruction) -> Verdict:
    """AutoCastTCInputs transforms only TensorContractOps (spec 000 §4)."""
    if isinstance(inst, TensorContractOp):
        return Verdict(APPLY, "", "", "contract")
    return _skip("", "only matmul operands are cast (spec 000 §4)")
