"""Malformed HLO text raises ParseError 'file:line:col: message'."""
from __future__ import annotations

import pytest

from pyprecision import hlo
from pyprecision.errors import ParseError

GOOD = "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}\n"


@pytest.mark.parametrize("text, line, col, words", [
    ("Module m\n", 1, 1, "expected 'HloModule'"),
    (GOOD.replace("negate(p)", "negate(q)"), 5, 29, "unknown operand 'q'"),
    (GOOD.replace("f32[2]{0} negate", "f99[2]{0} negate"), 5, 12, "unknown element type 'f99'"),
    (GOOD.replace("negate(p)", "negate(p"), 6, 1, "expected ',' or ')'"),
    (GOOD.replace("\n}\n", "\n"), 6, 1, "not closed"),
    (GOOD.replace(")\n}", "), metadata={op_name=\"x}\n}"), 5, 51, "unterminated string"),
    (GOOD.replace(")\n}", "), dimensions={0\n}"), 5, 46, "unbalanced"),
    ("HloModule m\n", 2, 1, "no computations"),
])
def test_parse_error_location(text, line, col, words) -> None:
    with pytest.raises(ParseError) as info:
        hlo.parse(text, filename="bad.hlo")
    err = info.value
    assert words in err.message
    assert (err.filename, err.line, err.col) == ("bad.hlo", line, col)
    assert str(err).startswith(f"bad.hlo:{line}:{col}: ")


def test_unknown_called_computation() -> None:
    text = GOOD.replace("negate(p)", "call(p), to_apply=%nowhere")
    with pytest.raises(ParseError, match="unknown computation 'nowhere'"):
        hlo.parse(text)
