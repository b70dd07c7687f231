"""The deterministic printer of the IR text form (grammar in docs/ir.md)."""

from __future__ import annotations

import base64

import numpy as np

from pyprecision.ir.compute import BinaryOp, SelectOp, TensorContractOp, UnaryOp
from pyprecision.ir.core import Block, Function, Module
from pyprecision.ir.dtypes import INTEGER_DTYPES, DType
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.memory import (
    CallOp,
    CallOpBase,
    LoadInst,
    OffloadedMemCpy,
    SBAtomLoad,
    StoreInst,
    TensorScalarGEPOp,
)
from pyprecision.ir.tensors import NeuronAP, SingleValueTensor, Tensor
from pyprecision.ir.values import ScalarValue, Value

__all__ = ["format_number", "function_to_text", "instruction_to_text", "tensor_to_text", "to_text"]


def format_number(x: float) -> str:
    """Exact text of a scalar: Python ``repr`` for floats (shortest round-tripping), decimal for ints."""
    if isinstance(x, float):
        return repr(x)
    return str(int(x))


def type_text(dtype: DType, shape: tuple[int, ...]) -> str:
    """``float32[4,8]``."""
    return f"{dtype.name}[{','.join(str(s) for s in shape)}]"


def _operand(op: object) -> str:
    if isinstance(op, Value):
        return f"%{op.name}"
    if isinstance(op, ScalarValue):
        return f"{op.dtype.name} {format_number(op.value)}"
    raise TypeError(f"not an operand: {op!r}")


def _ap(ap: NeuronAP) -> str:
    s = f"@{ap.tensor.name}"
    if ap.index is not None:
        s += f"[%{ap.index.name}]"
    if ap.reinterpret is not None:
        s += f" as {ap.reinterpret.name}"
    return s


def _call_attrs(inst: CallOpBase) -> str:
    parts = []
    if inst.call_ins:
        parts.append(
            "call_ins = ["
            + ", ".join(f"@{t.name}" for t in sorted(inst.call_ins, key=lambda t: t.name))
            + "]"
        )
    if inst.call_outs:
        parts.append(
            "call_outs = ["
            + ", ".join(f"@{t.name}" for t in sorted(inst.call_outs, key=lambda t: t.name))
            + "]"
        )
    return " {" + ", ".join(parts) + "}" if parts else ""


def _body(inst: Instruction) -> str:
    if isinstance(inst, LoadInst):
        extra = (
            " broadcast" if isinstance(inst, SBAtomLoad) and inst.has_partition_broadcast else ""
        )
        return f"{inst.opname} {_ap(inst.src)}{extra}"
    if isinstance(inst, StoreInst):
        return f"{inst.opname} {_operand(inst.src)}, {_ap(inst.dst)}"
    if isinstance(inst, (UnaryOp, BinaryOp)):
        return f"{inst.kind} " + ", ".join(_operand(o) for o in inst.operands)
    if isinstance(inst, (SelectOp, TensorContractOp)):
        return f"{inst.opname} " + ", ".join(_operand(o) for o in inst.operands)
    if isinstance(inst, TensorScalarGEPOp):
        s = f"tensor_scalar_gep.{inst.kind} {_operand(inst.src)}, {_operand(inst.scalar)} -> {_ap(inst.dst)}"
        if inst.allowed != INTEGER_DTYPES:
            s += " {allowed = [" + ", ".join(d.name for d in inst.allowed) + "]}"
        return s
    if isinstance(inst, OffloadedMemCpy):
        return f"offloaded_memcpy {_ap(inst.src)} -> {_ap(inst.dst)}"
    if isinstance(inst, CallOpBase):
        head = f"call @{inst.callee}" if isinstance(inst, CallOp) else f'opaque "{inst.kernel}"'  # type: ignore[attr-defined]
        ins = ", ".join(_ap(a) for a in inst.ins)
        outs = ", ".join(_ap(a) for a in inst.outs)
        return f"{head} ins({ins}) outs({outs}){_call_attrs(inst)}"
    raise TypeError(f"cannot print {type(inst).__name__}")


def instruction_to_text(inst: Instruction) -> str:
    """One instruction, without indentation or newline."""
    body = _body(inst)
    if inst.result is not None:
        return f"%{inst.result.name} = {body} : {type_text(inst.result.dtype, inst.result.shape)}"
    return body


def _value_bytes(t: Tensor) -> bytes:
    v = np.ascontiguousarray(t.value)
    if v.dtype.byteorder == ">":
        v = v.astype(v.dtype.newbyteorder("<"))
    return v.tobytes()


def tensor_to_text(t: Tensor) -> str:
    """``tensor @w : const float32[8,16] = dense "…"`` (base64 of the little-endian element bytes)."""
    s = f"tensor @{t.name} : {t.kind} {type_text(t.dtype, t.shape)}"
    if isinstance(t, SingleValueTensor):
        s += f" = splat {format_number(t.value)}"  # type: ignore[arg-type]
    elif t.value is not None:
        s += ' = dense "' + base64.b64encode(_value_bytes(t)).decode("ascii") + '"'
    return s


def block_to_text(b: Block) -> str:
    """``^label:`` then one indented instruction per line."""
    lines = [f"^{b.name}:"]
    lines.extend("  " + instruction_to_text(i) for i in b.instructions)
    return "\n".join(lines) + "\n"


def function_to_text(f: Function) -> str:
    """A whole function."""
    out = [f"func @{f.name} {{\n"]
    out.extend(f"  {tensor_to_text(t)}\n" for t in f.tensors)
    out.extend(block_to_text(b) for b in f.blocks)
    out.append("}\n")
    return "".join(out)


def to_text(module: Module | Function) -> str:
    """The module's text: functions in order, separated by one blank line."""
    if isinstance(module, Function):
        return function_to_text(module)
    return "\n".join(function_to_text(f) for f in module.functions)
