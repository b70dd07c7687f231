"""The compute instructions: UnaryOp (including casts), BinaryOp (including comparisons), SelectOp and
TensorContractOp (matmul). Each is declared once: keywords, syntax, rule, semantics
(see :mod:`pyprecision.ir.opdef`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pyprecision.ir.dtypes import DTYPES, FLOAT_DTYPES, INTEGER_DTYPES, DType, uint8
from pyprecision.ir.instructions import (
    BINARY_KINDS,
    COMPARE_KINDS,
    FLOAT_ONLY_UNARY,
    INT_ONLY_BINARY,
    INT_ONLY_UNARY,
    UNARY_KINDS,
    Instruction,
    Operand,
)
from pyprecision.ir.opdef import Opnd, Punct, Val, register
from pyprecision.ir.rules import RuleViolation, check_elementwise, need, same_class, shape_text
from pyprecision.ir.values import Value

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.core import Function

__all__ = ["BinaryOp", "SelectOp", "TensorContractOp", "UnaryOp"]


def _same_class_result(dtype: DType | None) -> tuple[DType, ...]:
    return FLOAT_DTYPES if dtype is not None and dtype.is_float else INTEGER_DTYPES


@register
class UnaryOp(Instruction):
    """``%r = KIND %data : T`` — elementwise one-input op; ``cast`` converts to T's dtype (RNE, Neuron
    saturation), ``bitcast`` reinterprets the bits at the same width, ``satinf`` clamps ±inf to ±max
    of T (``--enable-saturate-infinity``)."""

    opname = "unary"
    WORDS = {k: {"kind": k} for k in UNARY_KINDS}
    SYNTAX = (Val("data"),)

    def __init__(self, kind: str, data: Value, result: Value):
        if kind not in UNARY_KINDS:
            raise ValueError(f"unknown unary op {kind!r}")
        self.kind = kind
        super().__init__([data], result)

    def word(self) -> str:
        """The kind is the keyword."""
        return self.kind

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
        return _same_class_result(self.result.dtype if self.result is not None else None)

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a UnaryOp's ``dst`` (spec 002 gate 8)."""
        return self.kind != "bitcast" and self.result is not None and self.result.dtype.is_float

    def check(self, f: Function) -> None:
        """Same shape; cast converts anything, bitcast keeps the width, others keep the class."""
        (d,) = self.operands
        r = self.result
        assert r is not None
        need(isinstance(d, Value), "the operand must be a value")
        if d.shape != r.shape:
            raise RuleViolation(f"operand shape {shape_text(d)} != result shape {shape_text(r)}")
        if self.kind == "cast":
            return
        if self.kind == "bitcast":
            if d.dtype.bits != r.dtype.bits:
                raise RuleViolation(f"bitcast {d.dtype.name} -> {r.dtype.name} changes the width")
            return
        if not same_class(d.dtype, r.dtype):
            raise RuleViolation(
                f"'{self.kind}' cannot turn {d.dtype.name} into {r.dtype.name}; use cast"
            )
        if not (r.dtype.is_float or self.kind not in FLOAT_ONLY_UNARY):
            raise RuleViolation(f"'{self.kind}' needs a float dtype")
        if r.dtype.is_float and self.kind in INT_ONLY_UNARY:
            raise RuleViolation(f"'{self.kind}' needs an integer dtype")

    def evaluate(self, ev: Any) -> Any:
        """Exact in float64 (or exact integers), rounded once to the result dtype; casts go through
        the cast core (float→int: XLA's conversion)."""
        num = ev.num
        src: Value = self.data  # type: ignore[assignment]
        x, sdt, rdt = ev.operand(src), src.dtype, self.result.dtype  # type: ignore[union-attr]
        if self.kind == "bitcast":
            return num.view_bits(x, sdt, rdt)
        if self.kind in ("cast", "copy") and sdt is rdt:
            return x
        if self.kind == "cast" and sdt.is_float and rdt.is_integer:
            return num.from_storage(num.float_to_int(x, rdt.np_dtype), rdt)
        if self.kind == "cast" and sdt.is_integer and rdt.is_float:
            return num.round_to(x, rdt)
        if self.kind == "satinf":
            return num.saturate_inf(x, rdt, sdt)
        if rdt.is_integer:
            return num.round_to(num.int_unary(self.kind, x), rdt)
        return num.unary_rounded(self.kind, x, rdt, sdt)  # round_to(unary_float(...)), EM-10/11


@register
class BinaryOp(Instruction):
    """``%r = KIND x, y : T`` — elementwise; x or y may be an immediate scalar. Comparisons (cmp_*)
    produce a uint8 0/1 predicate."""

    opname = "binary"
    WORDS = {k: {"kind": k} for k in BINARY_KINDS}
    SYNTAX = (Opnd("lhs"), Punct(","), Opnd("rhs"))

    def __init__(self, kind: str, lhs: Operand, rhs: Operand, result: Value):
        if kind not in BINARY_KINDS:
            raise ValueError(f"unknown binary op {kind!r}")
        self.kind = kind
        super().__init__([lhs, rhs], result)

    def word(self) -> str:
        """The kind is the keyword."""
        return self.kind

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
        return _same_class_result(self.result.dtype if self.result is not None else None)

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a BinaryOp's ``dst`` (spec 002 gate 8)."""
        return not self.is_compare and self.result is not None and self.result.dtype.is_float

    def check(self, f: Function) -> None:
        """Elementwise shapes; comparisons give uint8 from same-class operands; others keep the
        class of the result; and/or/xor are integer only."""
        check_elementwise(self.result, self.operands)
        r = self.result
        assert r is not None
        a, b = self.operands
        if self.kind in COMPARE_KINDS:
            if r.dtype is not uint8:
                raise RuleViolation(f"a comparison produces uint8, not {r.dtype.name}")
            need(
                same_class(a.dtype, b.dtype),
                "comparison operands must both be float or both integer",
            )
            return
        if not (same_class(a.dtype, r.dtype) and same_class(b.dtype, r.dtype)):
            raise RuleViolation(
                f"operands {a.dtype.name}, {b.dtype.name} do not match a {r.dtype.name} result"
            )
        if self.kind in INT_ONLY_BINARY and not r.dtype.is_integer:
            raise RuleViolation(f"'{self.kind}' needs integer operands")
        if self.kind == "atan2" and not r.dtype.is_float:
            raise RuleViolation("'atan2' needs float operands")

    def evaluate(self, ev: Any) -> Any:
        """Exact, then rounded once to the result dtype; comparisons give 0/1."""
        shape = self.result.shape  # type: ignore[union-attr]
        a, b = (ev.operand(o, shape) for o in self.operands)
        if self.is_compare:
            r = ev.num.binary_values(self.kind, a, b, self.lhs.dtype.is_float)
            return np.asarray(r, dtype=np.int64)
        # round_to(binary_values(...)), computed in float32 where that is the same (EM-10, EM-11)
        return ev.num.binary_rounded(self.kind, a, b, self.lhs.dtype.is_float,
                                     self.result.dtype,  # type: ignore[union-attr]
                                     (self.lhs.dtype, self.rhs.dtype))


@register
class SelectOp(Instruction):
    """``%r = select %pred, x, y : T`` — elementwise ``pred != 0 ? x : y``; pred is uint8."""

    opname = "select"
    WORDS = {"select": {}}
    SYNTAX = (Val("pred"), Punct(","), Opnd("on_true"), Punct(","), Opnd("on_false"))

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
        return _same_class_result(self.result.dtype if self.result is not None else None)

    @property
    def can_mutate_dst_ty(self) -> bool:
        """Whether DTypeMutator may retype a SelectOp's ``dst`` (spec 002 gate 8)."""
        return self.result is not None and self.result.dtype.is_float

    def check(self, f: Function) -> None:
        """Elementwise shapes; a uint8 value predicate; the branches match the result's class."""
        check_elementwise(self.result, self.operands)
        p, a, b = self.operands
        r = self.result
        assert r is not None
        if not (isinstance(p, Value) and p.dtype is uint8):
            raise RuleViolation(f"the predicate must be a uint8 value, not {p.dtype.name}")
        if not (same_class(a.dtype, r.dtype) and same_class(b.dtype, r.dtype)):
            raise RuleViolation(
                f"operands {a.dtype.name}, {b.dtype.name} do not match a {r.dtype.name} result"
            )

    def evaluate(self, ev: Any) -> Any:
        """``where(pred != 0, x, y)`` rounded to the result dtype. Operands of the result's float
        dtype need no rounding where the selected lanes have no NaN and, for a format whose
        rounding saturates an infinity (the fp8s), no ±inf: the lanes are the result (decisions
        EM-13, EM-14; otherwise the rounding gives a NaN or an infinity the dtype's encoding)."""
        shape = self.result.shape  # type: ignore[union-attr]
        p, a, b = (ev.operand(o, shape) for o in self.operands)
        rdt = self.result.dtype  # type: ignore[union-attr]
        if rdt.is_float and all(o.dtype is rdt for o in self.operands[1:]):
            r = np.where(p != 0, a, b)
            if r.dtype == np.float32 and ev.num.is_own_value(r, rdt):
                return r
        kind = np.float64 if self.result.dtype.is_float else object  # type: ignore[union-attr]
        with np.errstate(invalid="ignore"):  # a signalling NaN is quieted by the widening
            a, b = a.astype(kind), b.astype(kind)
        return ev.num.round_to(np.where(p != 0, a, b), self.result.dtype)  # type: ignore[union-attr]


@register
class TensorContractOp(Instruction):
    """``%r = matmul %stationary, %moving : T`` — r[m, n] = Σ_k stationary[k, m] · moving[k, n]
    (stationary [K, M], moving [K, N], r [M, N]); accumulates in fp32 (PSUM), then rounds to T."""

    opname = "matmul"
    _allowed = FLOAT_DTYPES
    WORDS = {"matmul": {}}
    SYNTAX = (Val("stationary"), Punct(","), Val("moving"))

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

    def check(self, f: Function) -> None:
        """Float 2-D operands [K, M] and [K, N]; result [M, N]."""
        s, m = self.operands
        r = self.result
        assert r is not None
        need(isinstance(s, Value) and isinstance(m, Value), "matmul operands must be values")
        need(
            s.dtype.is_float and m.dtype.is_float and r.dtype.is_float,
            "matmul operands and result must be float",
        )
        need(len(s.shape) == 2 and len(m.shape) == 2, "matmul operands must be 2-D")
        if s.shape[0] != m.shape[0]:
            raise RuleViolation(
                f"contraction sizes differ: stationary {shape_text(s)}, moving {shape_text(m)}"
            )
        if r.shape != (s.shape[1], m.shape[1]):
            raise RuleViolation(f"result shape {shape_text(r)} != [{s.shape[1]},{m.shape[1]}]")

    def evaluate(self, ev: Any) -> Any:
        """The PE: fp32 products, sequential fp32 sum over K, then rounded to the result dtype (a
        transpose whose result needs no rounding is not rounded: ``pe_transpose``, EM-24)."""
        s, m, dt = self.stationary, self.moving, self.result.dtype  # type: ignore[union-attr]
        sv, mv = ev.operand(s), ev.operand(m)
        got = ev.num.pe_transpose(sv, mv, s.dtype, m.dtype, dt)
        return got if got is not None else ev.num.round_to(ev.num.matmul_fp32(sv, mv), dt)
