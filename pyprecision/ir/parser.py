"""Parser of the IR text form (inverse of printer.to_text). Errors are ParseError ``file:line:col``."""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.errors import ParseError
from pyprecision.ir import compute as _compute  # noqa: F401 - registers the compute ops
from pyprecision.ir import memory as _memory  # noqa: F401 - registers the memory ops
from pyprecision.ir import reduce_ops as _reduce_ops  # noqa: F401 - registers the reduce ops
from pyprecision.ir import shape_ops as _shape_ops  # noqa: F401 - registers the shape ops
from pyprecision.ir.core import Block, Function, Module
from pyprecision.ir.dtypes import DType, dtype_from_name
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.lexer import Line, Token, parse_number, tokenize_line
from pyprecision.ir.opdef import (
    OPS,
    Attrs,
    Flag,
    Int,
    Ints,
    Opnd,
    Opnds,
    Punct,
    Str,
    Sym,
    View,
    Views,
)
from pyprecision.ir.tensors import TENSOR_KINDS, NeuronAP, SingleValueTensor, Tensor
from pyprecision.ir.values import ScalarValue, Value

__all__ = ["Location", "parse"]


@dataclass(frozen=True)
class Location:
    """Where an instruction was parsed from; ``str`` is ``file:line:col``."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"


class _FunctionParser:
    def __init__(self, f: Function, filename: str):
        self.f, self.filename = f, filename
        self.values: dict[str, Value] = {}
        self.block: Block | None = None

    # -- pieces ----------------------------------------------------------------------------------
    def dtype(self, ln: Line) -> DType:
        t = ln.expect("ident", what="a dtype")
        try:
            return dtype_from_name(t.text)
        except KeyError:
            raise ln.error(f"unknown dtype {t.text!r}", t) from None

    def type_(self, ln: Line) -> tuple[DType, tuple[int, ...]]:
        dt = self.dtype(ln)
        ln.expect("punct", "[")
        dims: list[int] = []
        while not ln.accept("punct", "]"):
            if dims:
                ln.expect("punct", ",")
            t = ln.expect("number", what="a dimension")
            if not t.text.isdigit() or int(t.text) <= 0:
                raise ln.error(f"dimension must be a positive integer, got {t.text!r}", t)
            dims.append(int(t.text))
        if not dims:
            raise ln.error("a shape needs at least one dimension")
        return dt, tuple(dims)

    def value_ref(self, ln: Line) -> Value:
        t = ln.expect("value", what="a %value")
        v = self.values.get(t.text)
        if v is None:
            raise ln.error(f"use of undefined value %{t.text}", t)
        return v

    def operand(self, ln: Line) -> Value | ScalarValue:
        if ln.at("value"):
            return self.value_ref(ln)
        if ln.at("ident"):
            dt = self.dtype(ln)
            return ScalarValue(parse_number(ln.expect("number", what="a number"), dt, ln), dt)
        raise ln.error("expected an operand (%value or 'dtype number')")

    def tensor_ref(self, ln: Line) -> Tensor:
        t = ln.expect("tensor", what="a @tensor")
        if not self.f.has_tensor(t.text):
            raise ln.error(f"use of undeclared tensor @{t.text}", t)
        return self.f.get_tensor(t.text)

    def ap(self, ln: Line, role: str, indexed: bool = False) -> NeuronAP:
        tensor = self.tensor_ref(ln)
        index = None
        if indexed:
            ln.expect("punct", "[")
            index = self.value_ref(ln)
            ln.expect("punct", "]")
        re_dt = self.dtype(ln) if ln.accept("ident", "as") else None
        ap = NeuronAP(tensor, re_dt, role)
        ap.index = index
        return ap

    def ap_list(self, ln: Line, word: str, role: str) -> list[NeuronAP]:
        ln.expect("ident", word)
        ln.expect("punct", "(")
        aps: list[NeuronAP] = []
        while not ln.accept("punct", ")"):
            if aps:
                ln.expect("punct", ",")
            aps.append(self.ap(ln, role))
        return aps

    def attrs(self, ln: Line, piece: Attrs) -> dict[str, Any]:
        kinds = {name: kind for name, kind, _ in piece.entries}
        out: dict[str, Any] = {name: default for name, _, default in piece.entries}
        if not ln.accept("punct", "{"):
            return out
        while True:
            key = ln.expect("ident", what="an attribute name")
            if key.text not in kinds:
                raise ln.error(f"unknown attribute {key.text!r}", key)
            ln.expect("punct", "=")
            ln.expect("punct", "[")
            items: list[Any] = []
            while not ln.accept("punct", "]"):
                if items:
                    ln.expect("punct", ",")
                items.append(self.tensor_ref(ln) if kinds[key.text] == "tensor" else self.dtype(ln))
            out[key.text] = set(items) if kinds[key.text] == "tensor" else tuple(items)
            if ln.accept("punct", "}"):
                return out
            ln.expect("punct", ",")

    def ints(self, ln: Line, word: str) -> tuple[int, ...]:
        ln.expect("ident", word, what=f"'{word}='")
        ln.expect("punct", "=")
        ln.expect("punct", "[")
        out: list[int] = []
        while not ln.accept("punct", "]"):
            if out:
                ln.expect("punct", ",")
            out.append(self.integer(ln))
        return tuple(out)

    def integer(self, ln: Line) -> int:
        t = ln.expect("number", what="an integer")
        body = t.text.lstrip("+-")
        if not body.isdigit() or len(body) > 18:
            raise ln.error(f"expected an integer, found {t.text!r}", t)
        return int(t.text)

    def piece(self, ln: Line, piece: object, fields: dict[str, Any]) -> None:
        """Parse one declared syntax piece into ``fields``."""
        if isinstance(piece, Punct):
            ln.expect("punct", piece.text)
        elif isinstance(piece, Opnd):
            tok = ln.peek()
            v = self.value_ref(ln) if piece.accepts == "value" else self.operand(ln)
            if piece.accepts == "scalar" and not isinstance(v, ScalarValue):
                raise ln.error("this operand needs an immediate scalar ('dtype number')", tok)
            fields[piece.field] = v
        elif isinstance(piece, Opnds):
            vals = [self.value_ref(ln)]
            while ln.accept("punct", ","):
                vals.append(self.value_ref(ln))
            fields[piece.field] = vals
        elif isinstance(piece, View):
            ap = self.ap(ln, piece.role, indexed=piece.index is not None)
            fields[piece.field] = ap
            if piece.index is not None:
                fields[piece.index] = ap.index
        elif isinstance(piece, Views):
            fields[piece.field] = self.ap_list(ln, piece.word, piece.role)
        elif isinstance(piece, Flag):
            fields[piece.field] = ln.accept("ident", piece.word) is not None
        elif isinstance(piece, Ints):
            fields[piece.field] = self.ints(ln, piece.word)
        elif isinstance(piece, Int):
            ln.expect("ident", piece.word, what=f"'{piece.word}='")
            ln.expect("punct", "=")
            fields[piece.field] = self.integer(ln)
        elif isinstance(piece, Str):
            fields[piece.field] = ln.expect("string", what=f'a "{piece.field}" name').text
        elif isinstance(piece, Sym):
            fields[piece.field] = ln.expect("tensor", what=f"a @{piece.field} name").text
        elif isinstance(piece, Attrs):
            fields.update(self.attrs(ln, piece))
        else:  # pragma: no cover - a declaration error
            raise TypeError(f"unknown syntax piece {piece!r}")

    # -- lines -------------------------------------------------------------------------------------
    def tensor_decl(self, ln: Line) -> None:
        name = ln.expect("tensor", what="a @tensor name")
        if self.f.has_tensor(name.text):
            raise ln.error(f"redefinition of tensor @{name.text}", name)
        ln.expect("punct", ":")
        kind = ln.expect("ident", what="a tensor kind")
        if kind.text not in TENSOR_KINDS:
            raise ln.error(
                f"unknown tensor kind {kind.text!r} (expected one of {', '.join(TENSOR_KINDS)})",
                kind,
            )
        dt, shape = self.type_(ln)
        tensor: Tensor
        eq = ln.accept("punct", "=")
        if eq is not None:
            if kind.text != "const":
                raise ln.error("only const tensors have a value", eq)
            init = ln.expect("ident", what="'dense' or 'splat'")
            if init.text == "splat":
                tensor = SingleValueTensor(
                    name.text, shape, dt, parse_number(ln.expect("number"), dt, ln)
                )
            elif init.text == "dense":
                tensor = Tensor(name.text, shape, dt, "const", self.dense(ln, dt, shape))
            else:
                raise ln.error(f"expected 'dense' or 'splat', found {init.text!r}", init)
        else:
            if kind.text == "const":
                raise ln.error("a const tensor needs '= dense \"…\"' or '= splat N'")
            tensor = Tensor(name.text, shape, dt, kind.text)
        ln.end()
        self.f.add_tensor(tensor)

    def dense(self, ln: Line, dt: DType, shape: tuple[int, ...]) -> np.ndarray:
        tok = ln.expect("string", what='a "base64" payload')
        try:
            raw = base64.b64decode(tok.text, validate=True)
        except (binascii.Error, ValueError):
            raise ln.error("invalid base64 payload", tok) from None
        want = math.prod(shape) * dt.itemsize
        if len(raw) != want:
            raise ln.error(
                f"payload has {len(raw)} bytes, {dt.name}{list(shape)} needs {want}", tok
            )
        return (
            np.frombuffer(raw, dtype=dt.np_dtype.newbyteorder("<"))
            .astype(dt.np_dtype)
            .reshape(shape)
        )

    def instruction(self, ln: Line) -> Instruction:
        res_tok = None
        if ln.at("value"):
            res_tok = ln.next("value")
            if res_tok.text in self.values:
                raise ln.error(f"redefinition of value %{res_tok.text}", res_tok)
            ln.expect("punct", "=")
        op = ln.expect("ident", what="an instruction name")
        entry = OPS.get(op.text)
        if entry is None:
            raise ln.error(_unknown_word(op.text), op)
        cls, fixed = entry
        if cls.HAS_RESULT and res_tok is None:
            raise ln.error(f"'{op.text}' produces a value: write '%name = {op.text} ...'", op)
        if not cls.HAS_RESULT and res_tok is not None:
            raise ln.error(f"'{op.text}' produces no value", op)
        fields = dict(fixed)
        for piece in cls.SYNTAX:
            self.piece(ln, piece, fields)
        result = self.result(ln, res_tok) if res_tok is not None else None
        try:
            inst = cls.from_fields(result, **fields)
        except ValueError as e:
            raise ln.error(str(e), op) from None
        ln.end()
        if res_tok is not None:
            self.values[res_tok.text] = inst.result  # type: ignore[assignment]
            self.f.reserve_name(res_tok.text)
        inst.dl = Location(self.filename, ln.lineno, (res_tok or op).col)
        return inst

    def result(self, ln: Line, res_tok: Token) -> Value:
        ln.expect("punct", ":", what="':' and the result type")
        dt, shape = self.type_(ln)
        return Value(res_tok.text, dt, shape)


def _unknown_word(word: str) -> str:
    for cls, _ in OPS.values():
        prefix = getattr(cls, "WORD_PREFIX", None)
        if prefix and word.startswith(prefix):
            return f"unknown {prefix.rstrip('.')} op {word[len(prefix):]!r}"
    return f"unknown instruction {word!r}"


def parse(text: str, filename: str = "<string>", verify: bool = True) -> Module:
    """Parse IR text into a Module; then (by default) run the verifier, which raises VerifyError."""
    module = Module()
    fp: _FunctionParser | None = None
    lines = text.split("\n")
    for lineno, raw in enumerate(lines, 1):
        toks = tokenize_line(raw, lineno, filename)
        if not toks:
            continue
        ln = Line(toks, lineno, filename, raw)
        if fp is None:
            ln.expect("ident", "func", what="'func'")
            name = ln.expect("tensor", what="a @function name")
            if module.has_function(name.text):
                raise ln.error(f"redefinition of function @{name.text}", name)
            ln.expect("punct", "{")
            ln.end()
            fp = _FunctionParser(module.add_function(Function(name.text)), filename)
        elif ln.accept("punct", "}"):
            ln.end()
            fp = None
        elif ln.accept("ident", "tensor"):
            fp.tensor_decl(ln)
        elif ln.at("label"):
            lab = ln.next("label")
            if any(b.name == lab.text for b in fp.f.blocks):
                raise ln.error(f"redefinition of block ^{lab.text}", lab)
            ln.expect("punct", ":")
            ln.end()
            fp.block = fp.f.add_block(lab.text)
        else:
            inst = fp.instruction(ln)
            if fp.block is None:
                fp.block = fp.f.add_block("bb0")
            fp.block.append(inst)
    if fp is not None:
        raise ParseError(
            f"missing '}}' closing function @{fp.f.name}", len(lines), len(lines[-1]) + 1, filename
        )
    if verify:
        from pyprecision.ir.verifier import verify as _verify

        _verify(module)
    return module
