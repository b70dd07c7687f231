"""DTypeMutator (spec 002): absorb a cast into its producer by retyping the producer's dst in place;
constant weights are re-encoded at compile time instead."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyprecision.ir import Function, Instruction, SBAtomLoad, as_dtype
from pyprecision.passes.base import FunctionPass
from pyprecision.passes.mutator_gates import (
    MISMATCH,
    absorb_verdict,
    match_or_mutate_verdict,
    mutate_load_verdict,
)
from pyprecision.passes.provenance import ProvenanceLog, Verdict, record
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


@dataclass
class MutatorRun:
    """What one run of DTypeMutator on one function remembers (spec 002 :41-:51): the function
    ``f``, the weight-cast memo ``tensor_map`` and which const tensors have exactly one reader
    (counted once, so the walk stays linear)."""

    f: Function | None
    tensor_map: dict[Any, Any] = field(default_factory=dict)
    single_load: set[int] | None = None

    def reset(self) -> None:
        """Discard the weight-cast memo (spec 002 :48)."""
        self.tensor_map.clear()

    def set_function(self, f: Function) -> None:
        """Re-point the run at another function, keeping its memo (spec 002 :51)."""
        self.f = f


@dataclass(frozen=True)
class DTypeMutator(FunctionPass):
    """``%y = cast (op …) : D`` with op's dst used only by the cast → op retyped to D (the cast
    becomes an identity for cast-elimination); weights cast at compile time.

    Options: ``target`` (``enable_dma_cast``) and ``mutate_multi_users`` (gate 7; decision P17:
    no effect on the driver's casts in this IR). ``provenance``: None, or a list every verdict is
    appended to (:mod:`.provenance`). The gates are pure functions (:mod:`.mutator_gates`); this
    class applies their verdicts.
    """

    name: ClassVar[str] = "dtype-mutator"
    # class-level Statistics counters (spec 002 :124, :75, :79 and mutateLoad)
    operator_type_mutated: ClassVar[int] = 0
    n_loads: ClassVar[int] = 0
    casted_weights: ClassVar[int] = 0
    folded_cast_load: ClassVar[int] = 0

    target: Target = field(default_factory=Target)
    mutate_multi_users: bool = False
    provenance: ProvenanceLog | None = field(default=None, compare=False, repr=False)

    # -- driver (decision P10) -------------------------------------------------------------------
    def run_on_function(self, f: Function) -> bool:
        """Walk the casts in program order, absorbing each into its producer where the gates
        allow; drop the weights the const-fold orphaned."""
        changed = False
        single = {id(t) for t in f.tensors if t.is_const and t.n_loads == 1}
        run = MutatorRun(f, single_load=single)
        for inst in list(f.instructions()):
            driver = absorb_verdict(inst)
            if driver is None:
                continue
            if not driver.applies:
                record(self.provenance, inst, self.name, driver)
                continue
            producer = inst.data.owner  # type: ignore[attr-defined]
            verdict = self._verdict(producer, inst.dtype)
            changed |= self._apply(producer, inst.dtype, verdict, run).mutated
            if self.provenance is not None:
                record(self.provenance, inst, self.name, _cast_verdict(inst, producer, verdict))
        for original in {key[0] for key in run.tensor_map}:
            if not original.accesses and f.has_tensor(original.name):
                f.remove_tensor(original)  # replaced by its casted clone everywhere
        return changed

    # -- spec 002 :162 -----------------------------------------------------------------------------
    def try_mutate_dst_ty(self, operand: Any, dtype: Any, run: MutatorRun | None = None) -> bool:
        """True iff Match or Mutated."""
        return not self.match_or_mutate_dst_ty(operand=operand, dtype=dtype, run=run).mismatch

    # -- spec 002 :81 ------------------------------------------------------------------------------
    def match_or_mutate_dst_ty(self, operand: Any, dtype: Any,
                               run: MutatorRun | None = None) -> MutateState:
        """May the dst of ``operand`` be retyped to ``dtype``? Retypes it when every gate passes
        (the eight gates: :func:`.mutator_gates.match_or_mutate_verdict`)."""
        return self._apply(operand, dtype, self._verdict(operand, dtype), run)

    # -- spec 002 :127 ----------------------------------------------------------------------------
    def mutate_load(self, load: SBAtomLoad, dtype: Any, run: MutatorRun | None = None) -> MutateState:
        """DMA-carries-the-cast vs const-fold (:func:`.mutator_gates.mutate_load_verdict`)."""
        verdict = mutate_load_verdict(load, dtype, enable_dma_cast=self.target.enable_dma_cast)
        return self._apply(load, dtype, verdict, run)

    def _verdict(self, operand: Any, dtype: Any) -> Verdict:
        return match_or_mutate_verdict(operand, dtype, mutate_multi_users=self.mutate_multi_users,
                                       enable_dma_cast=self.target.enable_dma_cast)

    def _apply(self, operand: Any, dtype: Any, verdict: Verdict,
               run: MutatorRun | None) -> MutateState:
        """Record ``verdict`` and carry out its action."""
        record(self.provenance, operand, self.name, verdict)
        dtype = as_dtype(dtype)
        if verdict.action == "retype":
            operand.dtype = dtype  # (:120)
            operand.dst.mutate_tensor_ty(dtype)  # (:122)
            DTypeMutator.operator_type_mutated += 1  # (:124) class-level counter
        elif verdict.action == "dma-cast":
            if operand.dst is not None:  # :155
                operand.dst.mutate_tensor_ty(dtype)  # :156 the DMA carries the cast
            else:
                operand.dtype = dtype  # :158
            DTypeMutator.n_loads += 1
        elif verdict.action == "const-fold":
            self.static_cast_load_tensor(operand, dtype, run)  # :149 weight const-fold
        return MutateState(verdict.state)

    # -- spec 002 :54 -----------------------------------------------------------------------------
    def static_cast_load_tensor(self, load: Instruction, dtype: Any,
                                run: MutatorRun | None = None) -> None:
        """Re-encode the weight once (memoized in the run's ``tensor_map``) and point the load at
        it."""
        if run is None:
            run = MutatorRun(load.function)
        assert run.f is not None
        single = run.single_load
        weight = load.tensor  # type: ignore[attr-defined]
        how, casted = static_cast_load_tensor(
            load, as_dtype(dtype), run.f, run.tensor_map,
            None if single is None else (lambda t: id(t) in single),
        )
        DTypeMutator.casted_weights += casted  # :75
        if how != "splat":  # :61-:62 the splat fast path returns before the count at :79
            DTypeMutator.folded_cast_load += 1  # :79
        if self.provenance is not None:
            now = load.tensor  # type: ignore[attr-defined]
            what = {"splat": "the splat is re-encoded in place",
                    "clone": f"@{weight.name} re-encoded as @{now.name}",
                    "reuse": f"reuses @{now.name} (tensor_map memo)"}[how]
            record(self.provenance, load, self.name, Verdict("", "staticCastLoadTensor", what))


def _cast_verdict(cast: Instruction, producer: Instruction, verdict: Verdict) -> Verdict:
    """What the producer's verdict means for the cast: kept, or absorbed."""
    if verdict.state == MISMATCH:
        return Verdict("", "kept", f"cannot absorb it into {_name(producer)} "
                       f"({verdict.rule}: {verdict.reason})")
    return Verdict("", "absorbed", f"{_name(producer)} now produces "
                   f"{cast.dtype.name if cast.dtype else '?'}; the cast is an identity")


def _name(inst: Any) -> str:
    result = getattr(inst, "result", None)
    return f"%{result.name}" if result is not None else type(inst).__name__


register_stats(DTypeMutator, {
    "operator_type_mutated": "Number of operator whose dst type is mutated for legalization",
    "n_loads": "Number of load whose tensor type mutated",
    "casted_weights": "Number of bytes statically casted in weight tensor",
    "folded_cast_load": "Number of load whose cast is folded into the weight",
})
