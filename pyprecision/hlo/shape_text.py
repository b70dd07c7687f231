"""HLO shape text: ``f32[2,3]{1,0}``, tuples, layouts with tiles and element sizes, and the
``entry_computation_layout`` value. A leaf of the parser: the model and the verifier read shapes
through it without importing the parser (which verifies, so imports them)."""
from __future__ import annotations

import re

from pyprecision.hlo._cursor import Cursor
from pyprecision.hlo.shape import UNBOUNDED, Layout, ProgramShape, Shape
from pyprecision.hlo.types import type_from_name

_TYPE_BRACKET = re.compile(r"([a-z][a-z0-9]*)\[")
_SIMPLE_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[((?:\d{1,18}(?:,\d{1,18})*)?)\]"
                           r"(?:\{((?:\d{1,5}(?:,\d{1,5})*)?)\})?(?![{:])")
_ANY_WS = re.compile(r"\s*")
#: Deepest tuple-shape nesting accepted (XLA sets none; real modules nest two or three deep).
MAX_TUPLE_DEPTH = 64

__all__ = ["MAX_TUPLE_DEPTH", "parse_program_shape", "parse_shape"]


# -- shapes ---------------------------------------------------------------------------------
def _parse_shape(cur: Cursor) -> Shape:
    if cur.peek() == "(":
        if cur.depth >= MAX_TUPLE_DEPTH:
            raise cur.error(f"tuple shape nested deeper than {MAX_TUPLE_DEPTH} levels")
        cur.pos += 1
        cur.depth += 1
        try:
            return _parse_tuple_shape(cur)
        finally:
            cur.depth -= 1
    return _parse_array_shape(cur)


def _parse_tuple_shape(cur: Cursor) -> Shape:
    text = cur.text
    elems: list[Shape] = []
    comments = True
    while True:
        before = cur.pos
        cur.ws()
        saw_comment = "/*index=" in text[before:cur.pos]
        if cur.peek() == ")":
            cur.pos += 1
            break
        if len(elems) % 5 == 0 and len(elems) and not saw_comment:
            comments = False
        elems.append(_parse_shape(cur))
        cur.ws()
        if cur.peek() == ",":
            cur.pos += 1
        elif cur.peek() != ")":
            raise cur.error("expected ',' or ')' in tuple shape")
    return Shape.tuple_of(elems, index_comments=comments)


def _parse_array_shape(cur: Cursor) -> Shape:
    text = cur.text
    m = _SIMPLE_ARRAY.match(text, cur.pos)
    if m and (t := type_from_name(m.group(1))) is not None:
        cur.pos = m.end()
        dims = tuple(int(d) for d in m.group(2).split(",") if d)
        layout = None
        if m.group(3) is not None:
            layout = Layout(tuple(int(d) for d in m.group(3).split(",") if d))
        return Shape(t, dims, (False,) * len(dims), layout)
    start = cur.pos
    m = cur.match(_TYPE_BRACKET, "a shape")
    t = type_from_name(m.group(1))
    if t is None:
        raise cur.error(f"unknown element type '{m.group(1)}'", start)
    dims_l: list[int] = []
    dyn: list[bool] = []
    while cur.peek() != "]":
        if cur.text.startswith("<=", cur.pos):
            cur.pos += 2
            dyn.append(True)
            dims_l.append(cur.integer("a dimension size"))
        elif cur.peek() == "?":
            cur.pos += 1
            dyn.append(True)
            dims_l.append(UNBOUNDED)
        else:
            dyn.append(False)
            dims_l.append(cur.integer("a dimension size"))
        if cur.peek() == ",":
            cur.pos += 1
        elif cur.peek() != "]":
            raise cur.error("expected ',' or ']' in shape dimensions")
    cur.pos += 1
    layout = _parse_layout(cur) if cur.peek() == "{" else None
    return Shape(t, tuple(dims_l), tuple(dyn), layout)


def _parse_layout(cur: Cursor) -> Layout:
    """``{1,0}``, ``{}``, ``{0:T(8,128)}``: comma-separated dimension numbers (whitespace of any
    kind around them is skipped; ``{1 0}`` without the comma is an error, never ``{10}``)."""
    cur.expect("{")
    m2m_l: list[int] = []
    text = cur.text
    while True:
        cur.pos = _ANY_WS.match(text, cur.pos).end()  # type: ignore[union-attr]
        if cur.peek() in ("}", ":"):
            break
        if m2m_l:
            cur.expect(",")
            cur.pos = _ANY_WS.match(text, cur.pos).end()  # type: ignore[union-attr]
        if not cur.peek().isdigit():
            raise cur.error("expected a dimension number in the layout")
        m2m_l.append(cur.integer("a layout dimension", 1 << 16))
    m2m = tuple(m2m_l)
    extras = ""
    if cur.peek() == ":":
        cur.pos += 1
        extras = cur.raw_value(stop="")
    cur.expect("}")
    return Layout(m2m, extras)


def parse_shape(text: str) -> Shape:
    """Parse one shape, e.g. ``f32[2,3]{1,0}`` or ``(s32[], bf16[4]{0})``."""
    cur = Cursor(text, "<shape>")
    cur.ws()
    s = _parse_shape(cur)
    cur.ws()
    if cur.pos != len(text):
        raise cur.error("unexpected text after shape")
    return s


def parse_program_shape(raw: str) -> ProgramShape:
    """Parse ``{(f32[2]{0}, s32[])->f32[2]{0}}`` (an ``entry_computation_layout`` value)."""
    cur = Cursor(raw, "<entry_computation_layout>")
    cur.ws()
    braced = cur.peek() == "{"
    if braced:
        cur.pos += 1
    params = _parse_shape(cur)
    cur.ws()
    cur.expect("->")
    cur.ws()
    result = _parse_shape(cur)
    if braced:
        cur.ws()
        cur.expect("}")
    return ProgramShape(list(params.tuple_shapes), result)
