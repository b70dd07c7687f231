"""Instructions that touch memory tensors through NeuronAP views: loads, stores, the tensor-scalar GEP,
the offloaded memcpy and calls (CallOpBase, CallOp, OpaqueOp)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pyprecision.ir.dtypes import FLOAT_DTYPES, INTEGER_DTYPES, DType, as_dtype
from pyprecision.ir.instructions import (
    BINARY_KINDS,
    COMPARE_KINDS,
    INT_ONLY_BINARY,
    Instruction,
    Operand,
)
from pyprecision.ir.opdef import Attrs, Flag, Imm, Opnd, Punct, Str, Sym, View, Views, register
from pyprecision.ir.rules import RuleViolation, check_index, need, same_class, shape_text
from pyprecision.ir.tensors import NeuronAP, Tensor
from pyprecision.ir.values import ScalarValue, Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = [
    "AffineLoad",
    "AffineStore",
    "CallOp",
    "CallOpBase",
    "GenericLoad",
    "GenericStore",
    "LoadInst",
    "OffloadedMemCpy",
    "OpaqueOp",
    "SBAtomLoad",
    "StoreInst",
    "TensorScalarGEPOp",
    "as_ap",
]


def as_ap(x: Tensor | NeuronAP, role: str) -> NeuronAP:
    """A fresh view with ``role`` on a tensor (or a copy of the given view's tensor/reinterpret)."""
    if isinstance(x, NeuronAP):
        return NeuronAP(x.tensor, x.reinterpret, role)
    return NeuronAP(x, None, role)


class LoadInst(Instruction):
    """Base of the loads: ``%r = OP @t : T`` reads tensor ``t`` (through ``src``) into a value, converting
    to T's dtype when it differs (a DMA cast)."""

    def __init__(self, src: Tensor | NeuronAP, result: Value, index: Value | None = None):
        ap = as_ap(src, "load")
        super().__init__([] if index is None else [index], result, [ap])
        ap.index = index

    @property
    def src(self) -> NeuronAP:
        """The source view."""
        return self.aps[0]

    dma_access = src

    @property
    def tensor(self) -> Tensor:
        """The tensor read."""
        return self.aps[0].tensor

    @property
    def load_const(self) -> bool:
        """The source tensor is a const (weight)."""
        return self.aps[0].tensor.is_const

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The dtypes a LoadInst's ``dst`` may take (see Instruction.allowed_dtypes)."""
        return FLOAT_DTYPES if self.src.dtype.is_float else INTEGER_DTYPES

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a LoadInst's ``dst`` (spec 002 gate 8)."""
        return (
            self.result is not None
            and self.result.dtype.is_float
            and self.src.dtype.is_float
            and self.src.reinterpret is None
        )

    def check(self, f: Function) -> None:
        """Only float↔float loads convert; the result has the tensor's shape (subclasses refine)."""
        r, t = self.result, self.src
        assert r is not None
        if not (same_class(r.dtype, t.dtype) and (r.dtype.is_float or r.dtype is t.dtype)):
            raise RuleViolation(
                f"cannot load {t.dtype.name} as {r.dtype.name} (only float↔float loads convert)"
            )
        self._check_shape(r, t)

    def _check_shape(self, r: Value, t: NeuronAP) -> None:
        if r.shape != t.shape:
            raise RuleViolation(f"result shape {shape_text(r)} != tensor shape {shape_text(t)}")

    def evaluate(self, ev: Any) -> Any:
        """The tensor's values converted to the result dtype (a DMA cast)."""
        return ev.num.convert(self._read(ev), self.src.dtype, self.result.dtype)  # type: ignore[union-attr]

    def _read(self, ev: Any) -> Any:
        return ev.read(self.src)


@register
class AffineLoad(LoadInst):
    """``%r = affine_load @t : T`` — reads the whole tensor (T's shape is the tensor's)."""

    opname = "affine_load"
    WORDS = {"affine_load": {}}
    SYNTAX = (View("src", "load"),)
    truncated_dtype: DType | None = (
        None  # spec 000 §6 reads AffineLoad.truncated_dtype; the passes set it
    )


@register
class SBAtomLoad(LoadInst):
    """``%r = sb_atom_load @t [broadcast] : T`` — a state-buffer load; with ``broadcast`` (partition
    broadcast) a [1, ...] tensor is replicated along axis 0 to T's shape."""

    opname = "sb_atom_load"
    WORDS = {"sb_atom_load": {}}
    SYNTAX = (View("src", "load"), Flag("has_partition_broadcast", "broadcast"))

    def __init__(
        self, src: Tensor | NeuronAP, result: Value, has_partition_broadcast: bool = False
    ):
        super().__init__(src, result)
        self.has_partition_broadcast = bool(has_partition_broadcast)

    def _check_shape(self, r: Value, t: NeuronAP) -> None:
        if not self.has_partition_broadcast:
            return super()._check_shape(r, t)
        if not (t.shape[0] == 1 and r.shape[1:] == t.shape[1:] and len(r.shape) == len(t.shape)):
            raise RuleViolation(
                f"broadcast load needs tensor shape [1,...] matching result {shape_text(r)} "
                f"after axis 0, got {shape_text(t)}"
            )

    def _read(self, ev: Any) -> Any:
        import numpy as np

        x = ev.read(self.src)
        return np.broadcast_to(x, self.result.shape) if self.has_partition_broadcast else x  # type: ignore[union-attr]


@register
class GenericLoad(LoadInst):
    """``%r = generic_load @t[%idx] : T`` — gathers rows: r[i, ...] = t[idx[i], ...] (idx integer, 1-D)."""

    opname = "generic_load"
    WORDS = {"generic_load": {}}
    SYNTAX = (View("src", "load", index="index"),)

    @property
    def index(self) -> Operand:
        """The integer row-index value."""
        return self._operands[0]

    def set_operand(self, index: int, new: Any) -> None:
        """Replace operand ``index`` and keep the view's row index in step with it."""
        super().set_operand(index, new)
        self.aps[0].index = self._operands[0]  # type: ignore[assignment]

    def _check_shape(self, r: Value, t: NeuronAP) -> None:
        n = check_index(self.index)
        if r.shape != (n,) + t.shape[1:]:
            raise RuleViolation(
                f"result shape {shape_text(r)} != gathered shape [{n}]+{list(t.shape[1:])}"
            )

    def _read(self, ev: Any) -> Any:
        x = ev.read(self.src)
        return x[ev.rows(self.index, x.shape[0], f"generic_load @{self.tensor.name}")]


class StoreInst(Instruction):
    """Base of the stores: ``OP x, @t`` writes value ``x`` into tensor ``t``, converting to the view's
    dtype when it differs."""

    def __init__(self, value: Operand, dst: Tensor | NeuronAP, index: Value | None = None):
        ap = as_ap(dst, "store")
        super().__init__([value] if index is None else [value, index], None, [ap])
        ap.index = index

    @property
    def dst(self) -> NeuronAP:
        """The destination view."""
        return self.aps[0]

    @property
    def src(self) -> Operand:
        """The stored value."""
        return self._operands[0]

    value = src

    @property
    def tensor(self) -> Tensor:
        """The tensor written."""
        return self.aps[0].tensor

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The dtypes a StoreInst's ``dst`` may take (see Instruction.allowed_dtypes)."""
        return FLOAT_DTYPES if self.dst.dtype.is_float else INTEGER_DTYPES

    def check(self, f: Function) -> None:
        """Only float↔float stores convert; the value has the tensor's shape (or is a scalar)."""
        v, t = self.src, self.dst
        if not (same_class(v.dtype, t.dtype) and (t.dtype.is_float or v.dtype is t.dtype)):
            raise RuleViolation(f"cannot store {v.dtype.name} into {t.dtype.name} @{t.tensor.name}")
        self._check_shape(v, t)

    def _check_shape(self, v: Operand, t: NeuronAP) -> None:
        if not (isinstance(v, ScalarValue) or v.shape == t.shape):
            raise RuleViolation(f"stored shape {shape_text(v)} != tensor shape {shape_text(t)}")

    def evaluate(self, ev: Any) -> None:
        """Writes the value, converted to the view's dtype."""
        ev.write(self.dst, ev.operand(self.src), self.src.dtype, self._rows(ev))

    def _rows(self, ev: Any) -> Any:
        return None


@register
class AffineStore(StoreInst):
    """``affine_store %x, @t`` — writes the whole tensor."""

    opname = "affine_store"
    WORDS = {"affine_store": {}}
    SYNTAX = (Opnd("value"), Punct(","), View("dst", "store"))
    HAS_RESULT = False


@register
class GenericStore(StoreInst):
    """``generic_store %x, @t[%idx]`` — scatters rows: t[idx[i], ...] = x[i, ...] (later rows win)."""

    opname = "generic_store"
    WORDS = {"generic_store": {}}
    SYNTAX = (Opnd("value"), Punct(","), View("dst", "store", index="index"))
    HAS_RESULT = False

    @property
    def index(self) -> Operand:
        """The integer row-index value."""
        return self._operands[1]

    def set_operand(self, index: int, new: Any) -> None:
        """Replace operand ``index`` and keep the view's row index in step with it."""
        super().set_operand(index, new)
        self.aps[0].index = self._operands[1]  # type: ignore[assignment]

    def _check_shape(self, v: Operand, t: NeuronAP) -> None:
        n = check_index(self.index)
        if not (isinstance(v, ScalarValue) or v.shape == (n,) + t.shape[1:]):
            raise RuleViolation(
                f"stored shape {shape_text(v)} != scattered shape [{n}]+{list(t.shape[1:])}"
            )

    def _rows(self, ev: Any) -> Any:
        return ev.rows(self.index, self.tensor.shape[0], f"generic_store @{self.tensor.name}")


@register
class TensorScalarGEPOp(Instruction):
    """``tensor_scalar_gep.KIND %src, SCALAR -> @t`` — computes ``src KIND scalar`` elementwise (an
    address/index computation) and writes it into tensor ``t``. ``allowed_dtypes`` (printed only when not
    the default, the integer dtypes) are the dtypes ``t`` may take."""

    opname = "tensor_scalar_gep"
    WORDS = {
        f"tensor_scalar_gep.{k}": {"kind": k} for k in BINARY_KINDS if k not in COMPARE_KINDS
    }
    WORD_PREFIX = "tensor_scalar_gep."
    SYNTAX = (
        Opnd("src"),
        Punct(","),
        Imm("scalar"),
        Punct("->"),
        View("dst", "store"),
        Attrs((("allowed", "dtype", INTEGER_DTYPES),)),
    )
    HAS_RESULT = False

    def __init__(
        self,
        kind: str,
        src: Operand,
        scalar: ScalarValue,
        dst: Tensor | NeuronAP,
        allowed: Iterable[Any] | None = None,
    ):
        if kind not in BINARY_KINDS or kind in COMPARE_KINDS:
            raise ValueError(f"unknown tensor_scalar_gep op {kind!r}")
        self.kind = kind
        super().__init__([src, scalar], None, [as_ap(dst, "store")])
        self.allowed: tuple[DType, ...] = (
            INTEGER_DTYPES if allowed is None else tuple(as_dtype(a) for a in allowed)
        )

    @property
    def dst(self) -> NeuronAP:
        """The destination view."""
        return self.aps[0]

    @property
    def src(self) -> Operand:
        """The tensor operand."""
        return self._operands[0]

    @property
    def scalar(self) -> Operand:
        """The scalar operand."""
        return self._operands[1]

    @property
    def tensor(self) -> Tensor:
        """The tensor written."""
        return self.aps[0].tensor

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The dtypes a TensorScalarGEPOp's ``dst`` may take (see Instruction.allowed_dtypes)."""
        return self.allowed

    def word(self) -> str:
        """``tensor_scalar_gep.KIND``."""
        return f"tensor_scalar_gep.{self.kind}"

    def check(self, f: Function) -> None:
        """Source shaped like the tensor, same class, the tensor's dtype allowed."""
        src, sc = self.operands
        t = self.dst
        need(isinstance(src, Value), "the first operand must be a value")
        if src.shape != t.shape:
            raise RuleViolation(f"source shape {shape_text(src)} != tensor shape {shape_text(t)}")
        need(
            same_class(src.dtype, t.dtype) and same_class(sc.dtype, t.dtype),
            "operand and tensor dtypes differ in kind",
        )
        if t.dtype not in self.allowed:
            raise RuleViolation(
                f"@{t.tensor.name} is {t.dtype.name}, not one of the allowed dtypes"
            )
        if self.kind in INT_ONLY_BINARY and not t.dtype.is_integer:
            raise RuleViolation(f"'{self.kind}' needs integers")

    def evaluate(self, ev: Any) -> None:
        """``src KIND scalar`` written into the tensor."""
        shape = self.dst.shape
        a, b = (ev.operand(o, shape) for o in self.operands)
        ev.write(self.dst, ev.num.binary_values(self.kind, a, b, self.dst.dtype.is_float), None)


@register
class OffloadedMemCpy(Instruction):
    """``offloaded_memcpy @src -> @dst`` — a DMA copy of a whole tensor, converting to dst's dtype."""

    opname = "offloaded_memcpy"
    WORDS = {"offloaded_memcpy": {}}
    SYNTAX = (View("src", "load"), Punct("->"), View("dst", "store"))
    HAS_RESULT = False

    def __init__(self, src: Tensor | NeuronAP, dst: Tensor | NeuronAP):
        super().__init__([], None, [as_ap(src, "load"), as_ap(dst, "store")])

    @property
    def src(self) -> NeuronAP:
        """The source view."""
        return self.aps[0]

    @property
    def dst(self) -> NeuronAP:
        """The destination view."""
        return self.aps[1]

    @property
    def tensor(self) -> Tensor:
        """The source tensor."""
        return self.aps[0].tensor

    def check(self, f: Function) -> None:
        """Same shapes; only float↔float copies convert."""
        s_ap, d = self.src, self.dst
        if s_ap.shape != d.shape:
            raise RuleViolation(f"shapes differ: {shape_text(s_ap)} -> {shape_text(d)}")
        if not (same_class(s_ap.dtype, d.dtype) and (d.dtype.is_float or s_ap.dtype is d.dtype)):
            raise RuleViolation(f"cannot copy {s_ap.dtype.name} into {d.dtype.name}")

    def evaluate(self, ev: Any) -> None:
        """The source's values written to the destination (converted)."""
        ev.write(self.dst, ev.read(self.src), self.src.dtype)


class CallOpBase(Instruction):
    """Base of calls: reads the ``ins`` tensors and writes the ``outs`` tensors in memory.

    ``call_ins`` / ``call_outs`` are the bookkeeping sets AutoCastFP32 fills (spec 000 §1/§2); they are
    printed as ``{call_ins = [...], call_outs = [...]}`` when non-empty.
    """

    def __init__(self, ins: Sequence[Tensor | NeuronAP], outs: Sequence[Tensor | NeuronAP]):
        self.n_ins = len(ins)
        super().__init__(
            [], None, [as_ap(t, "load") for t in ins] + [as_ap(t, "store") for t in outs]
        )
        self.call_ins: set[Tensor] = set()
        self.call_outs: set[Tensor] = set()

    @property
    def ins(self) -> list[NeuronAP]:
        """Views of the tensors read."""
        return self.aps[: self.n_ins]

    @property
    def outs(self) -> list[NeuronAP]:
        """Views of the tensors written."""
        return self.aps[self.n_ins :]

    @property
    def dst(self) -> None:
        """Calls have no single dst."""
        return None

    HAS_RESULT = False

    @classmethod
    def from_fields(cls, result: Value | None, **fields: Any) -> Instruction:
        """Build from declared fields; ``call_ins``/``call_outs`` are set after construction."""
        call_ins, call_outs = fields.pop("call_ins", ()), fields.pop("call_outs", ())
        inst = cls(**fields)
        inst.call_ins, inst.call_outs = set(call_ins), set(call_outs)
        return inst


@register
class CallOp(CallOpBase):
    """``call @callee ins(@a, ...) outs(@b, ...)`` — runs another function of the module: its input
    tensors (in declaration order) receive ``ins``, its outputs are copied to ``outs``."""

    opname = "call"
    WORDS = {"call": {}}
    SYNTAX = (
        Sym("callee"),
        Views("ins", "ins", "load"),
        Views("outs", "outs", "store"),
        Attrs((("call_ins", "tensor", frozenset()), ("call_outs", "tensor", frozenset()))),
    )

    def __init__(
        self, callee: str, ins: Sequence[Tensor | NeuronAP], outs: Sequence[Tensor | NeuronAP]
    ):
        self.callee = callee
        super().__init__(ins, outs)

    def check(self, f: Function) -> None:
        """The callee exists (when the function is in a module) and its signature matches."""
        m = f.module
        if m is None:
            return
        if not m.has_function(self.callee):
            raise RuleViolation(f"call to undefined function @{self.callee}")
        g = m.get_function(self.callee)
        if len(self.ins) != len(g.inputs):
            raise RuleViolation(f"@{g.name} takes {len(g.inputs)} inputs, {len(self.ins)} given")
        if len(self.outs) != len(g.outputs):
            raise RuleViolation(f"@{g.name} has {len(g.outputs)} outputs, {len(self.outs)} given")
        for a, t in zip(self.ins + self.outs, g.inputs + g.outputs, strict=True):
            if a.shape != t.shape:
                raise RuleViolation(
                    f"@{a.tensor.name} {shape_text(a)} does not match @{g.name}'s @{t.name} "
                    f"{shape_text(t)}"
                )
            if not same_class(a.dtype, t.dtype):
                raise RuleViolation(
                    f"@{a.tensor.name} {a.dtype.name} does not match @{g.name}'s @{t.name} "
                    f"{t.dtype.name}"
                )

    def evaluate(self, ev: Any) -> None:
        """Runs the callee on copies of ``ins``; its outputs are written to ``outs``."""
        ev.call(self)


@register
class OpaqueOp(CallOpBase):
    """``opaque "kernel" ins(...) outs(...)`` — a kernel the compiler cannot see into. The emulator knows
    the kernels ``copy``, ``add`` and ``softmax`` (see docs/ir.md)."""

    opname = "opaque"
    WORDS = {"opaque": {}}
    SYNTAX = (
        Str("kernel"),
        Views("ins", "ins", "load"),
        Views("outs", "outs", "store"),
        Attrs((("call_ins", "tensor", frozenset()), ("call_outs", "tensor", frozenset()))),
    )

    def __init__(
        self, kernel: str, ins: Sequence[Tensor | NeuronAP], outs: Sequence[Tensor | NeuronAP]
    ):
        self.kernel = kernel
        super().__init__(ins, outs)

    def check(self, f: Function) -> None:
        """A kernel name is given."""
        need(bool(self.kernel), "an opaque op needs a kernel name")

    def evaluate(self, ev: Any) -> None:
        """The emulator's model of the named kernel (see docs/ir.md)."""
        ev.opaque(self)
