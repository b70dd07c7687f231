"""Issue 13, the HLO parser's items: each input that raised a non-project exception (ValueError
from int(), RecursionError) is one located ParseError."""
from __future__ import annotations

import pytest

from pyprecision import hlo
from pyprecision.errors import ParseError, PyPrecisionError

HUGE = "9" * 5000


def body(lines: str, header: str = "") -> str:
    return f"HloModule m{header}\n\nENTRY e {{\n{lines}\n}}\n"


@pytest.mark.parametrize("text,where", [
    (body(f"  ROOT p = f32[{HUGE}] parameter(0)"), (4, 16)),
    (body(f"  ROOT p = f32[<={HUGE}] parameter(0)"), (4, 18)),
    (body(f"  ROOT p = f32[2]{{{HUGE}}} parameter(0)"), (4, 19)),
    (body(f"  ROOT p = f32[2] parameter({HUGE})"), (4, 29)),
    (body("  ROOT p = f32[99999999999999999999] parameter(0)"), (4, 16)),
])
def test_numbers_of_more_than_4300_digits_are_parse_errors(text, where) -> None:
    with pytest.raises(ParseError, match="too large") as info:
        hlo.parse(text)
    assert (info.value.line, info.value.col) == where


def test_numbers_of_more_than_4300_digits_in_attributes_are_located() -> None:
    text = body(f"  p = f32[2,2] parameter(0)\n  ROOT t = f32[2,2] transpose(p), dimensions={{{HUGE},0}}")
    with pytest.raises(ParseError, match=r"<string>:5:3: e: t: ") as info:
        hlo.parse(text)
    assert "Exceeds the limit" in info.value.message or "too large" in info.value.message \
        or "digits" in info.value.message


def test_numbers_of_more_than_4300_digits_in_entry_computation_layout() -> None:
    header = ", entry_computation_layout={(f32[" + HUGE + "])->f32[2]}"
    text = body("  ROOT p = f32[2] parameter(0)", header)
    with pytest.raises(ParseError, match="entry_computation_layout.*too large"):
        hlo.parse(text)


def test_upcast_all_to_fp32_reparse_of_a_huge_entry_layout_is_a_project_error() -> None:
    header = ", entry_computation_layout={(bf16[" + HUGE + "])->bf16[2]}"
    m = hlo.parse(body("  p = bf16[2] parameter(0)\n  ROOT n = bf16[2] negate(p)", header),
                  verify=False)
    with pytest.raises(PyPrecisionError):
        hlo.run_passes(m, ["upcast-all-to-fp32"])


@pytest.mark.parametrize("ws", ["\t", "\n", "\r", "\x0b", "\x0c", "  \t "])
def test_non_space_whitespace_inside_a_layout_is_read_as_whitespace(ws) -> None:
    m = hlo.parse(body(f"  ROOT p = f32[2,3]{{1,{ws}0}} parameter(0)"))
    assert m.entry.root.shape.layout.minor_to_major == (1, 0)
    assert hlo.to_text(m).count("{1,0}") == 1


@pytest.mark.parametrize("ws", [" ", "\t", "\x0b"])
def test_layout_digits_separated_by_whitespace_only_are_an_error(ws) -> None:
    with pytest.raises(ParseError, match="expected ','"):
        hlo.parse(body(f"  ROOT p = f32[2,3]{{1{ws}0}} parameter(0)"))


def test_tuple_shapes_nested_5000_deep_are_a_parse_error() -> None:
    shape = "(" * 5000 + "f32[]" + ")" * 5000
    with pytest.raises(ParseError, match="nested deeper than 64") as info:
        hlo.parse(body(f"  ROOT p = {shape} parameter(0)"))
    assert (info.value.line, info.value.col) == (4, 12 + 64)
    with pytest.raises(ParseError, match="nested deeper"):
        hlo.parse_shape(shape)


def test_tuple_shapes_nested_64_deep_are_read() -> None:
    shape = "(" * 64 + "f32[]" + ")" * 64
    m = hlo.parse(body(f"  ROOT p = {shape} parameter(0)"))
    assert m.entry.root.shape.to_text() == shape


def test_a_computation_that_calls_itself_is_a_parse_error() -> None:
    text = ("HloModule m\n\nf {\n  x = f32[] parameter(0)\n  ROOT c = f32[] call(x), to_apply=f\n}\n\n"
            "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\n")
    with pytest.raises(ParseError, match=r":5:3: f: c: the computation calls itself"):
        hlo.parse(text)


def test_mutual_recursion_through_while_is_a_parse_error() -> None:
    text = ("HloModule m\n\ncond {\n  x = f32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\n"
            "body {\n  x = f32[] parameter(0)\n  ROOT w = f32[] while(x), condition=cond, body=body\n}\n\n"
            "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT w = f32[] while(p), condition=cond, body=body\n}\n")
    with pytest.raises(ParseError, match="calls itself"):
        hlo.parse(text)
