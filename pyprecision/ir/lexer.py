"""Line tokenizer for the IR text form (every token carries its 1-based column), the token cursor the
parser reads a line with, and number literals."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyprecision.errors import ParseError
from pyprecision.ir.dtypes import DType

__all__ = ["Line", "Token", "parse_number", "tokenize_line", "MAX_NUMBER_CHARS"]

#: The longest number literal (Python's int() refuses more than 4300 digits).
MAX_NUMBER_CHARS = 4000

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<comment>//.*|\#.*)
  | (?P<value>%[A-Za-z0-9_.$]+)
  | (?P<tensor>@[A-Za-z0-9_.$]+)
  | (?P<label>\^[A-Za-z0-9_.$]+)
  | (?P<number>[-+]?(?:(?:inf|nan)(?![A-Za-z0-9_.])|0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))
  | (?P<string>"[^"\\]*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<arrow>->)
  | (?P<punct>[=:,\[\](){}])
""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    """A token: ``kind`` is value/tensor/label/number/string/ident/arrow/punct, ``text`` its spelling
    (``value``/``tensor``/``label`` without the sigil; ``string`` without quotes), ``col`` 1-based."""

    kind: str
    text: str
    col: int


def tokenize_line(line: str, lineno: int, filename: str) -> list[Token]:
    """Tokens of one line (comments dropped); ParseError on a character that starts no token."""
    toks: list[Token] = []
    pos = 0
    n = len(line)
    while pos < n:
        m = _TOKEN_RE.match(line, pos)
        if m is None:
            raise ParseError(f"unexpected character {line[pos]!r}", lineno, pos + 1, filename)
        kind = m.lastgroup or ""
        text = m.group()
        if kind == "comment":
            break
        if kind != "ws":
            if kind in ("value", "tensor", "label"):
                text = text[1:]
            elif kind == "string":
                text = text[1:-1]
            elif kind in ("arrow", "punct"):
                kind = "punct"
            elif kind == "number" and len(text) > MAX_NUMBER_CHARS:  # int() refuses > 4300 digits
                raise ParseError(f"number literal of {len(text)} characters is too long (at most "
                                 f"{MAX_NUMBER_CHARS})", lineno, pos + 1, filename)
            toks.append(Token(kind, text, pos + 1))
        pos = m.end()
    return toks


class Line:
    """A cursor over one line's tokens; ``error`` makes a ParseError located at a token."""

    def __init__(self, toks: list[Token], lineno: int, filename: str, text: str):
        self.toks, self.i, self.lineno, self.filename, self.text = toks, 0, lineno, filename, text

    def error(self, msg: str, tok: Token | None = None) -> ParseError:
        """A ParseError at ``tok`` (default: the current token, or the end of the line)."""
        if tok is None:
            tok = self.toks[self.i] if self.i < len(self.toks) else None
        col = tok.col if tok is not None else len(self.text.rstrip()) + 1
        return ParseError(msg, self.lineno, col, self.filename)

    def peek(self) -> Token | None:
        """The current token, or None at the end of the line."""
        return self.toks[self.i] if self.i < len(self.toks) else None

    def at(self, kind: str, text: str | None = None) -> bool:
        """The current token has ``kind`` (and ``text`` when given)."""
        t = self.peek()
        return t is not None and t.kind == kind and (text is None or t.text == text)

    def next(self, what: str) -> Token:
        """Consume and return the current token; ``what`` names it in the end-of-line error."""
        t = self.peek()
        if t is None:
            raise self.error(f"expected {what}, found end of line")
        self.i += 1
        return t

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> Token:
        """Consume a token of ``kind`` (and ``text``), else raise a ParseError naming ``what``."""
        t = self.peek()
        if t is None or t.kind != kind or (text is not None and t.text != text):
            found = "end of line" if t is None else repr(t.text)
            raise self.error(
                f"expected {what or repr(text) if text else what or kind}, found {found}"
            )
        self.i += 1
        return t

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        """Consume and return a token of ``kind`` (and ``text``) if it is next, else None."""
        if self.at(kind, text):
            return self.next(kind)
        return None

    def end(self) -> None:
        """Raise a ParseError unless the whole line was consumed."""
        t = self.peek()
        if t is not None:
            raise self.error(f"unexpected {t.text!r} at end of line")


def parse_number(tok: Token, dtype: DType, ln: Line) -> float | int:
    """The literal ``tok`` as a number of ``dtype`` (a float, or an in-range integer); else ParseError."""
    s = tok.text
    try:
        if dtype.is_float:
            if s.lower().lstrip("+-").startswith("0x"):
                raise ValueError
            return float(s)
        if "." in s or "e" in s.lower() or "n" in s.lower():
            raise ValueError
        v = int(s, 0)
    except ValueError:
        raise ln.error(f"invalid {dtype.name} literal {s!r}", tok) from None
    lo, hi = (
        (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1)
        if dtype.kind == "int"
        else (0, (1 << dtype.bits) - 1)
    )
    if not lo <= v <= hi:
        raise ln.error(f"{v} is out of range for {dtype.name}", tok)
    return v
