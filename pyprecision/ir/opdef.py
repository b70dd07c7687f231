"""Op declarations: the text syntax of an instruction as data, read by the printer, the parser and
``clone`` (xDSL's irdl definitions are the model).

An instruction class declares, once:

* ``WORDS`` — the keyword(s) that start its text, each with the fields the keyword fixes
  (``{"exp": {"kind": "exp"}}``); ``word()`` gives the keyword of an instance;
* ``SYNTAX`` — a tuple of pieces (below) naming, in text order, the fields its constructor takes;
  a ``: T`` result type follows when the class ``HAS_RESULT``;
* ``check(f)`` — its dtype/shape rule (raises ``RuleViolation``);
* ``evaluate(ev)`` — its semantics on NumPy data, against the small ``ev`` interface the emulator
  implements (``ir`` never imports the cast core; the emulator injects the numerics).

Every field a piece names is read back by ``getattr(inst, field)`` and passed to the constructor by
keyword (``cls.from_fields``), so printing, parsing and cloning never need a per-op copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyprecision.ir.instructions import Instruction

__all__ = [
    "OPS",
    "Attrs",
    "Flag",
    "Imm",
    "Int",
    "Ints",
    "Opnd",
    "Opnds",
    "Punct",
    "Str",
    "Sym",
    "Val",
    "View",
    "Views",
    "register",
]


@dataclass(frozen=True)
class Opnd:
    """An operand: ``%v`` or an immediate ``dtype number``; ``accepts`` is ``"any"``, ``"value"``
    (an SSA value only) or ``"scalar"`` (an immediate only)."""

    field: str
    accepts: str = "any"


def Val(field: str) -> Opnd:  # noqa: N802 - reads as a piece name
    """An operand that must be an SSA value."""
    return Opnd(field, "value")


def Imm(field: str) -> Opnd:  # noqa: N802 - reads as a piece name
    """An operand that must be an immediate scalar."""
    return Opnd(field, "scalar")


@dataclass(frozen=True)
class Opnds:
    """A comma-separated list of one or more SSA values (variadic operands)."""

    field: str


@dataclass(frozen=True)
class View:
    """A NeuronAP on a tensor: ``@t`` (``@t[%idx]`` when ``index`` names the index field) then an
    optional ``as dtype`` reinterpretation."""

    field: str
    role: str
    index: str | None = None


@dataclass(frozen=True)
class Views:
    """``word(@a, @b)`` — a list of views."""

    field: str
    word: str
    role: str


@dataclass(frozen=True)
class Punct:
    """Fixed punctuation: ``,`` or ``->``."""

    text: str


@dataclass(frozen=True)
class Flag:
    """An optional keyword that sets a boolean field."""

    field: str
    word: str


@dataclass(frozen=True)
class Ints:
    """``word=[1,2]`` — a tuple of integers (may be empty)."""

    field: str
    word: str


@dataclass(frozen=True)
class Int:
    """``word=N`` — one integer."""

    field: str
    word: str


@dataclass(frozen=True)
class Str:
    """A quoted string: ``"name"``."""

    field: str


@dataclass(frozen=True)
class Sym:
    """A symbol: ``@name`` (a function name, not a tensor of this function)."""

    field: str


@dataclass(frozen=True)
class Attrs:
    """``{a = [...], b = [...]}`` — optional list attributes, printed only when they differ from
    their default. ``entries`` are (field, element kind ``"dtype"`` or ``"tensor"``, default)."""

    entries: tuple[tuple[str, str, Any], ...]


Piece = Opnd | Opnds | View | Views | Punct | Flag | Ints | Int | Str | Sym | Attrs

#: keyword → (instruction class, the fields that keyword fixes); filled by ``register``
OPS: dict[str, tuple[type[Instruction], dict[str, Any]]] = {}


def register(cls: type[Instruction]) -> type[Instruction]:
    """Class decorator: add the class's keywords to ``OPS`` (a keyword may be declared once)."""
    for word, fixed in cls.WORDS.items():
        if word in OPS:
            raise ValueError(f"instruction keyword {word!r} declared twice")
        OPS[word] = (cls, dict(fixed))
    return cls


def field_names(syntax: tuple[Piece, ...]) -> list[str]:
    """The constructor fields a syntax names, in text order (a view's index field included)."""
    out: list[str] = []
    for p in syntax:
        if isinstance(p, Attrs):
            out.extend(e[0] for e in p.entries)
        elif isinstance(p, View):
            out.append(p.field)
            if p.index is not None:
                out.append(p.index)
        elif not isinstance(p, Punct):
            out.append(p.field)
    return out


Evaluator = Callable[..., Any]
