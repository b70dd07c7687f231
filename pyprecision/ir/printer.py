"""The deterministic printer of the IR text form (grammar in docs/ir.md)."""

from __future__ import annotations

import base64

import numpy as np

from pyprecision.ir.core import Block, Function, Module
from pyprecision.ir.dtypes import DType
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.opdef import Attrs, Flag, Int, Ints, Opnd, Opnds, Punct, Str, Sym, View, Views
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


def _attrs(inst: Instruction, piece: Attrs) -> str | None:
    parts = []
    for field, kind, default in piece.entries:
        value = getattr(inst, field)
        if kind == "tensor":
            if not value:
                continue
            items = ", ".join(f"@{t.name}" for t in sorted(value, key=lambda t: t.name))
        else:
            if tuple(value) == tuple(default):
                continue
            items = ", ".join(d.name for d in value)
        parts.append(f"{field} = [{items}]")
    return "{" + ", ".join(parts) + "}" if parts else None


def _piece(inst: Instruction, piece: object) -> str | None:
    if isinstance(piece, Opnd):
        return _operand(getattr(inst, piece.field))
    if isinstance(piece, Opnds):
        return ", ".join(_operand(o) for o in getattr(inst, piece.field))
    if isinstance(piece, View):
        return _ap(getattr(inst, piece.field))
    if isinstance(piece, Views):
        return f"{piece.word}(" + ", ".join(_ap(a) for a in getattr(inst, piece.field)) + ")"
    if isinstance(piece, Flag):
        return piece.word if getattr(inst, piece.field) else None
    if isinstance(piece, Ints):
        return f"{piece.word}=[" + ",".join(str(int(v)) for v in getattr(inst, piece.field)) + "]"
    if isinstance(piece, Int):
        return f"{piece.word}={int(getattr(inst, piece.field))}"
    if isinstance(piece, Str):
        return f'"{getattr(inst, piece.field)}"'
    if isinstance(piece, Sym):
        return f"@{getattr(inst, piece.field)}"
    if isinstance(piece, Attrs):
        return _attrs(inst, piece)
    raise TypeError(f"unknown syntax piece {piece!r}")


def _body(inst: Instruction) -> str:
    """The keyword and the declared syntax: words joined by spaces, ``,`` glued to the left."""
    if not inst.SYNTAX and not inst.WORDS:
        raise TypeError(f"cannot print {type(inst).__name__}")
    words = [inst.word()]
    for piece in inst.SYNTAX:
        if isinstance(piece, Punct) and piece.text == ",":
            words[-1] += ","
            continue
        text = piece.text if isinstance(piece, Punct) else _piece(inst, piece)
        if text is not None:
            words.append(text)
    return " ".join(words)


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
