"""Parser for XLA's HLO text, as jax ``as_text()`` / ``compiler_ir('hlo')`` and ``--xla_dump_to`` write it.

Both printing styles are read: the new one (``ENTRY main.5 {``, operands by name) and the
~0.4.x dump style (``ENTRY %main.5 (Arg_0.1: f32[2]) -> f32[2] {``, ``%`` names, operand shapes
inline). Errors are :class:`pyprecision.errors.ParseError` with ``file:line:col``.
"""
from __future__ import annotations

import re

from pyprecision.hlo._cursor import Cursor
from pyprecision.hlo._gc import paused_gc
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule, TextStyle
from pyprecision.hlo.shape_text import (
    _parse_shape,
    parse_program_shape,
    parse_shape,
)
from pyprecision.hlo.types import PrimitiveType, type_from_name

_NAME = re.compile(r"%?([A-Za-z0-9_][\w.\-]*)")
_MODULE_NAME = re.compile(r"[^\s,]+")
_OPCODE = re.compile(r"[a-z][a-z0-9\-_]*")
_KEY = re.compile(r"[A-Za-z_][\w.\-]*")
_TYPE_BRACKET = re.compile(r"([a-z][a-z0-9]*)\[")
_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_SECTION_LINE = re.compile(r"(FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*\n")
_CALLEE = re.compile(r"%?([A-Za-z0-9_][\w.\-]*)")
_CALL_KEYS = ("to_apply", "calls", "condition", "body", "branch_computations", "select",
              "scatter", "true_computation", "false_computation", "called_computations",
              "async_execution_thread_computations")


# -- instructions ---------------------------------------------------------------------------
def _looks_like_shape(cur: Cursor) -> bool:
    if cur.peek() == "(":
        return True
    m = _TYPE_BRACKET.match(cur.text, cur.pos)
    return bool(m and type_from_name(m.group(1)) is not None)


def _parse_instruction(cur: Cursor, style: TextStyle,
                       pending: list[tuple[HloInstruction, str, int]]) -> HloInstruction:
    text = cur.text
    is_root = False
    if text.startswith("ROOT", cur.pos) and text[cur.pos + 4:cur.pos + 5] in (" ", "\t"):
        is_root = True
        cur.pos += 4
        cur.inline_ws()
    if cur.peek() == "%":
        style.percent = True
    name = cur.match(_NAME, "an instruction name").group(1)
    cur.inline_ws()
    cur.expect("=")
    cur.inline_ws()
    shape = _parse_shape(cur)
    cur.inline_ws()
    opcode = cur.match(_OPCODE, "an opcode").group()
    cur.expect("(")
    inst = HloInstruction(name, opcode, shape, is_root=is_root)
    if opcode == "constant":
        inst.literal_text = cur.raw_value(stop="")
        cur.expect(")")
    elif opcode == "parameter":
        cur.ws()
        inst.parameter_number = cur.integer("a parameter number", 1 << 31)
        cur.ws()
        cur.expect(")")
    else:
        _parse_operands(cur, inst, style, pending)
    while True:
        cur.inline_ws()
        if cur.peek() != ",":
            break
        cur.pos += 1
        cur.inline_ws()
        key = cur.match(_KEY, "an attribute name").group()
        cur.expect("=")
        at = cur.pos
        value = cur.raw_value()
        inst.attributes.append((key, value))
        if key in _CALL_KEYS:
            for m in _CALLEE.finditer(value):
                cur.calls.append((inst, m.group(1), at + m.start(1)))
    return inst


def _parse_operands(cur: Cursor, inst: HloInstruction, style: TextStyle,
                    pending: list[tuple[HloInstruction, str, int]]) -> None:
    text = cur.text
    count = 0
    comments = True
    while True:
        before = cur.pos
        cur.ws()
        if cur.peek() == ")":
            cur.pos += 1
            break
        if count and count % 5 == 0 and "/*index=" not in text[before:cur.pos]:
            comments = False
        if _looks_like_shape(cur):
            shape_at = cur.pos
            cur.inline_shapes.append((inst, count, _parse_shape(cur), shape_at))
            style.operand_shapes = True
            cur.inline_ws()
        at = cur.pos
        if cur.peek() == "%":
            style.percent = True
        name = cur.match(_NAME, "an operand name").group(1)
        pending.append((inst, name, at))
        count += 1
        cur.ws()
        if cur.peek() == ",":
            cur.pos += 1
        elif cur.peek() != ")":
            raise cur.error("expected ',' or ')' after operand")
    if count > 5:
        inst.index_comments = comments
        style.index_comments = comments


# -- computations and module ----------------------------------------------------------------
def _parse_computation(cur: Cursor, style: TextStyle) -> HloComputation:
    text = cur.text
    is_entry = False
    if text.startswith("ENTRY", cur.pos) and text[cur.pos + 5:cur.pos + 6] in (" ", "\t", "%"):
        is_entry = True
        cur.pos += 5
        cur.inline_ws()
    if cur.peek() == "%":
        style.percent = True
    comp_at = cur.pos
    name = cur.match(_NAME, "a computation name").group(1)
    comp = HloComputation(name, is_entry=is_entry)
    cur.located.append((comp, comp_at))
    sig_start = cur.pos
    cur.inline_ws()
    if cur.peek() == "(":
        cur.pos += 1
        cur.raw_value(stop="")  # balanced parameter list
        cur.expect(")")
        cur.inline_ws()
        cur.expect("->")
        cur.inline_ws()
        _parse_shape(cur)
        comp.signature_text = text[sig_start:cur.pos]
    cur.inline_ws()
    if cur.peek() == ",":
        brace = text.find("{", cur.pos)
        line_end = text.find("\n", cur.pos)
        last = text.rfind("{", cur.pos, line_end if line_end >= 0 else len(text))
        if brace < 0 or last < 0:
            raise cur.error("expected '{' to open the computation body")
        comp.header_attributes = text[cur.pos:last].rstrip()
        cur.pos = last
    cur.expect("{")
    pending: list[tuple[HloInstruction, str, int]] = []
    by_name: dict[str, HloInstruction] = {}
    while True:
        cur.ws()
        if cur.peek() == "}":
            cur.pos += 1
            start = cur.pos
            cur.inline_ws()
            if cur.peek() == ",":   # "}, execution_thread=\"host\""
                end = text.find("\n", cur.pos)
                cur.pos = len(text) if end < 0 else end
                comp.footer_attributes = text[start:cur.pos].rstrip()
            else:
                cur.pos = start
            break
        if not cur.peek():
            raise cur.error(f"computation '{name}' is not closed with '}}'")
        at = cur.pos
        inst = _parse_instruction(cur, style, pending)
        cur.located.append((inst, at))
        if inst.name in by_name:
            raise cur.error(f"duplicate instruction name '{inst.name}'", at)
        by_name[inst.name] = inst
        comp.instructions.append(inst)
    for inst, op_name, at in pending:
        op = by_name.get(op_name)
        if op is None:
            raise cur.error(f"unknown operand '{op_name}'", at)
        inst.operands.append(op)
    if not comp.instructions:
        raise cur.error(f"computation '{name}' has no instructions")
    if comp.signature_text:
        comp.signature_snapshot = comp.current_signature()
    return comp


def parse(text: str, filename: str = "<string>", verify: bool = True) -> HloModule:
    """Parse HLO text into an :class:`HloModule` and run the verifier on it (``verify=False``
    skips it: for tools that must read a broken module); raises ParseError ``file:line:col:
    message`` for malformed text and for every verifier rule the module breaks."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")  # CRLF files: same lines and columns
    with paused_gc():
        module = _parse_module(text, filename)
        if verify:
            from pyprecision.hlo.verifier import check

            check(module)
        return module


def _check_inline_shapes(cur: Cursor) -> None:
    """An operand written with its shape ("f32[8] %x") must have that shape (layouts ignored)."""
    from pyprecision.hlo.shape_inference import compatible

    for inst, k, shape, at in cur.inline_shapes:
        op = inst.operands[k]
        if not compatible(shape, op.shape):
            raise cur.error(f"operand {k} of '{inst.name}' is written as "
                            f"{shape.to_text(with_layout=False)}, but '{op.name}' is "
                            f"{op.shape.to_text(with_layout=False)}", at)


def _parse_module(text: str, filename: str) -> HloModule:
    cur = Cursor(text, filename)
    cur.ws()
    cur.expect("HloModule")
    cur.inline_ws()
    module = HloModule(cur.match(_MODULE_NAME, "a module name").group())
    while True:
        cur.inline_ws()
        if cur.peek() != ",":
            break
        cur.pos += 1
        cur.inline_ws()
        key = cur.match(_KEY, "a module attribute name").group()
        cur.expect("=")
        module.attributes.append((key, cur.raw_value()))
    end = cur.pos
    cur.inline_ws()
    module.header_end = text[end:cur.pos]
    if cur.peek() not in ("\n", ""):
        raise cur.error("unexpected text after the module header")
    pre_start = cur.pos
    while True:
        cur.ws()
        m = _SECTION_LINE.match(text, cur.pos)
        if not m:
            break
        nxt = text.find("\n\n", m.end())
        cur.pos = len(text) if nxt < 0 else nxt + 1
    module.preamble = text[pre_start:cur.pos]
    comps: list[HloComputation] = []
    while cur.pos < len(text):
        comp = _parse_computation(cur, module.style)
        sep_start = cur.pos
        cur.ws()
        comp.separator = text[sep_start:cur.pos]
        comps.append(comp)
    if not comps:
        raise cur.error("module has no computations")
    module.computations = comps
    module.filename = filename
    by_name = {c.name: c for c in comps}
    if len(by_name) != len(comps):
        dup = next(c for i, c in enumerate(comps) if c.name in {d.name for d in comps[:i]})
        raise cur.error(f"duplicate computation name '{dup.name}'",
                        next(p for o, p in cur.located if o is dup))
    for inst, cname, at in cur.calls:
        c = by_name.get(cname)
        if c is None:
            raise cur.error(f"unknown computation '{cname}' called by '{inst.name}'", at)
        inst.called_computations.append(c)
    _check_inline_shapes(cur)
    cur.locate()
    return module


__all__ = ["parse", "parse_shape", "parse_program_shape", "PrimitiveType"]
