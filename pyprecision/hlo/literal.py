"""Constant literals: reading their values and re-spelling them in another element type.

A literal is kept as the exact text between ``constant(`` and ``)``; values are read from the
number tokens in order (``/*i0=1*/`` comments skipped). Converting a literal rewrites each number
token in place, so braces, spacing and comments stay exactly as XLA printed them. ``{...}`` marks a
constant XLA elided because it is large; its values are unknown.
"""
from __future__ import annotations

import math
import re

import numpy as np

from pyprecision.hlo.shape import Shape
from pyprecision.hlo.types import PrimitiveType, is_float, is_integer, numpy_dtype, type_name

_TOKEN = re.compile(
    r"/\*.*?\*/"
    r"|(-?nan(?:\(0x[0-9a-fA-F]+\))?|-?inf|true|false"
    r"|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", re.S)


def is_elided(text: str) -> bool:
    """True for XLA's ``{...}`` placeholder of a large constant."""
    return "..." in text


def _tokens(text: str) -> list[str]:
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1) is not None]


def _float_value(tok: str) -> float:
    if "nan" in tok:
        return -math.nan if tok.startswith("-") else math.nan
    if tok == "true":
        return 1.0
    if tok == "false":
        return 0.0
    return float(tok)


def _tuple_parts(text: str, count: int, shape: Shape) -> list[str]:
    """The verbatim element texts of a tuple literal ``( a, b )`` (whitespace kept)."""
    from pyprecision.hlo.attrs import scan_balanced

    body = text.strip()
    if not (body.startswith("(") and body.endswith(")")):
        raise ValueError(f"tuple constant must be parenthesized, got {body[:20]!r}")
    lead = text.index("(")
    inner = text[lead + 1:text.rindex(")")]
    parts: list[str] = []
    i = 0
    while i <= len(inner):
        j = scan_balanced(inner, i, ",")
        parts.append(inner[i:j])
        i = j + 1
    if len(parts) == 1 and not parts[0].strip():
        parts = []
    if len(parts) != count:
        raise ValueError(f"tuple constant has {len(parts)} elements, shape {shape} needs {count}")
    return parts


def literal_to_value(text: str, shape: Shape) -> np.ndarray | tuple:
    """Like :func:`literal_to_array`, and a tuple constant ``( {1, 2}, 3 )`` gives a tuple of
    values (nested tuples nest)."""
    if not shape.is_tuple:
        return literal_to_array(text, shape)
    if is_elided(text):
        raise ValueError("constant values were elided by XLA ({...})")
    parts = _tuple_parts(text, len(shape.tuple_shapes), shape)
    return tuple(literal_to_value(p, s) for p, s in zip(parts, shape.tuple_shapes, strict=True))


def convert_literal_to_shape(text: str, shape: Shape, new_shape: Shape) -> str:
    """Re-spell a literal of ``shape`` for ``new_shape`` (same structure; leaves whose type
    changed to F32 are converted with :func:`convert_literal_text`, others kept verbatim)."""
    if not shape.is_tuple:
        if shape.element_type == new_shape.element_type:
            return text
        return convert_literal_text(text, shape.element_type, new_shape.element_type)
    if is_elided(text):
        return text
    parts = _tuple_parts(text, len(shape.tuple_shapes), shape)
    new = [convert_literal_to_shape(p, s, n)
           for p, s, n in zip(parts, shape.tuple_shapes, new_shape.tuple_shapes, strict=True)]
    lead, tail = text.index("("), text.rindex(")")
    return text[:lead + 1] + ",".join(new) + text[tail:]


def literal_to_array(text: str, shape: Shape) -> np.ndarray:
    """Values of an array constant as a NumPy array of the shape's element type.

    Floats follow XLA's parser: the decimal is read as a double, then rounded to the element type.
    Raises ValueError for tuple constants, elided ``{...}`` constants, or a wrong value count.
    """
    if shape.is_tuple:
        raise ValueError("tuple constants are not supported as arrays")
    if is_elided(text):
        raise ValueError("constant values were elided by XLA ({...})")
    toks = _tokens(text)
    count = int(np.prod(shape.dimensions, dtype=np.int64)) if shape.dimensions else 1
    if len(toks) != count:
        raise ValueError(f"constant has {len(toks)} values, shape {shape} needs {count}")
    t = shape.element_type
    dtype = numpy_dtype(t)
    if t == PrimitiveType.PRED:
        vals = np.array([tok in ("true", "1") for tok in toks], dtype=np.bool_)
    elif is_integer(t):
        vals = np.array([int(tok) for tok in toks], dtype=dtype)
    elif is_float(t):
        vals = np.array([_float_value(tok) for tok in toks], dtype=np.float64).astype(dtype)
    else:
        raise ValueError(f"constants of type {type_name(t)} are not supported")
    return vals.reshape(shape.dimensions)


def format_f32(value: float) -> str:
    """XLA's RoundTripFpToString for float: ``%.6g``, or ``%.9g`` when that does not round-trip;
    NaN and infinity spelt ``nan``/``-nan``/``inf``/``-inf`` (non-default NaN payload as
    ``nan(0x...)``)."""
    v = np.float32(value)
    if np.isnan(v):
        bits = int(np.array(v, dtype=np.float32).view(np.uint32))
        text = "-nan" if bits >> 31 else "nan"
        payload = bits & 0x7FFFFF
        if payload != 0x400000:
            text += f"(0x{payload:x})"
        return text
    if np.isinf(v):
        return "-inf" if v < 0 else "inf"
    text = f"{float(v):.6g}"
    if np.float32(float(text)) != v:
        text = f"{float(v):.9g}"
    return text


def convert_literal_text(text: str, src: PrimitiveType, dst: PrimitiveType) -> str:
    """Re-spell a float literal of type ``src`` as type ``dst`` (F32 only, what the passes need).

    Each printed decimal is first rounded to ``src`` (as XLA's parser does: double, then the
    type), then converted to ``dst`` and printed with :func:`format_f32`.
    """
    if dst != PrimitiveType.F32:
        raise ValueError("only conversion to f32 is implemented")
    if is_elided(text):
        return text
    matches = list(_TOKEN.finditer(text))
    numbers = [m for m in matches if m.group(1) is not None]
    values = np.array([_float_value(m.group(1)) for m in numbers], dtype=np.float64)
    with np.errstate(over="ignore"):
        f32 = values.astype(numpy_dtype(src)).astype(np.float32)
    pieces = []
    last = 0
    for m, v in zip(numbers, f32, strict=True):
        pieces.append(text[last:m.start()])
        pieces.append(format_f32(float(v)))
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces)
