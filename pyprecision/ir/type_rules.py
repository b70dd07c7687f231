"""The dtype and shape rules of each instruction kind, checked by the verifier.

A rule raises ``RuleViolation`` with the message; the verifier adds the location. Messages are formatted
only when a rule fails (``if not ok: raise RuleViolation(f"...")``): formatting on every passing check cost
more than the checks themselves on large functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyprecision.ir.compute import BinaryOp, SelectOp, TensorContractOp, UnaryOp
from pyprecision.ir.core import Function
from pyprecision.ir.dtypes import DType, uint8
from pyprecision.ir.instructions import (
    COMPARE_KINDS,
    FLOAT_ONLY_UNARY,
    INT_ONLY_BINARY,
    Instruction,
)
from pyprecision.ir.memory import (
    CallOp,
    GenericLoad,
    GenericStore,
    LoadInst,
    OffloadedMemCpy,
    OpaqueOp,
    SBAtomLoad,
    StoreInst,
    TensorScalarGEPOp,
)
from pyprecision.ir.values import ScalarValue, Value

__all__ = ["RuleViolation", "check_types", "same_class"]


class RuleViolation(Exception):
    """A broken rule; ``str`` is the message without a location."""


def same_class(a: DType, b: DType) -> bool:
    """Both float or both integer (every dtype is one or the other)."""
    return a.is_float == b.is_float


def _need(cond: bool, msg: str) -> None:
    # Constant messages only; a formatted one is raised directly so it is built only on failure.
    if not cond:
        raise RuleViolation(msg)


def _shape(x: object) -> str:
    return "[" + ",".join(str(s) for s in x.shape) + "]"  # type: ignore[attr-defined]


def _check_index(idx: object, rows: int) -> int:
    _need(
        isinstance(idx, Value) and idx.dtype.is_integer and len(idx.shape) == 1,
        "the index must be a 1-D integer value",
    )
    return idx.shape[0]  # type: ignore[attr-defined]


def _check_load(f: Function, inst: LoadInst) -> None:
    r, t = inst.result, inst.src
    assert r is not None
    if not (same_class(r.dtype, t.dtype) and (r.dtype.is_float or r.dtype is t.dtype)):
        raise RuleViolation(
            f"cannot load {t.dtype.name} as {r.dtype.name} (only float↔float loads convert)"
        )
    if isinstance(inst, GenericLoad):
        n = _check_index(inst.index, t.shape[0])
        if r.shape != (n,) + t.shape[1:]:
            raise RuleViolation(
                f"result shape {_shape(r)} != gathered shape [{n}]+{list(t.shape[1:])}"
            )
    elif isinstance(inst, SBAtomLoad) and inst.has_partition_broadcast:
        if not (t.shape[0] == 1 and r.shape[1:] == t.shape[1:] and len(r.shape) == len(t.shape)):
            raise RuleViolation(
                f"broadcast load needs tensor shape [1,...] matching result {_shape(r)} "
                f"after axis 0, got {_shape(t)}"
            )
    elif r.shape != t.shape:
        raise RuleViolation(f"result shape {_shape(r)} != tensor shape {_shape(t)}")


def _check_store(f: Function, inst: StoreInst) -> None:
    v, t = inst.src, inst.dst
    if not (same_class(v.dtype, t.dtype) and (t.dtype.is_float or v.dtype is t.dtype)):
        raise RuleViolation(f"cannot store {v.dtype.name} into {t.dtype.name} @{t.tensor.name}")
    if isinstance(inst, GenericStore):
        n = _check_index(inst.index, t.shape[0])
        if not (isinstance(v, ScalarValue) or v.shape == (n,) + t.shape[1:]):
            raise RuleViolation(
                f"stored shape {_shape(v)} != scattered shape [{n}]+{list(t.shape[1:])}"
            )
    elif not (isinstance(v, ScalarValue) or v.shape == t.shape):
        raise RuleViolation(f"stored shape {_shape(v)} != tensor shape {_shape(t)}")


def _check_binary(f: Function, inst: BinaryOp) -> None:
    _check_elementwise(inst, inst.operands)
    r = inst.result
    assert r is not None
    a, b = inst.operands
    if inst.kind in COMPARE_KINDS:
        if r.dtype is not uint8:
            raise RuleViolation(f"a comparison produces uint8, not {r.dtype.name}")
        _need(
            same_class(a.dtype, b.dtype),
            "comparison operands must both be float or both integer",
        )
    else:
        if not (same_class(a.dtype, r.dtype) and same_class(b.dtype, r.dtype)):
            raise RuleViolation(
                f"operands {a.dtype.name}, {b.dtype.name} do not match a {r.dtype.name} result"
            )
        if inst.kind in INT_ONLY_BINARY and not r.dtype.is_integer:
            raise RuleViolation(f"'{inst.kind}' needs integer operands")


def _check_select(f: Function, inst: SelectOp) -> None:
    _check_elementwise(inst, inst.operands)
    p, a, b = inst.operands
    r = inst.result
    assert r is not None
    if not (isinstance(p, Value) and p.dtype is uint8):
        raise RuleViolation(f"the predicate must be a uint8 value, not {p.dtype.name}")
    if not (same_class(a.dtype, r.dtype) and same_class(b.dtype, r.dtype)):
        raise RuleViolation(
            f"operands {a.dtype.name}, {b.dtype.name} do not match a {r.dtype.name} result"
        )


def _check_matmul(f: Function, inst: TensorContractOp) -> None:
    s, m = inst.operands
    r = inst.result
    assert r is not None
    _need(isinstance(s, Value) and isinstance(m, Value), "matmul operands must be values")
    _need(
        s.dtype.is_float and m.dtype.is_float and r.dtype.is_float,
        "matmul operands and result must be float",
    )
    _need(len(s.shape) == 2 and len(m.shape) == 2, "matmul operands must be 2-D")
    if s.shape[0] != m.shape[0]:
        raise RuleViolation(f"contraction sizes differ: stationary {_shape(s)}, moving {_shape(m)}")
    if r.shape != (s.shape[1], m.shape[1]):
        raise RuleViolation(f"result shape {_shape(r)} != [{s.shape[1]},{m.shape[1]}]")


def _check_gep(f: Function, inst: TensorScalarGEPOp) -> None:
    src, sc = inst.operands
    t = inst.dst
    _need(isinstance(src, Value), "the first operand must be a value")
    if src.shape != t.shape:
        raise RuleViolation(f"source shape {_shape(src)} != tensor shape {_shape(t)}")
    _need(
        same_class(src.dtype, t.dtype) and same_class(sc.dtype, t.dtype),
        "operand and tensor dtypes differ in kind",
    )
    if t.dtype not in inst.allowed:
        raise RuleViolation(f"@{t.tensor.name} is {t.dtype.name}, not one of the allowed dtypes")
    if inst.kind in INT_ONLY_BINARY and not t.dtype.is_integer:
        raise RuleViolation(f"'{inst.kind}' needs integers")


def _check_memcpy(f: Function, inst: OffloadedMemCpy) -> None:
    s_ap, d = inst.src, inst.dst
    if s_ap.shape != d.shape:
        raise RuleViolation(f"shapes differ: {_shape(s_ap)} -> {_shape(d)}")
    if not (same_class(s_ap.dtype, d.dtype) and (d.dtype.is_float or s_ap.dtype is d.dtype)):
        raise RuleViolation(f"cannot copy {s_ap.dtype.name} into {d.dtype.name}")


def _check_opaque(f: Function, inst: OpaqueOp) -> None:
    _need(bool(inst.kernel), "an opaque op needs a kernel name")


def _check_unary(f: Function, inst: UnaryOp) -> None:
    (d,) = inst.operands
    r = inst.result
    assert r is not None
    _need(isinstance(d, Value), "the operand must be a value")
    if d.shape != r.shape:
        raise RuleViolation(f"operand shape {_shape(d)} != result shape {_shape(r)}")
    if inst.kind == "cast":
        return
    if inst.kind == "bitcast":
        if d.dtype.bits != r.dtype.bits:
            raise RuleViolation(f"bitcast {d.dtype.name} -> {r.dtype.name} changes the width")
        return
    if not same_class(d.dtype, r.dtype):
        raise RuleViolation(
            f"'{inst.kind}' cannot turn {d.dtype.name} into {r.dtype.name}; use cast"
        )
    if not (r.dtype.is_float or inst.kind not in FLOAT_ONLY_UNARY):
        raise RuleViolation(f"'{inst.kind}' needs a float dtype")


def _check_elementwise(inst: Instruction, ops: list) -> None:
    r = inst.result
    assert r is not None
    _need(any(isinstance(o, Value) for o in ops), "at least one operand must be a value")
    for o in ops:
        if not (isinstance(o, ScalarValue) or o.shape == r.shape):
            raise RuleViolation(
                f"operand %{getattr(o, 'name', '?')} shape {_shape(o)} != result shape {_shape(r)}"
            )


def _check_call(f: Function, inst: CallOp) -> None:
    m = f.module
    if m is None:
        return
    if not m.has_function(inst.callee):
        raise RuleViolation(f"call to undefined function @{inst.callee}")
    g = m.get_function(inst.callee)
    if len(inst.ins) != len(g.inputs):
        raise RuleViolation(f"@{g.name} takes {len(g.inputs)} inputs, {len(inst.ins)} given")
    if len(inst.outs) != len(g.outputs):
        raise RuleViolation(f"@{g.name} has {len(g.outputs)} outputs, {len(inst.outs)} given")
    for a, t in zip(inst.ins + inst.outs, g.inputs + g.outputs, strict=True):
        if a.shape != t.shape:
            raise RuleViolation(
                f"@{a.tensor.name} {_shape(a)} does not match @{g.name}'s @{t.name} {_shape(t)}"
            )
        if not same_class(a.dtype, t.dtype):
            raise RuleViolation(
                f"@{a.tensor.name} {a.dtype.name} does not match @{g.name}'s @{t.name} {t.dtype.name}"
            )


# The first class an instruction is an instance of decides (resolved once per concrete type).
_RULES: tuple[tuple[type, Callable[[Function, Any], None]], ...] = (
    (LoadInst, _check_load),
    (StoreInst, _check_store),
    (UnaryOp, _check_unary),
    (BinaryOp, _check_binary),
    (SelectOp, _check_select),
    (TensorContractOp, _check_matmul),
    (TensorScalarGEPOp, _check_gep),
    (OffloadedMemCpy, _check_memcpy),
    (CallOp, _check_call),
    (OpaqueOp, _check_opaque),
)
_BY_TYPE: dict[type, Callable[[Function, Any], None] | None] = {}


def check_types(f: Function, inst: Instruction) -> None:
    """Raise RuleViolation when ``inst``'s dtypes or shapes break the rules of its kind."""
    cls = type(inst)
    try:
        rule = _BY_TYPE[cls]
    except KeyError:
        rule = _BY_TYPE[cls] = next((r for t, r in _RULES if issubclass(cls, t)), None)
    if rule is not None:
        rule(f, inst)
