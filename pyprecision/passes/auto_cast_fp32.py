"""AutoCastFP32 (spec 000 §1–§3, §5): the producer of casts in the all-* modes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyprecision.ir import (
    CallOpBase,
    DType,
    Function,
    GenericLoad,
    GenericStore,
    Instruction,
    IRBuilder,
    LoadInst,
    Module,
    OffloadedMemCpy,
    OpaqueOp,
    ScalarValue,
    SelectOp,
    StoreInst,
    Tensor,
    TensorScalarGEPOp,
    UnaryOp,
    bfloat16,
    float8e4,
    float16,
    float32,
    float32r,
    make_cast,
)
from pyprecision.passes.mutate import mutate_fp32, mutate_result_and_scalar_operands
from pyprecision.passes.provenance import ProvenanceLog, note
from pyprecision.passes.target import Target


def functions_of(unit: Module | Function) -> list[Function]:
    """The functions a pass runs over."""
    return [unit] if isinstance(unit, Function) else unit.functions


@dataclass(frozen=True)
class AutoCastFP32:
    """fp32 op → op at D; fp32 load x → cast(x, D); store x → store cast(x, D); D from the mode.

    Options: ``target`` (its ``fp32_cast_mode`` picks D, spec 000 §1) and ``disable_inline_cast``
    (insertInputCasts emits a standalone cast instead of a narrowing load, spec 000 §2 NOTE).
    ``provenance``: None, or a list every decision is appended to (:mod:`.provenance`).
    """

    name: ClassVar[str] = "auto-cast-fp32"
    target: Target = field(default_factory=Target)
    disable_inline_cast: bool = False
    provenance: ProvenanceLog | None = field(default=None, compare=False, repr=False)
    dtype: DType = field(init=False, repr=False, compare=False)
    _created: set[int] = field(init=False, repr=False, compare=False, default_factory=set)

    def __post_init__(self) -> None:
        # spec 000 §1 — the gating cascade, interned-string equality, no enum
        mode = self.target.fp32_cast_mode
        if mode == "all":
            object.__setattr__(self, "dtype", bfloat16)
        elif mode == "all-fp32r":
            object.__setattr__(self, "dtype", float32r)
            object.__setattr__(self, "call_ins", set())  # QUIRK: only in this branch
            object.__setattr__(self, "call_outs", set())
        elif mode == "all-fp8e4":
            object.__setattr__(self, "dtype", float8e4)
        else:  # the fp16 fall-through
            object.__setattr__(self, "dtype", float16)

    # -- driver ------------------------------------------------------------------------------------
    def run(self, unit: Module | Function) -> bool:
        """Run on every function; True when anything changed."""
        changed = False
        for f in functions_of(unit):
            changed |= self.run_on_function(f)
        return changed

    def run_on_function(self, f: Function) -> bool:
        """beforeStmtTransform, transformInstruction on a snapshot of the instructions,
        afterStmtTransform."""
        object.__setattr__(self, "_created", set())  # boundary loads/casts built by this run
        changed = self.before_stmt_transform(f)
        for inst in list(f.instructions()):
            if inst.parent is not None and id(inst) not in self._created:
                changed |= self.transform_instruction(inst)
        changed |= self.after_stmt_transform(f)
        return changed

    # -- call-edge bookkeeping (all-fp32r only) ---------------------------------------------------------
    @property
    def tracks_call_edges(self) -> bool:
        """True only in all-fp32r, the one branch that creates call_ins / call_outs."""
        return hasattr(self, "call_ins")

    def on_call_edge(self, tensor: Tensor) -> bool:
        """The tensor is read by an opaque op or written by a call (recorded in all-fp32r)."""
        if not self.tracks_call_edges:
            return False
        return tensor in self.call_ins or tensor in self.call_outs  # type: ignore[attr-defined]

    # -- spec 000 §2 -----------------------------------------------------------------------------------
    def before_stmt_transform(self, f: Function) -> bool:
        """Walk the tensors: record call edges, narrow boundary tensors, cast fp32 inputs."""
        changed = False
        for tensor in f.tensors:
            if tensor.is_reinterpreted:  # skip reinterpreted views
                continue
            if self.tracks_call_edges:
                changed |= self._record_call_edges(tensor)
            if tensor.isInputOrOutput and not self.on_call_edge(tensor):  # decision P1
                changed |= mutate_fp32(tensor, self.dtype, self.provenance, self.name,
                                       "{kind} @{name} narrowed to {dtype} at the boundary "
                                       "(spec 000 §2)")
            if tensor.isInput and tensor.dtype == float32:  # after the narrowing (decision P1)
                changed |= self.insert_input_casts(tensor)
        return changed

    def _record_call_edges(self, tensor: Tensor) -> bool:
        changed = False
        for op in tensor.load_insts:
            if isinstance(op, OpaqueOp) and tensor not in op.call_ins:
                op.call_ins.add(tensor)  # record opaque consumer
                self.call_ins.add(tensor)  # type: ignore[attr-defined]
                changed = True
        for op in tensor.store_insts:
            if isinstance(op, CallOpBase) and tensor not in op.call_outs:
                op.call_outs.add(tensor)  # record call producer
                self.call_outs.add(tensor)  # type: ignore[attr-defined]
                changed = True
        return changed

    def insert_input_casts(self, tensor: Tensor) -> bool:
        """Spec 000 §2 insertInputCasts: each fp32 load of the input is replaced by a clone at the
        block front — narrowing itself (inline) or followed by a standalone cast."""
        changed = False
        for load in tensor.load_insts:
            if not isinstance(load, LoadInst) or load.is_reinterpreted or load.dtype != float32:
                continue  # opaque/call/memcpy readers keep the fp32 bytes
            self._splice_input_cast(load)
            changed = True
        return changed

    def _note(self, subject: Any, rule: str, message: str) -> None:
        note(self.provenance, subject, self.name, rule, message)

    def _splice_input_cast(self, load: LoadInst) -> None:
        block = load.parent
        assert block is not None and load.result is not None
        builder = IRBuilder(function=load.function)
        name = f"{self.dtype.name}.{load.tensor.name}"  # dtype2str(self.dtype) + tensor.name_str
        replacement: Instruction
        if self.disable_inline_cast:  # STANDALONE: fp32 load + make_cast
            newload: Instruction = load.clone()
            assert newload.result is not None
            replacement = make_cast(newload.result, self.dtype, name, load.function)
        else:  # INLINE: the load itself produces the narrow dtype
            newload = load.clone(load.function.unique_name(name))  # type: ignore[union-attr]
            newload.dtype = self.dtype
            replacement = newload
        # a GenericLoad reads an index value: it cannot move above its definition (decision P6)
        if isinstance(load, GenericLoad):
            builder.set_insertion_point_before(load)
            builder.insert(newload)
            if replacement is not newload:
                builder.insert(replacement)
        else:
            with builder.front_under_bb(block):
                builder.insert(newload)
                if replacement is not newload:
                    builder.insert(replacement)
        for inst in (newload, replacement):
            self._created.add(id(inst))
            inst.allocateId()
            inst.updateDebugLoc(load.dl)
        load.replaceAllUsesWithExcept(replacement, replacement)  # GOTCHA: exclude the cast
        load.eraseFromParent()
        if self.provenance is not None:
            self._note(load, "insertInputCasts", "replaced by a load at the block front "
                       "(spec 000 §2)")
            if replacement is newload:
                self._note(newload, "insertInputCasts",
                           f"the input is loaded as {self.dtype.name} (inline cast, spec 000 §2)")
            else:
                self._note(newload, "insertInputCasts", "the input is loaded as float32 "
                           "(disable_inline_cast, spec 000 §2 NOTE)")
                self._note(replacement, "insertInputCasts",
                           f"inserted, standalone cast of the input to {self.dtype.name}")

    # -- spec 000 §3: transformInstruction ----------------------------------------------------------------
    def transform_instruction(self, inst: Instruction) -> bool:
        """The skip rules in order, then the per-kind transforms."""
        # SKIP-RULE 1: opaque / call ops are not transformed (the boundary owns their I/O)
        if isinstance(inst, (OpaqueOp, CallOpBase)):
            self._note(inst, "skip rule 1", "opaque/call ops are not transformed")
            return False
        if isinstance(inst, LoadInst):
            return self.transform_load(inst)
        if isinstance(inst, (StoreInst, TensorScalarGEPOp)):
            return self.transform_store(inst)
        if isinstance(inst, OffloadedMemCpy):
            return self.transform_offloaded_memcpy(inst)
        if isinstance(inst, UnaryOp):
            return self.transform_unary_op(inst)
        return self.transform_compute(inst)

    def transform_compute(self, inst: Instruction) -> bool:
        """Binary ops, selects, matmuls: rules 2 and 3, then mutate_result_and_scalar_operands."""
        # SKIP-RULE 2: integer-typed paths short-circuit (only float ops cast; decision P4)
        if _is_integer(inst.dtype):
            self._note(inst, "skip rule 2", "integer path")
            return False
        # SKIP-RULE 3: a SelectOp keeps its predicate at uint8
        skip = (0,) if isinstance(inst, SelectOp) else ()
        if skip:
            self._note(inst, "skip rule 3", "the select predicate keeps its dtype")
        return mutate_result_and_scalar_operands(inst, self.dtype, skip, self.provenance, self.name)

    # -- spec 000 §5: loads cast their RESULT, stores cast their SOURCE ---------------------------
    def transform_load(self, inst: LoadInst) -> bool:
        """A float32 load of fp32 memory keeps reading fp32 and gets ``cast → D`` after it (users
        rewired); a float32 load of memory already narrowed follows it (decision P3)."""
        if inst.is_reinterpreted:
            self._note(inst, "", "reinterpreted load is never touched")
            return False
        if inst.dtype != float32:
            if inst.dtype is not None and self.provenance is not None:
                self._note(inst, "", f"already {inst.dtype.name}; only fp32 is narrowed "
                           "(decision P5)")
            return False
        if inst.src.dtype != float32:
            return mutate_fp32(inst, self.dtype, self.provenance, self.name,
                               "load of narrowed memory follows it to {dtype} (decision P3)")
        assert inst.result is not None
        cast = make_cast(inst.result, self.dtype, function=inst.function)
        cast.insertAfter(inst)  # the load casts its RESULT: cast placed after the load
        cast.allocateId()
        cast.updateDebugLoc(inst.dl)
        inst.replaceAllUsesWithExcept(cast, cast)
        if self.provenance is not None:
            self._note(cast, "", f"inserted, the load casts its result to {self.dtype.name} "
                       "(spec 000 §5)")
        return True

    def transform_store(self, inst: StoreInst | TensorScalarGEPOp) -> bool:
        """A store into fp32 memory stores ``cast(src → D)`` and narrows its destination (kept fp32
        when the tensor is on a call edge in all-fp32r)."""
        if inst.is_reinterpreted:
            self._note(inst, "", "reinterpreted store is never touched")
            return False
        # SKIP-RULE 4: a GenericStore re-checks the integer guard before narrowing
        if isinstance(inst, GenericStore) and _is_integer(inst.dtype):
            self._note(inst, "skip rule 4", "integer generic store")
            return False
        if _is_integer(inst.dtype) or inst.dtype != float32:
            if inst.dtype is not None and self.provenance is not None:
                self._note(inst, "skip rule 2" if _is_integer(inst.dtype) else "",
                           "integer path" if _is_integer(inst.dtype) else
                           f"destination already {inst.dtype.name}; only fp32 is narrowed")
            return False
        if isinstance(inst, TensorScalarGEPOp) and self.dtype not in inst.allowed_dtypes:
            if self.provenance is not None:
                self._note(inst, "", f"{self.dtype.name} is not in the GEP's allowed_dtypes")
            return False
        changed = self._cast_source(inst)
        if isinstance(inst, TensorScalarGEPOp) and isinstance(inst.scalar, ScalarValue):
            changed |= mutate_fp32(inst.scalar, self.dtype)  # the GEP's scalar rides along
        if not self.on_call_edge(inst.tensor):  # narrow the dst dtype
            changed |= mutate_fp32(inst, self.dtype, self.provenance, self.name,
                                   "store narrows its destination to {dtype} (spec 000 §5)")
        else:
            self._note(inst, "", "destination kept fp32: the tensor is on a call edge (all-fp32r)")
        return changed

    def _cast_source(self, inst: StoreInst | TensorScalarGEPOp) -> bool:
        src = inst.src
        if isinstance(src, ScalarValue):
            return mutate_fp32(src, self.dtype)
        if src.dtype != float32:
            return False
        cast = make_cast(src, self.dtype, function=inst.function)
        cast.insertBefore(inst)
        cast.allocateId()
        cast.updateDebugLoc(inst.dl)
        inst.replaceUseOfWith(src, cast)  # the store casts its SOURCE
        if self.provenance is not None:
            self._note(cast, "", f"inserted, the store casts its source to {self.dtype.name} "
                       "(spec 000 §5)")
        return True

    def transform_offloaded_memcpy(self, inst: OffloadedMemCpy) -> bool:
        """An fp32 → fp32 DMA copy lands narrowed: its destination tensor is narrowed, so the DMA
        carries the conversion."""
        if inst.is_reinterpreted or not self.memcpy_source_ok(inst):
            self._note(inst, "", "memcpy left alone (reinterpreted, or its source is not narrowed)")
            return False
        dst = inst.dst.tensor
        if dst.isInputOrOutput or self.on_call_edge(dst):
            self._note(inst, "", "memcpy into a boundary/call-edge tensor left alone")
            return False
        return mutate_fp32(dst, self.dtype, self.provenance, self.name,
                           "@{name} lands narrowed to {dtype}: the DMA carries the cast")

    def memcpy_source_ok(self, inst: OffloadedMemCpy) -> bool:
        """Which memcpy sources are narrowed on arrival (any, in the base pass)."""
        return True

    # -- spec 000 §5 GOTCHA: transformUnaryOp folds redundant casts -----------------------------------
    def transform_unary_op(self, op: UnaryOp) -> bool:
        """A cast whose source already has the (narrowed) target dtype is bypassed and erased;
        other float unary ops narrow like any compute op; bitcasts are never touched."""
        if op.reinterpret:
            self._note(op, "", "bitcasts are never touched")
            return False
        if op.is_cast:
            changed = mutate_fp32(op, self.dtype)  # a cast to fp32 now targets D
            if op.data.dtype is op.dtype:
                op.replaceAllUsesWith(op.data)  # bypass the cast
                op.eraseFromParent()  # and delete it
                self._note(op, "", "redundant cast folded (transformUnaryOp, spec 000 §5 GOTCHA)")
                return True
            if changed and self.provenance is not None:
                self._note(op, "", f"a cast to fp32 now targets {self.dtype.name} "
                           "(transformUnaryOp)")
            return changed
        return self.transform_compute(op)

    def after_stmt_transform(self, f: Function) -> bool:
        """Nothing in the base pass (AutoCastTCInputs shrinks tensors here)."""
        return False


def _is_integer(dtype: Any) -> bool:
    return dtype is not None and dtype.is_integer
