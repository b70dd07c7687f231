"""The IR verifier: structure, SSA def-before-use, use lists, tensor accesses, types and shapes."""

from __future__ import annotations

import re

import numpy as np

from pyprecision.errors import VerifyError
from pyprecision.ir.compute import BinaryOp, SelectOp, TensorContractOp, UnaryOp
from pyprecision.ir.core import Function, Module
from pyprecision.ir.dtypes import uint8
from pyprecision.ir.instructions import (
    COMPARE_KINDS,
    FLOAT_ONLY_UNARY,
    INT_ONLY_BINARY,
    Instruction,
)
from pyprecision.ir.memory import (
    CallOp,
    CallOpBase,
    GenericLoad,
    GenericStore,
    LoadInst,
    OffloadedMemCpy,
    OpaqueOp,
    SBAtomLoad,
    StoreInst,
    TensorScalarGEPOp,
)
from pyprecision.ir.tensors import SingleValueTensor, Tensor
from pyprecision.ir.values import ScalarValue, Value

__all__ = ["verify", "verify_function"]

_NAME = re.compile(r"[A-Za-z0-9_.$]+\Z")


class _Fail(Exception):
    pass


def _where(f: Function, inst: Instruction | None) -> str:
    loc = f"{inst.dl}: " if inst is not None and inst.dl is not None else ""
    return f"{loc}in @{f.name}: "


def _same_class(a: object, b: object) -> bool:
    return (a.is_float and b.is_float) or (a.is_integer and b.is_integer)  # type: ignore[attr-defined]


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
                _check_types(f, inst)
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
            and (cached[1] != list(dict.fromkeys(loads)) or cached[2] != list(dict.fromkeys(stores)))
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


def _need(cond: bool, msg: str) -> None:
    # Constant messages only: a formatted message is written as `if not cond: raise _Fail(f"...")`
    # so that it is built only on failure (formatting shapes on every passing check cost more than
    # the checks themselves on large functions).
    if not cond:
        raise _Fail(msg)


def _shape(x: object) -> str:
    return "[" + ",".join(str(s) for s in x.shape) + "]"  # type: ignore[attr-defined]


def _check_index(idx: object, rows: int) -> int:
    _need(
        isinstance(idx, Value) and idx.dtype.is_integer and len(idx.shape) == 1,
        "the index must be a 1-D integer value",
    )
    return idx.shape[0]  # type: ignore[attr-defined]


def _check_types(f: Function, inst: Instruction) -> None:
    if isinstance(inst, LoadInst):
        r, t = inst.result, inst.src
        assert r is not None
        if not (_same_class(r.dtype, t.dtype) and (r.dtype.is_float or r.dtype is t.dtype)):
            raise _Fail(
                f"cannot load {t.dtype.name} as {r.dtype.name} (only float↔float loads convert)"
            )
        if isinstance(inst, GenericLoad):
            n = _check_index(inst.index, t.shape[0])
            if r.shape != (n,) + t.shape[1:]:
                raise _Fail(f"result shape {_shape(r)} != gathered shape [{n}]+{list(t.shape[1:])}")
        elif isinstance(inst, SBAtomLoad) and inst.has_partition_broadcast:
            if not (
                t.shape[0] == 1 and r.shape[1:] == t.shape[1:] and len(r.shape) == len(t.shape)
            ):
                raise _Fail(
                    f"broadcast load needs tensor shape [1,...] matching result {_shape(r)} "
                    f"after axis 0, got {_shape(t)}"
                )
        elif r.shape != t.shape:
            raise _Fail(f"result shape {_shape(r)} != tensor shape {_shape(t)}")
    elif isinstance(inst, StoreInst):
        v, t = inst.src, inst.dst
        if not (_same_class(v.dtype, t.dtype) and (t.dtype.is_float or v.dtype is t.dtype)):
            raise _Fail(f"cannot store {v.dtype.name} into {t.dtype.name} @{t.tensor.name}")
        if isinstance(inst, GenericStore):
            n = _check_index(inst.index, t.shape[0])
            if not (isinstance(v, ScalarValue) or v.shape == (n,) + t.shape[1:]):
                raise _Fail(
                    f"stored shape {_shape(v)} != scattered shape [{n}]+{list(t.shape[1:])}"
                )
        elif not (isinstance(v, ScalarValue) or v.shape == t.shape):
            raise _Fail(f"stored shape {_shape(v)} != tensor shape {_shape(t)}")
    elif isinstance(inst, UnaryOp):
        _check_unary(inst)
    elif isinstance(inst, BinaryOp):
        _check_elementwise(inst, inst.operands)
        r = inst.result
        assert r is not None
        a, b = inst.operands
        if inst.kind in COMPARE_KINDS:
            if r.dtype is not uint8:
                raise _Fail(f"a comparison produces uint8, not {r.dtype.name}")
            _need(
                _same_class(a.dtype, b.dtype),
                "comparison operands must both be float or both integer",
            )
        else:
            if not (_same_class(a.dtype, r.dtype) and _same_class(b.dtype, r.dtype)):
                raise _Fail(
                    f"operands {a.dtype.name}, {b.dtype.name} do not match a {r.dtype.name} result"
                )
            if inst.kind in INT_ONLY_BINARY and not r.dtype.is_integer:
                raise _Fail(f"'{inst.kind}' needs integer operands")
    elif isinstance(inst, SelectOp):
        _check_elementwise(inst, inst.operands)
        p, a, b = inst.operands
        r = inst.result
        assert r is not None
        if not (isinstance(p, Value) and p.dtype is uint8):
            raise _Fail(f"the predicate must be a uint8 value, not {p.dtype.name}")
        if not (_same_class(a.dtype, r.dtype) and _same_class(b.dtype, r.dtype)):
            raise _Fail(
                f"operands {a.dtype.name}, {b.dtype.name} do not match a {r.dtype.name} result"
            )
    elif isinstance(inst, TensorContractOp):
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
            raise _Fail(f"contraction sizes differ: stationary {_shape(s)}, moving {_shape(m)}")
        if r.shape != (s.shape[1], m.shape[1]):
            raise _Fail(f"result shape {_shape(r)} != [{s.shape[1]},{m.shape[1]}]")
    elif isinstance(inst, TensorScalarGEPOp):
        src, sc = inst.operands
        t = inst.dst
        _need(isinstance(src, Value), "the first operand must be a value")
        if src.shape != t.shape:
            raise _Fail(f"source shape {_shape(src)} != tensor shape {_shape(t)}")
        _need(
            _same_class(src.dtype, t.dtype) and _same_class(sc.dtype, t.dtype),
            "operand and tensor dtypes differ in kind",
        )
        if t.dtype not in inst.allowed:
            raise _Fail(f"@{t.tensor.name} is {t.dtype.name}, not one of the allowed dtypes")
        if inst.kind in INT_ONLY_BINARY and not t.dtype.is_integer:
            raise _Fail(f"'{inst.kind}' needs integers")
    elif isinstance(inst, OffloadedMemCpy):
        s_ap, d = inst.src, inst.dst
        if s_ap.shape != d.shape:
            raise _Fail(f"shapes differ: {_shape(s_ap)} -> {_shape(d)}")
        if not (_same_class(s_ap.dtype, d.dtype) and (d.dtype.is_float or s_ap.dtype is d.dtype)):
            raise _Fail(f"cannot copy {s_ap.dtype.name} into {d.dtype.name}")
    elif isinstance(inst, CallOp):
        _check_call(f, inst)
    elif isinstance(inst, OpaqueOp):
        _need(bool(inst.kernel), "an opaque op needs a kernel name")


def _check_unary(inst: UnaryOp) -> None:
    (d,) = inst.operands
    r = inst.result
    assert r is not None
    _need(isinstance(d, Value), "the operand must be a value")
    if d.shape != r.shape:
        raise _Fail(f"operand shape {_shape(d)} != result shape {_shape(r)}")
    if inst.kind == "cast":
        return
    if inst.kind == "bitcast":
        if d.dtype.bits != r.dtype.bits:
            raise _Fail(f"bitcast {d.dtype.name} -> {r.dtype.name} changes the width")
        return
    if not _same_class(d.dtype, r.dtype):
        raise _Fail(f"'{inst.kind}' cannot turn {d.dtype.name} into {r.dtype.name}; use cast")
    if not (r.dtype.is_float or inst.kind not in FLOAT_ONLY_UNARY):
        raise _Fail(f"'{inst.kind}' needs a float dtype")


def _check_elementwise(inst: Instruction, ops: list) -> None:
    r = inst.result
    assert r is not None
    _need(any(isinstance(o, Value) for o in ops), "at least one operand must be a value")
    for o in ops:
        if not (isinstance(o, ScalarValue) or o.shape == r.shape):
            raise _Fail(
                f"operand %{getattr(o, 'name', '?')} shape {_shape(o)} != result shape {_shape(r)}"
            )


def _check_call(f: Function, inst: CallOp) -> None:
    m = f.module
    if m is None:
        return
    if not m.has_function(inst.callee):
        raise _Fail(f"call to undefined function @{inst.callee}")
    g = m.get_function(inst.callee)
    if len(inst.ins) != len(g.inputs):
        raise _Fail(f"@{g.name} takes {len(g.inputs)} inputs, {len(inst.ins)} given")
    if len(inst.outs) != len(g.outputs):
        raise _Fail(f"@{g.name} has {len(g.outputs)} outputs, {len(inst.outs)} given")
    for a, t in zip(inst.ins + inst.outs, g.inputs + g.outputs, strict=True):
        if a.shape != t.shape:
            raise _Fail(
                f"@{a.tensor.name} {_shape(a)} does not match @{g.name}'s @{t.name} {_shape(t)}"
            )
        if not _same_class(a.dtype, t.dtype):
            raise _Fail(
                f"@{a.tensor.name} {a.dtype.name} does not match @{g.name}'s @{t.name} {t.dtype.name}"
            )
