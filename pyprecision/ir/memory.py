"""Instructions that touch memory tensors through NeuronAP views: loads, stores, the tensor-scalar GEP,
the offloaded memcpy and calls (CallOpBase, CallOp, OpaqueOp)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pyprecision.ir.dtypes import FLOAT_DTYPES, INTEGER_DTYPES, DType, as_dtype
from pyprecision.ir.instructions import BINARY_KINDS, COMPARE_KINDS, Instruction, Operand
from pyprecision.ir.tensors import NeuronAP, Tensor
from pyprecision.ir.values import ScalarValue, Value

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

    def _clone_args(self, name: str | None) -> tuple[NeuronAP, Value]:
        return NeuronAP(self.src.tensor, self.src.reinterpret, "load"), self._clone_result(name)  # type: ignore[return-value]


class AffineLoad(LoadInst):
    """``%r = affine_load @t : T`` — reads the whole tensor (T's shape is the tensor's)."""

    opname = "affine_load"
    truncated_dtype: DType | None = (
        None  # spec 000 §6 reads AffineLoad.truncated_dtype; the passes set it
    )

    def clone(self, name: str | None = None) -> AffineLoad:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        return AffineLoad(*self._clone_args(name))


class SBAtomLoad(LoadInst):
    """``%r = sb_atom_load @t [broadcast] : T`` — a state-buffer load; with ``broadcast`` (partition
    broadcast) a [1, ...] tensor is replicated along axis 0 to T's shape."""

    opname = "sb_atom_load"

    def __init__(
        self, src: Tensor | NeuronAP, result: Value, has_partition_broadcast: bool = False
    ):
        super().__init__(src, result)
        self.has_partition_broadcast = bool(has_partition_broadcast)

    def clone(self, name: str | None = None) -> SBAtomLoad:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        return SBAtomLoad(
            *self._clone_args(name), has_partition_broadcast=self.has_partition_broadcast
        )


class GenericLoad(LoadInst):
    """``%r = generic_load @t[%idx] : T`` — gathers rows: r[i, ...] = t[idx[i], ...] (idx integer, 1-D)."""

    opname = "generic_load"

    @property
    def index(self) -> Operand:
        """The integer row-index value."""
        return self._operands[0]

    def set_operand(self, index: int, new: Any) -> None:
        """Replace operand ``index`` and keep the view's row index in step with it."""
        super().set_operand(index, new)
        self.aps[0].index = self._operands[0]  # type: ignore[assignment]

    def clone(self, name: str | None = None) -> GenericLoad:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        ap, res = self._clone_args(name)
        return GenericLoad(ap, res, self._op(0))  # type: ignore[arg-type]


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


class AffineStore(StoreInst):
    """``affine_store %x, @t`` — writes the whole tensor."""

    opname = "affine_store"

    def clone(self, name: str | None = None) -> AffineStore:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        return AffineStore(self._op(0), NeuronAP(self.dst.tensor, self.dst.reinterpret, "store"))


class GenericStore(StoreInst):
    """``generic_store %x, @t[%idx]`` — scatters rows: t[idx[i], ...] = x[i, ...] (later rows win)."""

    opname = "generic_store"

    @property
    def index(self) -> Operand:
        """The integer row-index value."""
        return self._operands[1]

    def set_operand(self, index: int, new: Any) -> None:
        """Replace operand ``index`` and keep the view's row index in step with it."""
        super().set_operand(index, new)
        self.aps[0].index = self._operands[1]  # type: ignore[assignment]

    def clone(self, name: str | None = None) -> GenericStore:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        index: Any = self._op(1)
        return GenericStore(
            self._op(0), NeuronAP(self.dst.tensor, self.dst.reinterpret, "store"), index
        )


class TensorScalarGEPOp(Instruction):
    """``tensor_scalar_gep.KIND %src, SCALAR -> @t`` — computes ``src KIND scalar`` elementwise (an
    address/index computation) and writes it into tensor ``t``. ``allowed_dtypes`` (printed only when not
    the default, the integer dtypes) are the dtypes ``t`` may take."""

    opname = "tensor_scalar_gep"

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

    def clone(self, name: str | None = None) -> TensorScalarGEPOp:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        return TensorScalarGEPOp(
            self.kind,
            self._op(0),
            self._op(1),  # type: ignore[arg-type]
            NeuronAP(self.dst.tensor, self.dst.reinterpret, "store"),
            self.allowed,
        )


class OffloadedMemCpy(Instruction):
    """``offloaded_memcpy @src -> @dst`` — a DMA copy of a whole tensor, converting to dst's dtype."""

    opname = "offloaded_memcpy"

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

    def clone(self, name: str | None = None) -> OffloadedMemCpy:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        s, d = self.aps
        return OffloadedMemCpy(
            NeuronAP(s.tensor, s.reinterpret, "load"), NeuronAP(d.tensor, d.reinterpret, "store")
        )


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

    def _copy_sets(self, other: CallOpBase) -> CallOpBase:
        other.call_ins = set(self.call_ins)
        other.call_outs = set(self.call_outs)
        return other

    def _views(self) -> tuple[list[NeuronAP], list[NeuronAP]]:
        return (
            [NeuronAP(a.tensor, a.reinterpret, "load") for a in self.ins],
            [NeuronAP(a.tensor, a.reinterpret, "store") for a in self.outs],
        )


class CallOp(CallOpBase):
    """``call @callee ins(@a, ...) outs(@b, ...)`` — runs another function of the module: its input
    tensors (in declaration order) receive ``ins``, its outputs are copied to ``outs``."""

    opname = "call"

    def __init__(
        self, callee: str, ins: Sequence[Tensor | NeuronAP], outs: Sequence[Tensor | NeuronAP]
    ):
        self.callee = callee
        super().__init__(ins, outs)

    def clone(self, name: str | None = None) -> CallOp:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        return self._copy_sets(CallOp(self.callee, *self._views()))  # type: ignore[return-value]


class OpaqueOp(CallOpBase):
    """``opaque "kernel" ins(...) outs(...)`` — a kernel the compiler cannot see into. The emulator knows
    the kernels ``copy``, ``add`` and ``softmax`` (see docs/ir.md)."""

    opname = "opaque"

    def __init__(
        self, kernel: str, ins: Sequence[Tensor | NeuronAP], outs: Sequence[Tensor | NeuronAP]
    ):
        self.kernel = kernel
        super().__init__(ins, outs)

    def clone(self, name: str | None = None) -> OpaqueOp:
        """A detached copy on fresh views of the same tensors (see Instruction.clone)."""
        return self._copy_sets(OpaqueOp(self.kernel, *self._views()))  # type: ignore[return-value]
