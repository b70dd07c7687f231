"""HLO shapes and layouts: the model and their canonical text.

An array shape prints ``f32[2,3]{1,0}``; a dynamic dimension prints ``<=4`` (bounded) or ``?``
(unbounded); a tuple prints ``(s32[], f32[2]{0})`` with XLA's ``/*index=N*/`` comment before every
fifth element. A layout keeps its minor-to-major order and, verbatim, the text after ``:`` (tiles
``T(8,128)(2,1)``, element size ``E(4)``, memory space ``S(1)`` ...).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from pyprecision.hlo.types import PrimitiveType, is_sub_byte, type_name

_E_FIELD = re.compile(r"E\((\d+)\)")
_S_FIELD = re.compile(r"S\((\d+)\)")

#: Dimension size used for an unbounded dynamic dimension (``?``).
UNBOUNDED = -1


@dataclass(frozen=True)
class Layout:
    """``{minor_to_major[:extras]}``; ``extras`` is the verbatim text after the colon (or "")."""

    minor_to_major: tuple[int, ...] = ()
    extras: str = ""

    @property
    def element_size_in_bits(self) -> int:
        """The ``E(n)`` field, 0 when absent (XLA's default: the type's natural size)."""
        m = _E_FIELD.search(self.extras)
        return int(m.group(1)) if m else 0

    @property
    def memory_space(self) -> int:
        """The ``S(n)`` field, 0 when absent."""
        m = _S_FIELD.search(self.extras)
        return int(m.group(1)) if m else 0

    def without_element_size(self) -> Layout:
        """The same layout with ``E(n)`` removed (XLA's ChangeElementType to a byte-sized type)."""
        if "E(" not in self.extras:
            return self
        return Layout(self.minor_to_major, _E_FIELD.sub("", self.extras))

    def to_text(self) -> str:
        """``{1,0}`` or ``{0:E(4)}``."""
        body = ",".join(str(d) for d in self.minor_to_major)
        return "{" + body + (":" + self.extras if self.extras else "") + "}"


@dataclass(frozen=True)
class Shape:
    """An array shape (element type, dims, layout) or a tuple shape (``tuple_shapes``).

    ``index_comments`` records whether a tuple of six or more elements printed XLA's
    ``/*index=N*/`` comments (so text without them prints back without them).
    """

    element_type: PrimitiveType
    dimensions: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple[Shape, ...] = ()
    index_comments: bool = True

    # -- construction -----------------------------------------------------------------------
    @staticmethod
    def array(element_type: PrimitiveType, dims: tuple[int, ...] | list[int] = (),
              layout: Layout | None = None) -> Shape:
        """An array shape with static dimensions."""
        d = tuple(int(x) for x in dims)
        return Shape(element_type, d, (False,) * len(d), layout)

    @staticmethod
    def tuple_of(elements: list[Shape] | tuple[Shape, ...], index_comments: bool = True) -> Shape:
        """A tuple shape."""
        return Shape(PrimitiveType.TUPLE, tuple_shapes=tuple(elements),
                     index_comments=index_comments)

    # -- queries ----------------------------------------------------------------------------
    @property
    def is_tuple(self) -> bool:
        """True for TUPLE shapes."""
        return self.element_type == PrimitiveType.TUPLE

    @property
    def rank(self) -> int:
        """Number of dimensions of an array shape."""
        return len(self.dimensions)

    def leaves(self) -> list[Shape]:
        """Array (non-tuple) sub-shapes in order, depth first."""
        if not self.is_tuple:
            return [self]
        out: list[Shape] = []
        for s in self.tuple_shapes:
            out.extend(s.leaves())
        return out

    def equal(self, other: Shape) -> bool:
        """XLA's Shape::Equal: element types, dimensions, dynamism, layouts (text ignored)."""
        if self.element_type != other.element_type:
            return False
        if self.is_tuple:
            return len(self.tuple_shapes) == len(other.tuple_shapes) and all(
                a.equal(b) for a, b in zip(self.tuple_shapes, other.tuple_shapes, strict=True))
        return (self.dimensions == other.dimensions and self.dynamic == other.dynamic
                and self.layout == other.layout)

    # -- transformation ---------------------------------------------------------------------
    def change_element_type(self, t: PrimitiveType) -> Shape:
        """XLA's ShapeUtil::ChangeElementType: every leaf gets ``t``; ``E(n)`` is dropped unless
        ``t`` is itself a sub-byte type."""
        if self.is_tuple:
            return replace(self, tuple_shapes=tuple(s.change_element_type(t)
                                                    for s in self.tuple_shapes))
        layout = self.layout
        if layout is not None and not is_sub_byte(t):
            layout = layout.without_element_size()
        return Shape(t, self.dimensions, self.dynamic, layout, (), self.index_comments)

    def without_layout(self) -> Shape:
        """The same shape with every layout removed (XLA's HumanString form)."""
        if self.is_tuple:
            return replace(self, tuple_shapes=tuple(s.without_layout() for s in self.tuple_shapes))
        return replace(self, layout=None)

    # -- text -------------------------------------------------------------------------------
    def to_text(self, with_layout: bool = True) -> str:
        """Canonical HLO text of the shape."""
        if self.is_tuple:
            parts = []
            for i, s in enumerate(self.tuple_shapes):
                prefix = f"/*index={i}*/" if (i and i % 5 == 0 and self.index_comments) else ""
                parts.append(prefix + s.to_text(with_layout))
            return "(" + ", ".join(parts) + ")"
        dims = []
        for size, dyn in zip(self.dimensions, self.dynamic, strict=True):
            if size == UNBOUNDED:
                dims.append("?")
            else:
                dims.append(("<=" if dyn else "") + str(size))
        text = f"{type_name(self.element_type)}[{','.join(dims)}]"
        if with_layout and self.layout is not None:
            text += self.layout.to_text()
        return text

    def __str__(self) -> str:
        return self.to_text()


@dataclass
class ProgramShape:
    """``(param shapes)->result`` as in ``entry_computation_layout``."""

    parameters: list[Shape] = field(default_factory=list)
    result: Shape | None = None

    def to_text(self, with_layout: bool = True) -> str:
        """``(f32[2]{0}, s32[])->f32[2]{0}`` (the same ``/*index=N*/`` rule as tuples)."""
        parts = []
        for i, s in enumerate(self.parameters):
            prefix = f"/*index={i}*/" if (i and i % 5 == 0) else ""
            parts.append(prefix + s.to_text(with_layout))
        res = self.result.to_text(with_layout) if self.result is not None else "()"
        return "(" + ", ".join(parts) + ")->" + res
