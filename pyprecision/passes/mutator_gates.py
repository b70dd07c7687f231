"""DTypeMutator's decisions as pure functions (spec 002): the eight gates of matchOrMutateDstTy and
mutateLoad's sub-gates, one guard per line in the spec's order. Nothing here changes the IR: each
function returns a :class:`~pyprecision.passes.provenance.Verdict` whose ``action`` the pass
applies (``retype`` the dst, let the ``dma-cast`` carry the cast, or ``const-fold`` the weight).
"""
from __future__ import annotations

from typing import Any

from pyprecision.ir import (
    NeuronAP,
    NeuronInst,
    SBAtomLoad,
    TensorContractOp,
    TensorScalarGEPOp,
    UnaryOp,
    Value,
    as_dtype,
    bfloat16,
    float8_e5m2,
    float16,
    float32r,
)
from pyprecision.passes.provenance import Verdict

__all__ = ["MATCH", "MISMATCH", "MUTATED", "absorb_verdict", "match_or_mutate_verdict",
           "mutate_load_verdict"]

MATCH, MUTATED, MISMATCH = "match", "mutated", "mismatch"


def absorb_verdict(cast: Any) -> Verdict | None:
    """The driver's filter (decision P10): None when ``cast`` is not DTypeMutator's business (not a
    placed cast of an instruction's result, or an identity cast, cast-elimination's job); a
    ``driver`` skip for a cast that is not float→float; else an ``apply`` verdict."""
    if not (isinstance(cast, UnaryOp) and cast.is_cast and cast.parent is not None):
        return None
    data = cast.data
    if not isinstance(data, Value) or data.owner is None:
        return None
    if data.dtype == cast.dtype:
        return None  # an identity cast: cast-elimination's job
    if not (data.dtype.is_float and cast.dtype is not None and cast.dtype.is_float):
        return Verdict("skip", "driver", "not a float→float cast: never absorbed (decision P10)")
    return Verdict("apply", "driver", "a float→float cast of an instruction's result", "absorb")


def match_or_mutate_verdict(operand: Any, dtype: Any, *, mutate_multi_users: bool,
                            enable_dma_cast: bool) -> Verdict:
    """matchOrMutateDstTy (spec 002 :81): may the dst of ``operand`` be retyped to ``dtype``?"""
    dtype = as_dtype(dtype)
    if operand.dtype == dtype:  # GATE 1 (:82) already equal
        return Verdict(MATCH, "gate 1", f"already {dtype.name}")
    if isinstance(operand, NeuronAP) and operand.reinterpret:  # GATE 2 (:85-86)
        return Verdict(MISMATCH, "gate 2", "reinterpreted access pattern")
    if not isinstance(operand, NeuronInst) and _sole_gep_producer_rejects(operand, dtype):  # GATE 3
        return Verdict(MISMATCH, "gate 3", f"GEP producer does not allow {dtype.name}")  # (:88-96)
    dst = getattr(operand, "dst", None)  # (:101)
    if dst is None or dst.tensor.n_loads != 1:  # GATE 4 (:101/:107) exactly one load
        return Verdict(MISMATCH, "gate 4", "no dst" if dst is None else f"multi-user: dst is read "
                       f"{dst.tensor.n_loads} times, not exactly once")
    if operand.reinterpret:  # GATE 5 (:110)
        return Verdict(MISMATCH, "gate 5", "reinterpreting producer")
    if isinstance(operand, SBAtomLoad):  # GATE 6 (:113) the load-specialized path
        return mutate_load_verdict(operand, dtype, enable_dma_cast=enable_dma_cast)
    if not operand.has_single_user and not mutate_multi_users:  # GATE 7 (:104)
        return Verdict(MISMATCH, "gate 7", "multi-user")
    if not operand.can_mutate_dst_ty:  # GATE 8 (:117) a PROPERTY, not a method
        return Verdict(MISMATCH, "gate 8", f"canMutateDstTy is false ({_why_fixed(operand)})")
    return Verdict(MUTATED, "gate 8", f"retyped to {dtype.name}, the cast absorbed", "retype")


def mutate_load_verdict(load: Any, dtype: Any, *, enable_dma_cast: bool) -> Verdict:
    """mutateLoad (spec 002 :127), gate 6's sub-gates: DMA-carries-the-cast vs const-fold.
    ``self.dtype`` of the seed is read as the load's dtype at :131 and as the requested dtype at
    :146 (decision P11)."""
    dtype = as_dtype(dtype)
    if (load.has_partition_broadcast and dtype == float16  # :130
            and (load.dtype == bfloat16 or load.dtype == float32r)):  # :131
        return Verdict(MISMATCH, "gate 6", f"mutateLoad: broadcast {load.dtype.name} load cannot "
                       "become fp16 (:130)")
    if dtype == float8_e5m2:  # :136 unsupported target for a load
        return Verdict(MISMATCH, "gate 6", "mutateLoad: fp8 e5m2 is not a load target (:136)")
    if load.load_const:  # :141 CONSTANT (weight) load
        if load.src.reinterpret:  # :143
            return Verdict(MISMATCH, "gate 6", "mutateLoad: reinterpreted weight (:143)")
        if load.tensor.dtype == dtype:  # :146 already the target dtype
            return Verdict(MATCH, "gate 6", f"mutateLoad: weight already {dtype.name} (:146)")
        return Verdict(MUTATED, "gate 6", f"mutateLoad: weight const-folded to {dtype.name} "
                       "(staticCastLoadTensor, :149)", "const-fold")  # :149
    if not enable_dma_cast:  # :152 THE SWITCH
        return Verdict(MISMATCH, "gate 6", "mutateLoad: the target has no DMA cast "
                       "(enable_dma_cast=false, :152)")
    return Verdict(MUTATED, "gate 6", f"mutateLoad: the DMA carries the cast to {dtype.name} "
                   "(:156)", "dma-cast")  # :155-:158


def _why_fixed(operand: Any) -> str:
    """Why gate 8 refuses, in words."""
    if isinstance(operand, TensorContractOp):
        return "matmul results live in fp32 PSUM"
    return f"{type(operand).__name__} cannot be retyped"


def _sole_gep_producer_rejects(operand: Any, dtype: Any) -> bool:
    """Gate 3: the operand's tensor has one writer and one reader, the writer is a
    TensorScalarGEPOp, and ``dtype`` is not in the operand's ``allowed_dtypes``."""
    tensor = getattr(operand, "tensor", None)
    if tensor is None or not getattr(tensor, "single_def_single_use", False):
        return False
    stores = getattr(tensor, "store_insts", [])
    if len(stores) != 1 or not isinstance(stores[0], TensorScalarGEPOp):
        return False
    return dtype not in operand.allowed_dtypes
