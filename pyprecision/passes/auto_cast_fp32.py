"""AutoCastFP32 (spec 000 §1–§3, §5): the producer of casts in the all-* modes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pyprecision.ir import (
    CallOpBase,
    DType,
    Function,
    GenericLoad,
    Instruction,
    LoadInst,
    OffloadedMemCpy,
    OpaqueOp,
    Rewriter,
    ScalarValue,
    SelectOp,
    StoreInst,
    Tensor,
    TensorScalarGEPOp,
    UnaryOp,
    Value,
    bfloat16,
    float8e4,
    float16,
    float32,
    float32r,
    make_cast,
)
from pyprecision.passes.autocast_rules import instruction_verdict
from pyprecision.passes.base import FunctionPass, functions_of
from pyprecision.passes.mutate import mutate_fp32, mutate_result_and_scalar_operands
from pyprecision.passes.provenance import ProvenanceLog, Verdict, note, record
from pyprecision.passes.target import Target

__all__ = ["AutoCastFP32", "AutoCastRun", "cascade_dtype", "functions_of"]


def cascade_dtype(mode: str) -> DType:
    """Spec 000 §1 — the gating cascade on ``fp32_cast_mode``: interned-string equality, no enum,
    and fp16 for everything else."""
    if mode == "all":
        return bfloat16
    if mode == "all-fp32r":
        return float32r
    if mode == "all-fp8e4":
        return float8e4
    return float16  # the fp16 fall-through


@dataclass
class AutoCastRun:
    """What one run on one function remembers: its rewriter (which knows the ops this run built)
    and, in all-fp32r only, the call edges (QUIRK, spec 000 §1: the two sets exist only in that
    branch; None elsewhere)."""

    rewriter: Rewriter = field(default_factory=Rewriter)
    call_ins: set[Tensor] | None = None
    call_outs: set[Tensor] | None = None

    def on_call_edge(self, tensor: Tensor) -> bool:
        """The tensor is read by an opaque op or written by a call (recorded in all-fp32r)."""
        if self.call_ins is None or self.call_outs is None:
            return False
        return tensor in self.call_ins or tensor in self.call_outs


@dataclass(frozen=True)
class AutoCastFP32(FunctionPass):
    """fp32 op → op at D; fp32 load x → cast(x, D); store x → store cast(x, D); D from the mode.

    Options: ``target`` (its ``fp32_cast_mode`` picks D, spec 000 §1) and ``disable_inline_cast``
    (insertInputCasts emits a standalone cast instead of a narrowing load, spec 000 §2 NOTE).
    ``provenance``: None, or a list every verdict is appended to (:mod:`.provenance`). The rules
    are pure functions (:mod:`.autocast_rules`); this class applies their verdicts.
    """

    name: ClassVar[str] = "auto-cast-fp32"
    target: Target = field(default_factory=Target)
    disable_inline_cast: bool = False
    provenance: ProvenanceLog | None = field(default=None, compare=False, repr=False)

    @property
    def dtype(self) -> DType:
        """D, the dtype fp32 narrows to (:func:`cascade_dtype` of the target's mode)."""
        return cascade_dtype(self.target.fp32_cast_mode)

    @property
    def tracks_call_edges(self) -> bool:
        """True only in all-fp32r, the one branch that creates call_ins / call_outs."""
        return self.target.fp32_cast_mode == "all-fp32r"

    def new_run(self) -> AutoCastRun:
        """A fresh per-run state (call-edge sets only in all-fp32r)."""
        if self.tracks_call_edges:
            return AutoCastRun(Rewriter(), set(), set())
        return AutoCastRun(Rewriter())

    # -- driver ------------------------------------------------------------------------------------
    def run_on_function(self, f: Function, run: AutoCastRun | None = None) -> bool:
        """beforeStmtTransform, transformInstruction on a snapshot of the instructions,
        afterStmtTransform (``run``: the per-run state; a fresh one by default)."""
        run = run or self.new_run()
        changed = self.before_stmt_transform(f, run)
        for inst in list(f.instructions()):
            if inst.parent is not None and not run.rewriter.created(inst):
                changed |= self.transform_instruction(inst, run)
        changed |= self.after_stmt_transform(f, run)
        return changed

    def _record(self, subject: object, verdict: Verdict) -> None:
        if verdict.reason:
            record(self.provenance, subject, self.name, verdict)

    # -- spec 000 §2 -----------------------------------------------------------------------------------
    def before_stmt_transform(self, f: Function, run: AutoCastRun | None = None) -> bool:
        """Walk the tensors: record call edges, narrow boundary tensors, cast fp32 inputs."""
        run = run or self.new_run()
        changed = False
        for tensor in f.tensors:
            if tensor.is_reinterpreted:  # skip reinterpreted views
                continue
            if run.call_ins is not None:
                changed |= _record_call_edges(tensor, run)
            if tensor.is_input_or_output and not run.on_call_edge(tensor):  # decision P1
                changed |= mutate_fp32(tensor, self.dtype, self.provenance, self.name,
                                       "{kind} @{name} narrowed to {dtype} at the boundary "
                                       "(spec 000 §2)")
            if tensor.is_input and tensor.dtype == float32:  # after the narrowing (decision P1)
                changed |= self.insert_input_casts(tensor, run)
        return changed

    def insert_input_casts(self, tensor: Tensor, run: AutoCastRun | None = None) -> bool:
        """Spec 000 §2 insertInputCasts: each fp32 load of the input is replaced by a clone at the
        block front — narrowing itself (inline) or followed by a standalone cast."""
        run = run or self.new_run()
        changed = False
        for load in tensor.load_insts:
            if not isinstance(load, LoadInst) or load.is_reinterpreted or load.dtype != float32:
                continue  # opaque/call/memcpy readers keep the fp32 bytes
            self._splice_input_cast(load, run.rewriter)
            changed = True
        return changed

    def _splice_input_cast(self, load: LoadInst, rw: Rewriter) -> None:
        block, f = load.parent, load.function
        assert block is not None and f is not None and load.result is not None
        name = f"{self.dtype.name}.{load.tensor.name}"  # dtype2str(self.dtype) + tensor.name_str
        if self.disable_inline_cast:  # STANDALONE: fp32 load + make_cast
            newload: Instruction = load.clone()
            assert newload.result is not None
            replacement: Instruction = make_cast(newload.result, self.dtype, name, f)
            new = [newload, replacement]
        else:  # INLINE: the load itself produces the narrow dtype
            newload = replacement = load.clone(f.unique_name(name))
            newload.dtype = self.dtype
            new = [newload]
        # a GenericLoad reads an index value: it cannot move above its definition (decision P6)
        if isinstance(load, GenericLoad):
            rw.insert_all_before(new, load, dl=load.dl)
        else:
            rw.insert_at_front(block, new, dl=load.dl)
        rw.replace_all_uses(load, replacement, except_=replacement)  # GOTCHA: exclude the cast
        rw.erase(load)
        if self.provenance is None:
            return
        self._note(load, "insertInputCasts", "replaced by a load at the block front (spec 000 §2)")
        if replacement is newload:
            self._note(newload, "insertInputCasts",
                       f"the input is loaded as {self.dtype.name} (inline cast, spec 000 §2)")
        else:
            self._note(newload, "insertInputCasts", "the input is loaded as float32 "
                       "(disable_inline_cast, spec 000 §2 NOTE)")
            self._note(replacement, "insertInputCasts",
                       f"inserted, standalone cast of the input to {self.dtype.name}")

    def _note(self, subject: object, rule: str, message: str) -> None:
        note(self.provenance, subject, self.name, rule, message)

    # -- spec 000 §3: transformInstruction ----------------------------------------------------------------
    def decide(self, inst: Instruction, run: AutoCastRun) -> Verdict:
        """The verdict of the rules for ``inst`` (:func:`.autocast_rules.instruction_verdict`)."""
        return instruction_verdict(inst, self.dtype, run.on_call_edge)

    def transform_instruction(self, inst: Instruction, run: AutoCastRun | None = None) -> bool:
        """Decide (the skip rules in order, then the rule of the op's kind), then apply."""
        run = run or self.new_run()
        verdict = self.decide(inst, run)
        action = verdict.action
        if not action:
            self._record(inst, verdict)
            return False
        if action == "narrow":
            self._record(inst, verdict)  # skip rule 3 for a select
            skip = (0,) if isinstance(inst, SelectOp) else ()
            return mutate_result_and_scalar_operands(inst, self.dtype, skip, self.provenance,
                                                     self.name, run.rewriter)
        if action == "cast-result":
            assert isinstance(inst, LoadInst)
            return self._cast_result(inst, verdict, run.rewriter)
        if action == "cast-source":
            assert isinstance(inst, (StoreInst, TensorScalarGEPOp))
            return self._cast_store(inst, verdict, run)
        if action in ("follow", "retarget"):  # a load of narrowed memory; a cast to fp32
            mutate_fp32(inst, self.dtype)
            self._record(inst, verdict)
            return True
        if action == "fold":  # spec 000 §5 GOTCHA: bypass the redundant cast and delete it
            assert isinstance(inst, UnaryOp)
            mutate_fp32(inst, self.dtype)
            run.rewriter.replace_and_erase(inst, inst.data)
            self._record(inst, verdict)
            return True
        if action == "widen-operand":  # decision L25: a bitcast reads 32 bits
            assert isinstance(inst, UnaryOp) and isinstance(inst.data, Value)
            cast = make_cast(inst.data, float32, function=inst.function)
            run.rewriter.insert_before(cast, inst, dl=inst.dl)
            run.rewriter.replace_uses_in(inst, inst.data, cast)
            self._record(cast, verdict)
            return True
        if action == "narrow-destination":
            assert isinstance(inst, OffloadedMemCpy)
            return mutate_fp32(inst.dst.tensor, self.dtype, self.provenance, self.name,
                               verdict.reason)
        return self.apply_other(inst, verdict, run)

    def apply_other(self, inst: Instruction, verdict: Verdict, run: AutoCastRun) -> bool:
        """Actions only a subclass decides (none in the base pass)."""
        raise AssertionError(f"{self.name}: no rewrite for action {verdict.action!r}")

    # -- spec 000 §5: loads cast their RESULT, stores cast their SOURCE ---------------------------
    def _cast_result(self, inst: LoadInst, verdict: Verdict, rw: Rewriter) -> bool:
        assert inst.result is not None
        cast = make_cast(inst.result, self.dtype, function=inst.function)
        rw.insert_after(cast, inst, dl=inst.dl)  # the load casts its RESULT: after the load
        rw.replace_all_uses(inst, cast, except_=cast)
        self._record(cast, verdict)
        return True

    def _cast_store(self, inst: StoreInst | TensorScalarGEPOp, verdict: Verdict,
                    run: AutoCastRun) -> bool:
        changed = self._cast_source(inst, verdict, run.rewriter)
        if isinstance(inst, TensorScalarGEPOp) and isinstance(inst.scalar, ScalarValue):
            changed |= mutate_fp32(inst.scalar, self.dtype)  # the GEP's scalar rides along
        if not run.on_call_edge(inst.tensor):  # narrow the dst dtype
            changed |= mutate_fp32(inst, self.dtype, self.provenance, self.name,
                                   "store narrows its destination to {dtype} (spec 000 §5)")
        else:
            self._note(inst, "", "destination kept fp32: the tensor is on a call edge (all-fp32r)")
        return changed

    def _cast_source(self, inst: StoreInst | TensorScalarGEPOp, verdict: Verdict,
                     rw: Rewriter) -> bool:
        src = inst.src
        if isinstance(src, ScalarValue):
            return mutate_fp32(src, self.dtype)
        if src.dtype != float32:
            return False
        cast = make_cast(src, self.dtype, function=inst.function)
        rw.insert_before(cast, inst, dl=inst.dl)
        rw.replace_uses_in(inst, src, cast)  # the store casts its SOURCE
        self._record(cast, verdict)
        return True

    def after_stmt_transform(self, f: Function, run: AutoCastRun | None = None) -> bool:
        """Nothing in the base pass (AutoCastTCInputs shrinks tensors here)."""
        return False


def _record_call_edges(tensor: Tensor, run: AutoCastRun) -> bool:
    assert run.call_ins is not None and run.call_outs is not None
    changed = False
    for op in tensor.load_insts:
        if isinstance(op, OpaqueOp) and tensor not in op.call_ins:
            op.call_ins.add(tensor)  # record opaque consumer
            run.call_ins.add(tensor)
            changed = True
    for op in tensor.store_insts:
        if isinstance(op, CallOpBase) and tensor not in op.call_outs:
            op.call_outs.add(tensor)  # record call producer
            run.call_outs.add(tensor)
            changed = True
    return changed
