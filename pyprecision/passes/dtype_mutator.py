"""DTypeMutator (spec 002): absorb a cast into its producer by retyping the producer's dst in place;
constant weights are re-encoded at compile time instead."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyprecision.ir import (
    Function,
    Instruction,
    Module,
    NeuronAP,
    NeuronInst,
    SBAtomLoad,
    TensorScalarGEPOp,
    UnaryOp,
    Value,
    as_dtype,
    bfloat16,
    float8_e5m2,
    float16,
    float32r,
)
from pyprecision.passes.auto_cast_fp32 import functions_of
from pyprecision.passes.statistics import register_stats
from pyprecision.passes.target import Target
from pyprecision.passes.weights import static_cast_load_tensor


class MutateState(enum.Enum):
    """The three-valued result of matchOrMutateDstTy."""

    Match = "match"  # already the requested dtype
    Mutated = "mutated"  # dst retyped in place
    Mismatch = "mismatch"  # blocked here: the cast must stay

    @property
    def mismatch(self) -> bool:
        """Blocked."""
        return self is MutateState.Mismatch

    @property
    def mutated(self) -> bool:
        """The dst was retyped."""
        return self is MutateState.Mutated

    @property
    def match_or_mutated(self) -> bool:
        """The dtype is satisfiable here (state in {Match, Mutated})."""
        return self is not MutateState.Mismatch


@dataclass(frozen=True)
class DTypeMutator:
    """``%y = cast (op …) : D`` with op's dst used only by the cast → op retyped to D (the cast
    becomes an identity for cast-elimination); weights cast at compile time.

    Options: ``target`` (``enable_dma_cast``) and ``mutate_multi_users`` (gate 7).
    """

    name: ClassVar[str] = "dtype-mutator"
    # class-level Statistics counters (spec 002 :124, :75, :79 and mutateLoad)
    operator_type_mutated: ClassVar[int] = 0
    n_loads: ClassVar[int] = 0
    casted_weights: ClassVar[int] = 0
    folded_cast_load: ClassVar[int] = 0

    target: Target = field(default_factory=Target)
    mutate_multi_users: bool = False
    f: Function | None = field(default=None, compare=False)
    tensor_map: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _single_load: set[int] | None = field(default=None, init=False, repr=False, compare=False)

    # -- lifecycle (spec 002 :48, :51) ---------------------------------------------------------------
    def reset(self) -> None:
        """Discard the weight-cast memo."""
        self.tensor_map.clear()

    def set_function(self, f: Function) -> None:
        """Re-point the pass at another function (no state re-allocation)."""
        object.__setattr__(self, "f", f)

    # -- driver (decision P10) -------------------------------------------------------------------
    def run(self, unit: Module | Function) -> bool:
        """For every cast whose source is an instruction's dst, try to absorb the cast into it."""
        changed = False
        for f in functions_of(unit):
            self.set_function(f)
            self.reset()
            changed |= self.run_on_function(f)
        return changed

    def run_on_function(self, f: Function) -> bool:
        """Walk the casts in program order; drop the weights the const-fold orphaned."""
        changed = False
        # which const tensors have exactly one reader, counted once (keeps the walk linear)
        single = {id(t) for t in f.tensors if t.is_const and t.n_loads == 1}
        object.__setattr__(self, "_single_load", single)
        for inst in list(f.instructions()):
            if not (isinstance(inst, UnaryOp) and inst.is_cast and inst.parent is not None):
                continue
            data = inst.data
            if not isinstance(data, Value) or data.owner is None:
                continue
            if data.dtype == inst.dtype:
                continue  # an identity cast: cast-elimination's job
            if not (data.dtype.is_float and inst.dtype is not None and inst.dtype.is_float):
                continue  # only float→float casts can be absorbed (decision P10)
            state = self.match_or_mutate_dst_ty(operand=data.owner, dtype=inst.dtype)
            changed |= state.mutated
        for original in {key[0] for key in self.tensor_map}:
            if not original.accesses and f.has_tensor(original.name):
                f.remove_tensor(original)  # replaced by its casted clone everywhere
        object.__setattr__(self, "_single_load", None)
        return changed

    # -- spec 002 :162 -----------------------------------------------------------------------------
    def try_mutate_dst_ty(self, operand: Any, dtype: Any) -> bool:
        """True iff Match or Mutated."""
        result = self.match_or_mutate_dst_ty(operand=operand, dtype=dtype)
        return not result.mismatch

    # -- spec 002 :81 — the eight gates, in execution order -------------------------------------------
    def match_or_mutate_dst_ty(self, operand: Any, dtype: Any) -> MutateState:
        """May the dst of ``operand`` be retyped to ``dtype``? Mutates when every gate passes."""
        dtype = as_dtype(dtype)
        if operand.dtype == dtype:  # GATE 1 (:82) already equal
            return MutateState.Match
        if isinstance(operand, NeuronAP) and operand.reinterpret:  # GATE 2 (:85-86)
            return MutateState.Mismatch
        if not isinstance(operand, NeuronInst) and _sole_gep_producer_rejects(operand, dtype):
            return MutateState.Mismatch  # GATE 3 (:88-96) scalar/GEP producer's legal set
        dst = getattr(operand, "dst", None)  # (:101)
        if dst is None or dst.tensor.n_loads != 1:  # GATE 4 (:101/:107) exactly one load
            return MutateState.Mismatch
        if operand.reinterpret:  # GATE 5 (:110)
            return MutateState.Mismatch
        if isinstance(operand, SBAtomLoad):  # GATE 6 (:113) load-specialized path
            return self.mutate_load(operand, dtype)
        if not operand.has_single_user and not self.mutate_multi_users:  # GATE 7 (:104)
            return MutateState.Mismatch
        if not operand.canMutateDstTy:  # GATE 8 (:117) a PROPERTY, not a method
            return MutateState.Mismatch
        operand.dtype = dtype  # (:120)
        operand.dst.mutateTensorTy(dtype)  # (:122)
        DTypeMutator.operator_type_mutated += 1  # (:124) class-level counter
        return MutateState.Mutated

    # -- spec 002 :127 ----------------------------------------------------------------------------
    def mutate_load(self, load: SBAtomLoad, dtype: Any) -> MutateState:
        """DMA-carries-the-cast vs const-fold. ``self.dtype`` of the seed is read as the load's
        dtype at :131 and as the requested dtype at :146 (decision P11)."""
        dtype = as_dtype(dtype)
        if (load.has_partition_broadcast and dtype == float16  # :130
                and (load.dtype == bfloat16 or load.dtype == float32r)):  # :131
            return MutateState.Mismatch
        if dtype == float8_e5m2:  # :136 unsupported target for a load
            return MutateState.Mismatch
        if load.load_const:  # :141 CONSTANT (weight) load
            if load.src.reinterpret:  # :143
                return MutateState.Mismatch
            if load.tensor.dtype == dtype:  # :146 already target dtype
                return MutateState.Match
            self.static_cast_load_tensor(load, dtype)  # :149 weight const-fold
            return MutateState.Mutated
        if not self.target.enable_dma_cast:  # :152 THE SWITCH
            return MutateState.Mismatch
        if load.dst is not None:  # :155
            load.dst.mutateTensorTy(dtype)  # :156 the DMA carries the cast
        else:
            load.dtype = dtype  # :158
        DTypeMutator.n_loads += 1
        return MutateState.Mutated

    # -- spec 002 :54 -----------------------------------------------------------------------------
    def static_cast_load_tensor(self, load: Instruction, dtype: Any) -> None:
        """Re-encode the weight once (memoized in ``tensor_map``) and point the load at it."""
        assert self.f is not None or load.function is not None
        f = self.f if self.f is not None else load.function
        single = self._single_load
        casted = static_cast_load_tensor(
            load, as_dtype(dtype), f, self.tensor_map,  # type: ignore[arg-type]
            None if single is None else (lambda t: id(t) in single),
        )
        if casted:
            DTypeMutator.casted_weights += casted
        DTypeMutator.folded_cast_load += 1  # :79


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


register_stats(DTypeMutator, {
    "operator_type_mutated": "Number of operator whose dst type is mutated for legalization",
    "n_loads": "Number of load whose tensor type mutated",
    "casted_weights": "Number of bytes statically casted in weight tensor",
    "folded_cast_load": "Number of load whose cast is folded into the weight",
})
