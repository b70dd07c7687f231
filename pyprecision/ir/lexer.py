"""Line tokenizer for the IR text form. Every token carries its 1-based column."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyprecision.errors import ParseError

__all__ = ["Token", "tokenize_line"]

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
            toks.append(Token(kind, text, pos + 1))
        pos = m.end()
    return toks
