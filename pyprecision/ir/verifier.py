"""The IR verifier: structure, SSA def-before-use, use lists, tensor accesses, and (through
``type_rules``) the dtype and shape rules of every instruction."""

from __future__ import annotations

import re

import numpy as np

from pyprecision.errors import VerifyError
from pyprecision.ir.compute import BinaryOp, UnaryOp
from pyprecision.ir.core import Function, Module
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.memory import CallOp, CallOpBase
from pyprecision.ir.tensors import SingleValueTensor, Tensor
from pyprecision.ir.type_rules import RuleViolation as _Fail
from pyprecision.ir.type_rules import check_types
from pyprecision.ir.values import ScalarValue, Value

__all__ = ["verify", "verify_function"]

_NAME = re.compile(r"[A-Za-z0-9_.$]+\Z")


def _where(f: Function, inst: Instruction | None) -> str:
    loc = f"{inst.dl}: " if inst is not None and inst.dl is not None else ""
    return f"{loc}in @{f.name}: "


def verify(module: Module | Function) -> None:
    """Raise VerifyError describing the first problem found; return None for a well-formed module."""
    funcs = [module] if isinstance(module, Function) else module.functions
    for f in funcs:
        verify_function(f)
    if isinstance(module, Module):
        _check_call_graph(module)


def _check_call_graph(m: Module) -> None:
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise VerifyError(
                "recursive call cycle: " + " -> ".join(f"@{p}" for p in path + [name])
            )
        state[name] = 1
        for inst in m.get_function(name).instructions():
            if isinstance(inst, CallOp) and m.has_function(inst.callee):
                visit(inst.callee, path + [name])
        state[name] = 2

    for f in m.functions:
        visit(f.name, [])


def verify_function(f: Function) -> None:
    """Verify one function (a CallOp's callee is checked only when the function is in a module)."""
    _check_tensors(f)
    defined: set[int] = set()
    names: set[str] = set()
    for b in f.blocks:
        if b.parent is not f:
            raise VerifyError(f"in @{f.name}: block ^{b.name} has a wrong parent")
        prev = None
        for inst in b.instructions:
            if inst.parent is not b or inst.prev is not prev:
                raise VerifyError(_where(f, inst) + "broken instruction list links")
            prev = inst
            try:
                _check_operands(f, inst, defined)
                _check_aps(f, inst)
                check_types(f, inst)
            except _Fail as e:
                raise VerifyError(_where(f, inst) + f"'{_name(inst)}': {e}") from None
            if inst.result is not None:
                r = inst.result
                if r.owner is not inst:
                    raise VerifyError(
                        _where(f, inst) + f"%{r.name} does not point back to its definition"
                    )
                if not _NAME.match(r.name):
                    raise VerifyError(
                        _where(f, inst)
                        + f"value name {r.name!r} is not printable (use [A-Za-z0-9_.$])"
                    )
                if r.name in names:
                    raise VerifyError(_where(f, inst) + f"value %{r.name} is defined twice")
                names.add(r.name)
                defined.add(id(r))
                _check_use_list(f, inst, r)
    for t in f.tensors:
        for ap in t._aps:
            if ap.owner is None or ap.owner.function is not f:
                raise VerifyError(
                    f"in @{f.name}: tensor @{t.name} is accessed by an instruction not in the function"
                )
        if _access_facts_stale(t):
            raise VerifyError(f"in @{f.name}: tensor @{t.name} has stale access counts")


def _access_facts_stale(t: Tensor) -> bool:
    """The tensor's incrementally kept access facts disagree with its attached views."""
    aps = t._aps
    loads = [ap.owner for ap in aps if ap.role == "load"]
    stores = [ap.owner for ap in aps if ap.role == "store"]
    cached = t._insts
    return (
        t._counts["load"] != len(loads)
        or t._counts["store"] != len(stores)
        or t._n_reinterpreted != sum(ap.reinterpret is not None for ap in aps)
        or t._n_indirect != sum(ap.index is not None for ap in aps)
        or (
            cached is not None
            and cached[0] == t._version
            and (
                cached[1] != list(dict.fromkeys(loads)) or cached[2] != list(dict.fromkeys(stores))
            )
        )
    )


def _name(inst: Instruction) -> str:
    return getattr(inst, "kind", None) if isinstance(inst, (UnaryOp, BinaryOp)) else inst.opname  # type: ignore[return-value]


def _check_tensors(f: Function) -> None:
    for t in f.tensors:
        if t.function is not f:
            raise VerifyError(f"in @{f.name}: tensor @{t.name} has a wrong parent function")
        where = f"in @{f.name}: tensor @{t.name}: "
        if not _NAME.match(t.name):
            raise VerifyError(where + "the name is not printable (use [A-Za-z0-9_.$])")
        if t.kind == "const":
            if isinstance(t, SingleValueTensor):
                if not isinstance(t.value, (int, float)):
                    raise VerifyError(where + "splat value must be a number")
                continue
            if not isinstance(t.value, np.ndarray):
                raise VerifyError(where + "const tensor has no value")
            if t.value.dtype != t.dtype.np_dtype:
                raise VerifyError(
                    where
                    + f"value has numpy dtype {t.value.dtype}, {t.dtype.name} needs {t.dtype.np_dtype}"
                )
            if t.value.shape != t.shape:
                raise VerifyError(
                    where + f"value has shape {list(t.value.shape)}, declared {list(t.shape)}"
                )
        elif t.value is not None:
            raise VerifyError(where + f"only const tensors have a value ({t.kind})")


def _check_operands(f: Function, inst: Instruction, defined: set[int]) -> None:
    for i, op in enumerate(inst._operands):
        if isinstance(op, ScalarValue):
            continue
        if not isinstance(op, Value):
            raise _Fail(f"operand {i} is not a value")
        if id(op) not in defined:
            owner = op.owner
            if owner is None or owner.function is not f:
                raise _Fail(f"operand %{op.name} is not defined in this function")
            raise _Fail(f"operand %{op.name} is used before its definition")
        if (inst, i) not in op._uses:  # a plain tuple hashes and compares equal to Use(inst, i)
            raise _Fail(f"operand {i} (%{op.name}) is missing from its use list")


def _check_use_list(f: Function, inst: Instruction, r: Value) -> None:
    for use in r._uses:
        u = use.user
        if u.function is not f:
            raise VerifyError(
                _where(f, inst)
                + f"%{r.name} has a use by an instruction that is not in the function"
            )
        if use.index >= len(u._operands) or u._operands[use.index] is not r:
            raise VerifyError(_where(f, inst) + f"%{r.name} has a stale use-list entry")


def _check_aps(f: Function, inst: Instruction) -> None:
    for ap in inst.aps:
        if ap.owner is not inst or ap not in ap.tensor._aps:
            raise _Fail(f"access to @{ap.tensor.name} is not registered with the tensor")
        if (
            ap.tensor.function is not f
            or not f.has_tensor(ap.tensor.name)
            or f.get_tensor(ap.tensor.name) is not ap.tensor
        ):
            raise _Fail(f"tensor @{ap.tensor.name} is not declared in this function")
        if ap.reinterpret is not None and ap.reinterpret.bits != ap.tensor.dtype.bits:
            raise _Fail(
                f"cannot view {ap.tensor.dtype.name} @{ap.tensor.name} as {ap.reinterpret.name} "
                "(width differs)"
            )
        if ap.role == "store" and ap.tensor.is_const:
            raise _Fail(f"writes const tensor @{ap.tensor.name}")
    if isinstance(inst, CallOpBase):
        for t in inst.call_ins | inst.call_outs:
            if t.function is not f:
                raise _Fail(
                    f"call_ins/call_outs names @{t.name}, which is not declared in this function"
                )
