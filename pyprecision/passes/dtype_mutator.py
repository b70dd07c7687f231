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
from pyprecision.passes.provenance import ProvenanceLog, note
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

    Options: ``target`` (``enable_dma_cast``) and ``mutate_multi_users`` (gate 7; decision P17:
    no effect on the driver's casts in this IR). ``provenance``: None, or a list every gate's
    outcome is appended to (:mod:`.provenance`).
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
    provenance: ProvenanceLog | None = field(default=None, compare=False, repr=False)
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
                note(self.provenance, inst, self.name, "driver", "not a float→float cast: "
                     "never absorbed (decision P10)")
                continue  # only float→float casts can be absorbed (decision P10)
            state = self.match_or_mutate_dst_ty(operand=data.owner, dtype=inst.dtype)
            changed |= state.mutated
            if self.provenance is not None:
                self._note_cast(inst, data.owner, state)
        for original in {key[0] for key in self.tensor_map}:
            if not original.accesses and f.has_tensor(original.name):
                f.remove_tensor(original)  # replaced by its casted clone everywhere
        object.__setattr__(self, "_single_load", None)
        return changed

    def _note_cast(self, cast: Instruction, producer: Instruction, state: MutateState) -> None:
        """Record on the cast what the producer's verdict (the last gate recorded) means for it."""
        assert self.provenance is not None
        last = self.provenance[-1] if self.provenance else None
        why = f" ({last.rule}: {last.message})" if last is not None else ""
        if state.mismatch:
            note(self.provenance, cast, self.name, "kept",
                 f"cannot absorb it into {_name(producer)}{why}")
        else:
            note(self.provenance, cast, self.name, "absorbed",
                 f"{_name(producer)} now produces {cast.dtype.name if cast.dtype else '?'}; "
                 "the cast is an identity")

    def _gate(self, operand: Any, state: MutateState, gate: int, reason: str) -> MutateState:
        """Record one gate's outcome (when provenance is on) and return ``state``."""
        note(self.provenance, operand, self.name, f"gate {gate}", reason, state.value)
        return state

    # -- spec 002 :162 -----------------------------------------------------------------------------
    def try_mutate_dst_ty(self, operand: Any, dtype: Any) -> bool:
        """True iff Match or Mutated."""
        result = self.match_or_mutate_dst_ty(operand=operand, dtype=dtype)
        return not result.mismatch

    # -- spec 002 :81 — the eight gates, in execution order -------------------------------------------
    def match_or_mutate_dst_ty(self, operand: Any, dtype: Any) -> MutateState:
        """May the dst of ``operand`` be retyped to ``dtype``? Mutates when every gate passes."""
        dtype = as_dtype(dtype)
        match, mismatch, log = MutateState.Match, MutateState.Mismatch, self.provenance is not None
        if operand.dtype == dtype:  # GATE 1 (:82) already equal
            return self._gate(operand, match, 1, f"already {dtype.name}") if log else match
        if isinstance(operand, NeuronAP) and operand.reinterpret:  # GATE 2 (:85-86)
            return self._gate(operand, mismatch, 2, "reinterpreted access pattern")
        if not isinstance(operand, NeuronInst) and _sole_gep_producer_rejects(operand, dtype):
            # GATE 3 (:88-96) scalar/GEP producer's legal set
            return self._gate(operand, mismatch, 3, f"GEP producer does not allow {dtype.name}"
                              ) if log else mismatch
        dst = getattr(operand, "dst", None)  # (:101)
        if dst is None or dst.tensor.n_loads != 1:  # GATE 4 (:101/:107) exactly one load
            return self._gate(operand, mismatch, 4, "no dst" if dst is None else
                              f"multi-user: dst is read {dst.tensor.n_loads} times, not exactly "
                              "once") if log else mismatch
        if operand.reinterpret:  # GATE 5 (:110)
            return self._gate(operand, mismatch, 5, "reinterpreting producer")
        if isinstance(operand, SBAtomLoad):  # GATE 6 (:113) load-specialized path
            return self.mutate_load(operand, dtype)
        if not operand.has_single_user and not self.mutate_multi_users:  # GATE 7 (:104)
            return self._gate(operand, mismatch, 7, "multi-user")
        if not operand.canMutateDstTy:  # GATE 8 (:117) a PROPERTY, not a method
            return self._gate(operand, mismatch, 8, "canMutateDstTy is false"
                              + (f" ({_why_fixed(operand)})" if log else ""))
        operand.dtype = dtype  # (:120)
        operand.dst.mutateTensorTy(dtype)  # (:122)
        DTypeMutator.operator_type_mutated += 1  # (:124) class-level counter
        if not log:
            return MutateState.Mutated
        return self._gate(operand, MutateState.Mutated, 8, f"retyped to {dtype.name}, the cast "
                          "absorbed")

    # -- spec 002 :127 ----------------------------------------------------------------------------
    def mutate_load(self, load: SBAtomLoad, dtype: Any) -> MutateState:
        """DMA-carries-the-cast vs const-fold. ``self.dtype`` of the seed is read as the load's
        dtype at :131 and as the requested dtype at :146 (decision P11)."""
        dtype = as_dtype(dtype)
        mismatch, mutated = MutateState.Mismatch, MutateState.Mutated
        log = self.provenance is not None  # messages are built only when recording
        if (load.has_partition_broadcast and dtype == float16  # :130
                and (load.dtype == bfloat16 or load.dtype == float32r)):  # :131
            return self._gate(load, mismatch, 6, f"mutateLoad: broadcast {load.dtype.name} load "
                              "cannot become fp16 (:130)") if log else mismatch
        if dtype == float8_e5m2:  # :136 unsupported target for a load
            return self._gate(load, mismatch, 6, "mutateLoad: fp8 e5m2 is not a load target (:136)")
        if load.load_const:  # :141 CONSTANT (weight) load
            if load.src.reinterpret:  # :143
                return self._gate(load, mismatch, 6, "mutateLoad: reinterpreted weight (:143)")
            if load.tensor.dtype == dtype:  # :146 already target dtype
                return self._gate(load, MutateState.Match, 6, f"mutateLoad: weight already "
                                  f"{dtype.name} (:146)") if log else MutateState.Match
            if log:
                self._gate(load, mutated, 6, f"mutateLoad: weight const-folded to {dtype.name} "
                           "(staticCastLoadTensor, :149)")
            self.static_cast_load_tensor(load, dtype)  # :149 weight const-fold
            return mutated
        if not self.target.enable_dma_cast:  # :152 THE SWITCH
            return self._gate(load, mismatch, 6, "mutateLoad: the target has no DMA cast "
                              "(enable_dma_cast=false, :152)")
        if load.dst is not None:  # :155
            load.dst.mutateTensorTy(dtype)  # :156 the DMA carries the cast
        else:
            load.dtype = dtype  # :158
        DTypeMutator.n_loads += 1
        return self._gate(load, mutated, 6, f"mutateLoad: the DMA carries the cast to "
                          f"{dtype.name} (:156)") if log else mutated

    # -- spec 002 :54 -----------------------------------------------------------------------------
    def static_cast_load_tensor(self, load: Instruction, dtype: Any) -> None:
        """Re-encode the weight once (memoized in ``tensor_map``) and point the load at it."""
        assert self.f is not None or load.function is not None
        f = self.f if self.f is not None else load.function
        single = self._single_load
        weight = load.tensor  # type: ignore[attr-defined]
        casted = static_cast_load_tensor(
            load, as_dtype(dtype), f, self.tensor_map,  # type: ignore[arg-type]
            None if single is None else (lambda t: id(t) in single),
        )
        if casted:
            DTypeMutator.casted_weights += casted
        DTypeMutator.folded_cast_load += 1  # :79
        if self.provenance is not None:
            now = load.tensor  # type: ignore[attr-defined]
            what = ("the splat is re-encoded in place" if now is weight
                    else f"@{weight.name} re-encoded as @{now.name}" if casted
                    else f"reuses @{now.name} (tensor_map memo)")
            note(self.provenance, load, self.name, "staticCastLoadTensor", what)


def _name(inst: Any) -> str:
    result = getattr(inst, "result", None)
    return f"%{result.name}" if result is not None else type(inst).__name__


def _why_fixed(operand: Any) -> str:
    """Why gate 8 refuses, in words (explain's rows)."""
    if type(operand).__name__ == "TensorContractOp":
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


register_stats(DTypeMutator, {
    "operator_type_mutated": "Number of operator whose dst type is mutated for legalization",
    "n_loads": "Number of load whose tensor type mutated",
    "casted_weights": "Number of bytes statically casted in weight tensor",
    "folded_cast_load": "Number of load whose cast is folded into the weight",
})
