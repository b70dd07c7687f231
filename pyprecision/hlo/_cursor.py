"""The HLO parser's cursor: a position in the text, located errors, bounded integers."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pyprecision.errors import ParseError
from pyprecision.hlo import attrs as A

if TYPE_CHECKING:
    from pyprecision.hlo.model import HloComputation, HloInstruction
    from pyprecision.hlo.shape import Shape

_WS = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)
_INLINE_WS = re.compile(r"[ \t\r]*")
_DIGITS = re.compile(r"\d+")
#: Largest dimension size / parameter number (XLA's int64).
INT64_MAX = (1 << 63) - 1


class Cursor:
    """Position in the text plus error construction with line:col."""

    def __init__(self, text: str, filename: str):
        self.text = text
        self.pos = 0
        self.filename = filename
        #: (instruction, computation name, position) of every to_apply=/body=/calls=... reference
        self.calls: list[tuple[HloInstruction, str, int]] = []
        #: (instruction or computation, position): turned into (line, col) once at the end
        self.located: list[tuple[HloInstruction | HloComputation, int]] = []
        self.depth = 0
        #: (instruction, operand index, inline shape, position) of old-style "f32[2] %x" operands
        self.inline_shapes: list[tuple[HloInstruction, int, Shape, int]] = []

    def integer(self, what: str, limit: int = INT64_MAX) -> int:
        """A decimal integer no larger than ``limit`` (never Python's 4300-digit ValueError)."""
        start = self.pos
        digits = self.match(_DIGITS, what).group()
        if len(digits) > 19 or int(digits) > limit:
            raise self.error(f"{what} {digits[:20]}{'...' if len(digits) > 20 else ''} is too "
                             f"large (at most {limit})", start)
        return int(digits)

    def error(self, message: str, pos: int | None = None) -> ParseError:
        p = self.pos if pos is None else pos
        line = self.text.count("\n", 0, p) + 1
        col = p - (self.text.rfind("\n", 0, p) + 1) + 1
        return ParseError(message, line, col, self.filename)

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def inline_ws(self) -> None:
        self.pos = _INLINE_WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, s: str) -> None:
        if not self.text.startswith(s, self.pos):
            got = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of text"
            raise self.error(f"expected '{s}', got '{got}'")
        self.pos += len(s)

    def match(self, pattern: re.Pattern[str], what: str) -> re.Match[str]:
        m = pattern.match(self.text, self.pos)
        if not m:
            got = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of text"
            raise self.error(f"expected {what}, got '{got}'")
        self.pos = m.end()
        return m

    def raw_value(self, stop: str = ",\n") -> str:
        start = self.pos
        try:
            end = A.scan_balanced(self.text, start, stop)
        except ValueError as exc:
            raise self.error(str(exc.args[0]), exc.args[1]) from None
        self.pos = end
        return self.text[start:end].rstrip()

    def locate(self) -> None:
        """Set ``location`` = (line, column) on everything recorded in :attr:`located`, counting
        newlines once, in text order."""
        line, line_start, prev = 1, 0, 0
        for obj, pos in sorted(self.located, key=lambda x: x[1]):
            n = self.text.count("\n", prev, pos)
            if n:
                line += n
                line_start = self.text.rfind("\n", 0, pos) + 1
            prev = pos
            obj.location = (line, pos - line_start + 1)
