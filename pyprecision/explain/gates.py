"""Read-only re-evaluation of the decisions the passes make, to say *why* an op got its dtype.

``explain`` takes its reasons from the passes' provenance log (``pyprecision.passes.provenance``);
this module is the fallback and the cross-check: it re-evaluates the documented rules on the program
as it is: DTypeMutator's eight gates of ``matchOrMutateDstTy`` (spec 002 :81, with mutateLoad's
sub-gates, :127) and AutoCastFP32's skip rules (spec 000 §3), in the passes' order. Nothing here
mutates the IR. ``explain`` uses only :func:`autocast_skip_reason`, for an unchanged op no pass
logged anything about; tests check :func:`mutator_verdict` against the log.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyprecision.ir import (
    CallOpBase,
    GenericStore,
    NeuronAP,
    NeuronInst,
    OpaqueOp,
    SBAtomLoad,
    TensorContractOp,
    TensorScalarGEPOp,
    UnaryOp,
    Value,
    as_dtype,
    bfloat16,
    float8_e5m2,
    float16,
    float32,
    float32r,
)

__all__ = ["GateVerdict", "autocast_skip_reason", "mutator_casts", "mutator_verdict"]


@dataclass(frozen=True)
class GateVerdict:
    """The outcome of matchOrMutateDstTy for one producer: ``state`` (match, mutated, mismatch),
    the ``gate`` that decided (1-8; 6 covers mutateLoad) and a short ``reason``."""

    state: str
    gate: int
    reason: str

    def text(self) -> str:
        """E.g. ``DTypeMutator gate 7: multi-user``."""
        if self.state == "mutated" and self.gate == 8:
            return f"DTypeMutator (all eight gates passed): {self.reason}"
        return f"DTypeMutator gate {self.gate}: {self.reason}"


def mutator_casts(f: Any) -> list[UnaryOp]:
    """The casts DTypeMutator tries to absorb, in program order (its driver's filter)."""
    out = []
    for inst in f.instructions():
        if not (isinstance(inst, UnaryOp) and inst.is_cast and inst.parent is not None):
            continue
        data = inst.data
        if not isinstance(data, Value) or data.owner is None or data.dtype == inst.dtype:
            continue
        if data.dtype.is_float and inst.dtype is not None and inst.dtype.is_float:
            out.append(inst)
    return out


def mutator_verdict(operand: Any, dtype: Any, enable_dma_cast: bool,
                    mutate_multi_users: bool = False) -> GateVerdict:
    """matchOrMutateDstTy's gates in execution order, without mutating anything."""
    dtype = as_dtype(dtype)
    if operand.dtype == dtype:  # GATE 1
        return GateVerdict("match", 1, f"already {dtype.name}")
    if isinstance(operand, NeuronAP) and operand.reinterpret:  # GATE 2
        return GateVerdict("mismatch", 2, "reinterpreted access pattern")
    if not isinstance(operand, NeuronInst) and _gep_rejects(operand, dtype):  # GATE 3
        return GateVerdict("mismatch", 3, f"GEP producer does not allow {dtype.name}")
    dst = getattr(operand, "dst", None)
    if dst is None or dst.tensor.n_loads != 1:  # GATE 4
        n = 0 if dst is None else dst.tensor.n_loads
        return GateVerdict("mismatch", 4, f"multi-user: dst is read {n} times, not exactly once")
    if operand.reinterpret:  # GATE 5
        return GateVerdict("mismatch", 5, "reinterpreting producer")
    if isinstance(operand, SBAtomLoad):  # GATE 6
        return _load_verdict(operand, dtype, enable_dma_cast)
    if not operand.has_single_user and not mutate_multi_users:  # GATE 7
        return GateVerdict("mismatch", 7, "multi-user")
    if not operand.canMutateDstTy:  # GATE 8
        why = ("matmul results live in fp32 PSUM" if isinstance(operand, TensorContractOp)
               else f"{type(operand).__name__} cannot be retyped")
        return GateVerdict("mismatch", 8, f"canMutateDstTy is false ({why})")
    return GateVerdict("mutated", 8, f"retyped to {dtype.name}, the cast absorbed")


def _load_verdict(load: Any, dtype: Any, enable_dma_cast: bool) -> GateVerdict:
    """mutateLoad (spec 002 :127) as gate 6's sub-gates."""
    if load.has_partition_broadcast and dtype == float16 and load.dtype in (bfloat16, float32r):
        return GateVerdict("mismatch", 6, f"mutateLoad: broadcast {load.dtype.name} load cannot "
                           "become fp16 (:130)")
    if dtype == float8_e5m2:
        return GateVerdict("mismatch", 6, "mutateLoad: fp8 e5m2 is not a load target (:136)")
    if load.load_const:
        if load.src.reinterpret:
            return GateVerdict("mismatch", 6, "mutateLoad: reinterpreted weight (:143)")
        if load.tensor.dtype == dtype:
            return GateVerdict("match", 6, f"mutateLoad: weight already {dtype.name} (:146)")
        return GateVerdict("mutated", 6, f"mutateLoad: weight const-folded to {dtype.name} "
                           "(staticCastLoadTensor, :149)")
    if not enable_dma_cast:
        return GateVerdict("mismatch", 6, "mutateLoad: the target has no DMA cast "
                           "(enable_dma_cast=false, :152)")
    return GateVerdict("mutated", 6, f"mutateLoad: the DMA carries the cast to {dtype.name} (:156)")


def _gep_rejects(operand: Any, dtype: Any) -> bool:
    tensor = getattr(operand, "tensor", None)
    if tensor is None or not getattr(tensor, "single_def_single_use", False):
        return False
    stores = getattr(tensor, "store_insts", [])
    if len(stores) != 1 or not isinstance(stores[0], TensorScalarGEPOp):
        return False
    return dtype not in operand.allowed_dtypes


def autocast_skip_reason(inst: Any) -> str | None:
    """Why AutoCastFP32 leaves ``inst``'s dtype alone (spec 000 §3 skip rules), or None when it
    would narrow it."""
    if isinstance(inst, (OpaqueOp, CallOpBase)):
        return "AutoCastFP32 skip rule 1: opaque/call ops are not transformed"
    if getattr(inst, "is_reinterpreted", False) or getattr(inst, "reinterpret", None):
        return "AutoCastFP32: reinterpreted/bitcast ops are never touched"
    dt = inst.dtype
    if dt is not None and dt.is_integer:
        if isinstance(inst, GenericStore):
            return "AutoCastFP32 skip rule 4: integer generic store"
        return "AutoCastFP32 skip rule 2: integer path"
    if dt is not None and dt is not float32:
        return f"AutoCastFP32: already {dt.name}; only fp32 is narrowed (decision P5)"
    return None
