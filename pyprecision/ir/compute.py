"""The compute instructions: UnaryOp (including casts), BinaryOp (including comparisons), SelectOp and
TensorContractOp (matmul)."""

from __future__ import annotations

from typing import Any

from pyprecision.ir.dtypes import DTYPES, FLOAT_DTYPES, INTEGER_DTYPES, DType, uint8
from pyprecision.ir.instructions import (
    BINARY_KINDS,
    COMPARE_KINDS,
    UNARY_KINDS,
    Instruction,
    Operand,
)
from pyprecision.ir.values import Value

__all__ = ["BinaryOp", "SelectOp", "TensorContractOp", "UnaryOp"]


class UnaryOp(Instruction):
    """``%r = KIND %data : T`` — elementwise one-input op; ``cast`` converts to T's dtype (RNE, Neuron
    saturation), ``bitcast`` reinterprets the bits at the same width."""

    opname = "unary"

    def __init__(self, kind: str, data: Value, result: Value):
        if kind not in UNARY_KINDS:
            raise ValueError(f"unknown unary op {kind!r}")
        self.kind = kind
        super().__init__([data], result)

    @property
    def data(self) -> Operand:
        """The input."""
        return self._operands[0]

    src = data

    @property
    def is_cast(self) -> bool:
        """A ``cast`` (value conversion; ``bitcast`` is not one)."""
        return self.kind == "cast"

    @property
    def reinterpret(self) -> Any:
        """True for ``bitcast`` (the bits are reinterpreted), else None."""
        return True if self.kind == "bitcast" else None

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The dtypes a UnaryOp's ``dst`` may take (see Instruction.allowed_dtypes)."""
        if self.kind in ("cast", "bitcast"):
            return tuple(DTYPES.values())
        return (
            FLOAT_DTYPES
            if self.result is not None and self.result.dtype.is_float
            else INTEGER_DTYPES
        )

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a UnaryOp's ``dst`` (spec 002 gate 8)."""
        return self.kind != "bitcast" and self.result is not None and self.result.dtype.is_float

    def clone(self, name: str | None = None) -> UnaryOp:
        """A detached copy reading the same operands (see Instruction.clone)."""
        return UnaryOp(self.kind, self._op(0), self._clone_result(name))  # type: ignore[arg-type]


class BinaryOp(Instruction):
    """``%r = KIND x, y : T`` — elementwise; x or y may be an immediate scalar. Comparisons (cmp_*)
    produce a uint8 0/1 predicate."""

    opname = "binary"

    def __init__(self, kind: str, lhs: Operand, rhs: Operand, result: Value):
        if kind not in BINARY_KINDS:
            raise ValueError(f"unknown binary op {kind!r}")
        self.kind = kind
        super().__init__([lhs, rhs], result)

    @property
    def lhs(self) -> Operand:
        """First operand."""
        return self._operands[0]

    @property
    def rhs(self) -> Operand:
        """Second operand."""
        return self._operands[1]

    @property
    def is_compare(self) -> bool:
        """A cmp_* op."""
        return self.kind in COMPARE_KINDS

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The dtypes a BinaryOp's ``dst`` may take (see Instruction.allowed_dtypes)."""
        if self.is_compare:
            return (uint8,)
        return (
            FLOAT_DTYPES
            if self.result is not None and self.result.dtype.is_float
            else INTEGER_DTYPES
        )

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a BinaryOp's ``dst`` (spec 002 gate 8)."""
        return not self.is_compare and self.result is not None and self.result.dtype.is_float

    def clone(self, name: str | None = None) -> BinaryOp:
        """A detached copy reading the same operands (see Instruction.clone)."""
        return BinaryOp(self.kind, self._op(0), self._op(1), self._clone_result(name))  # type: ignore[arg-type]


class SelectOp(Instruction):
    """``%r = select %pred, x, y : T`` — elementwise ``pred != 0 ? x : y``; pred is uint8."""

    opname = "select"

    def __init__(self, pred: Value, on_true: Operand, on_false: Operand, result: Value):
        super().__init__([pred, on_true, on_false], result)

    @property
    def pred(self) -> Operand:
        """The uint8 predicate."""
        return self._operands[0]

    predicate = pred

    @property
    def on_true(self) -> Operand:
        """Chosen where pred != 0."""
        return self._operands[1]

    @property
    def on_false(self) -> Operand:
        """Chosen where pred == 0."""
        return self._operands[2]

    @property
    def allowed_dtypes(self) -> tuple[DType, ...]:
        """The dtypes a SelectOp's ``dst`` may take (see Instruction.allowed_dtypes)."""
        return (
            FLOAT_DTYPES
            if self.result is not None and self.result.dtype.is_float
            else INTEGER_DTYPES
        )

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a SelectOp's ``dst`` (spec 002 gate 8)."""
        return self.result is not None and self.result.dtype.is_float

    def clone(self, name: str | None = None) -> SelectOp:
        """A detached copy reading the same operands (see Instruction.clone)."""
        return SelectOp(self._op(0), self._op(1), self._op(2), self._clone_result(name))  # type: ignore[arg-type]


class TensorContractOp(Instruction):
    """``%r = matmul %stationary, %moving : T`` — r[m, n] = Σ_k stationary[k, m] · moving[k, n]
    (stationary [K, M], moving [K, N], r [M, N]); accumulates in fp32 (PSUM), then rounds to T."""

    opname = "matmul"
    _allowed = FLOAT_DTYPES

    def __init__(self, stationary: Value, moving: Value, result: Value):
        super().__init__([stationary, moving], result)

    @property
    def stationary(self) -> Operand:
        """operands[0], the [K, M] operand."""
        return self._operands[0]

    @property
    def moving(self) -> Operand:
        """operands[1], the [K, N] operand."""
        return self._operands[1]

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a TensorContractOp's ``dst`` (spec 002 gate 8)."""
        return False  # the PE writes its fp32 PSUM accumulator; see docs/decisions/ir.md

    def clone(self, name: str | None = None) -> TensorContractOp:
        """A detached copy reading the same operands (see Instruction.clone)."""
        return TensorContractOp(self._op(0), self._op(1), self._clone_result(name))  # type: ignore[arg-type]
