"""Parser of the IR text form (inverse of printer.to_text). Errors are ParseError ``file:line:col``."""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.errors import ParseError
from pyprecision.ir.compute import BinaryOp, SelectOp, TensorContractOp, UnaryOp
from pyprecision.ir.core import Block, Function, Module
from pyprecision.ir.dtypes import DType, dtype_from_name
from pyprecision.ir.instructions import BINARY_KINDS, COMPARE_KINDS, UNARY_KINDS, Instruction
from pyprecision.ir.lexer import Line, Token, parse_number, tokenize_line
from pyprecision.ir.memory import (
    AffineLoad,
    AffineStore,
    CallOp,
    CallOpBase,
    GenericLoad,
    GenericStore,
    OffloadedMemCpy,
    OpaqueOp,
    SBAtomLoad,
    TensorScalarGEPOp,
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

    def attrs(self, ln: Line, allowed: tuple[str, ...]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        if not ln.accept("punct", "{"):
            return out
        while True:
            key = ln.expect("ident", what="an attribute name")
            if key.text not in allowed:
                raise ln.error(f"unknown attribute {key.text!r}", key)
            ln.expect("punct", "=")
            ln.expect("punct", "[")
            items: list[Any] = []
            while not ln.accept("punct", "]"):
                if items:
                    ln.expect("punct", ",")
                items.append(self.tensor_ref(ln) if key.text.startswith("call") else self.dtype(ln))
            out[key.text] = items
            if ln.accept("punct", "}"):
                return out
            ln.expect("punct", ",")

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
        handler = self._handler(op.text)
        if handler is None:
            raise ln.error(f"unknown instruction {op.text!r}", op)
        wants_result, fn = handler
        if wants_result and res_tok is None:
            raise ln.error(f"'{op.text}' produces a value: write '%name = {op.text} ...'", op)
        if not wants_result and res_tok is not None:
            raise ln.error(f"'{op.text}' produces no value", op)
        inst = fn(ln, op, res_tok)
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

    def _handler(self, name: str) -> tuple[bool, Callable[[Line, Token, Any], Instruction]] | None:
        if name in UNARY_KINDS:
            return True, lambda ln, op, r: UnaryOp(op.text, self.value_ref(ln), self.result(ln, r))
        if name in BINARY_KINDS:
            return True, self._binary
        if name.startswith("tensor_scalar_gep."):
            return False, self._gep
        return {
            "affine_load": (True, self._load),
            "sb_atom_load": (True, self._load),
            "generic_load": (True, self._load),
            "select": (True, self._select),
            "matmul": (True, self._matmul),
            "affine_store": (False, self._store),
            "generic_store": (False, self._store),
            "offloaded_memcpy": (False, self._memcpy),
            "call": (False, self._call),
            "opaque": (False, self._call),
        }.get(name)

    def _binary(self, ln: Line, op: Token, r: Token) -> Instruction:
        a = self.operand(ln)
        ln.expect("punct", ",")
        return BinaryOp(op.text, a, self.operand(ln), self.result(ln, r))

    def _select(self, ln: Line, op: Token, r: Token) -> Instruction:
        p = self.value_ref(ln)
        ln.expect("punct", ",")
        a = self.operand(ln)
        ln.expect("punct", ",")
        return SelectOp(p, a, self.operand(ln), self.result(ln, r))

    def _matmul(self, ln: Line, op: Token, r: Token) -> Instruction:
        s = self.value_ref(ln)
        ln.expect("punct", ",")
        return TensorContractOp(s, self.value_ref(ln), self.result(ln, r))

    def _load(self, ln: Line, op: Token, r: Token) -> Instruction:
        ap = self.ap(ln, "load", indexed=op.text == "generic_load")
        if op.text == "sb_atom_load":
            bc = ln.accept("ident", "broadcast") is not None
            return SBAtomLoad(ap, self.result(ln, r), has_partition_broadcast=bc)
        if op.text == "generic_load":
            return GenericLoad(ap, self.result(ln, r), ap.index)
        return AffineLoad(ap, self.result(ln, r))

    def _store(self, ln: Line, op: Token, r: Any) -> Instruction:
        v = self.operand(ln)
        ln.expect("punct", ",")
        ap = self.ap(ln, "store", indexed=op.text == "generic_store")
        return GenericStore(v, ap, ap.index) if op.text == "generic_store" else AffineStore(v, ap)

    def _gep(self, ln: Line, op: Token, r: Any) -> Instruction:
        kind = op.text.split(".", 1)[1]
        if kind not in BINARY_KINDS or kind in COMPARE_KINDS:
            raise ln.error(f"unknown tensor_scalar_gep op {kind!r}", op)
        src = self.operand(ln)
        ln.expect("punct", ",")
        sc_tok = ln.peek()
        sc = self.operand(ln)
        if not isinstance(sc, ScalarValue):
            raise ln.error("tensor_scalar_gep needs an immediate scalar second operand", sc_tok)
        ln.expect("punct", "->")
        dst = self.ap(ln, "store")
        allowed = self.attrs(ln, ("allowed",)).get("allowed")
        return TensorScalarGEPOp(kind, src, sc, dst, allowed)

    def _memcpy(self, ln: Line, op: Token, r: Any) -> Instruction:
        src = self.ap(ln, "load")
        ln.expect("punct", "->")
        return OffloadedMemCpy(src, self.ap(ln, "store"))

    def _call(self, ln: Line, op: Token, r: Any) -> Instruction:
        if op.text == "call":
            target = ln.expect("tensor", what="a @function name").text
        else:
            target = ln.expect("string", what='a "kernel" name').text
        ins = self.ap_list(ln, "ins", "load")
        outs = self.ap_list(ln, "outs", "store")
        inst: CallOpBase = (
            CallOp(target, ins, outs) if op.text == "call" else OpaqueOp(target, ins, outs)
        )
        a = self.attrs(ln, ("call_ins", "call_outs"))
        inst.call_ins = set(a.get("call_ins", []))
        inst.call_outs = set(a.get("call_outs", []))
        return inst


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
