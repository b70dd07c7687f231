"""PrimitiveType codes, shapes, layouts, attribute helpers and literals."""
from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.hlo import attrs as A
from pyprecision.hlo.literal import format_f32, literal_to_array
from pyprecision.hlo.types import PrimitiveType as T

#: enum PrimitiveType of openxla/xla xla/xla_data.proto, typed from the proto.
PROTO = {"PRED": 1, "S1": 30, "S2": 26, "S4": 21, "S8": 2, "S16": 3, "S32": 4, "S64": 5,
         "U1": 31, "U2": 27, "U4": 22, "U8": 6, "U16": 7, "U32": 8, "U64": 9, "F16": 10,
         "F32": 11, "BF16": 16, "F64": 12, "F8E5M2": 19, "F8E4M3": 28, "F8E4M3FN": 20,
         "F8E4M3B11FNUZ": 23, "F8E3M4": 29, "F8E5M2FNUZ": 24, "F8E4M3FNUZ": 25, "F4E2M1FN": 32,
         "F8E8M0FNU": 33, "C64": 15, "C128": 18, "TUPLE": 13, "OPAQUE_TYPE": 14, "TOKEN": 17,
         "BUFFER": 34}


def test_primitive_type_codes_match_xla_data_proto() -> None:
    assert {t.name: int(t) for t in T if t.name != "PRIMITIVE_TYPE_INVALID"} == PROTO


@pytest.mark.parametrize("text", ["f32[2,3]{1,0}", "bf16[]", "s4[16]{0:E(4)}",
                                  "f32[8,128]{1,0:T(8,128)(2,1)S(1)}", "f32[<=8,?]{1,0}",
                                  "(f32[], (s32[2]{0}, token[]))", "()", "pred[0]{0}",
                                  "f8e4m3b11fnuz[2]{0}", "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])"])
def test_shape_text_round_trip(text) -> None:
    assert hlo.parse_shape(text).to_text() == text


def test_layout_fields() -> None:
    s = hlo.parse_shape("u4[2,8]{1,0:T(2,128)E(4)S(3)}")
    assert s.layout.minor_to_major == (1, 0)
    assert (s.layout.element_size_in_bits, s.layout.memory_space) == (4, 3)
    assert s.change_element_type(T.S4).layout.element_size_in_bits == 4
    assert s.change_element_type(T.F32).to_text() == "f32[2,8]{1,0:T(2,128)S(3)}"


def test_dynamic_dimensions() -> None:
    s = hlo.parse_shape("f32[<=8,?,3]")
    assert s.dimensions == (8, -1, 3) and s.dynamic == (True, True, False)


_dims = st.lists(st.integers(0, 9), max_size=3)
_types = st.sampled_from([t for t in T if t not in (T.TUPLE, T.PRIMITIVE_TYPE_INVALID,
                                                    T.TOKEN, T.OPAQUE_TYPE, T.BUFFER)])


@st.composite
def shapes(draw, depth=2):  # type: ignore[no-untyped-def]
    if depth and draw(st.booleans()):
        return hlo.Shape.tuple_of(draw(st.lists(shapes(depth=depth - 1), max_size=7)))
    dims = draw(_dims)
    layout = hlo.Layout(tuple(reversed(range(len(dims))))) if draw(st.booleans()) else None
    return hlo.Shape.array(draw(_types), dims, layout)


@given(shapes())
def test_shape_print_parse_property(shape) -> None:
    assert hlo.parse_shape(shape.to_text()).equal(shape)
    assert hlo.parse_shape(shape.to_text()).to_text() == shape.to_text()


@given(st.text())
def test_c_escape_round_trip(s) -> None:
    esc = A.c_escape(s)
    assert all(0x20 <= ord(c) < 0x7F for c in esc)
    assert A.c_unescape(esc) == s


def test_c_escape_examples() -> None:
    assert A.c_escape("\"it's\n") == "\\\"it\\'s\\n"
    assert A.c_escape("é") == "\\303\\251"
    assert A.unquote('"a\\tb\\101"') == "a\tbA"


def test_metadata_and_frontend_attributes() -> None:
    m = hlo.parse('HloModule m\n\nENTRY e {\n  ROOT c = f32[] constant(1), frontend_attributes='
                  '{b="2",a={x = 1 : i32}}, metadata={op_type="t" op_name="a b\\"c" '
                  'source_line=3 stack_frame_id=2}\n}\n')
    root = m.entry.root
    assert root.metadata == {"op_type": "t", "op_name": 'a b"c', "source_line": "3",
                             "stack_frame_id": "2"}
    assert root.frontend_attributes == {"b": "2", "a": "{x = 1 : i32}"}
    items = A.metadata_set_string([("op_type", '"t"'), ("source_line", "3")], "op_name", "n")
    assert A.format_metadata(items) == '{op_type="t" op_name="n" source_line=3}'


@pytest.mark.parametrize("value, text", [(1.0, "1"), (0.1, "0.1"), (-2.25, "-2.25"),
                                         (1e10, "1e+10"), (float("inf"), "inf"),
                                         (-float("inf"), "-inf"), (float("nan"), "nan"),
                                         (-0.0, "-0"), (16777217.0, "16777216"),
                                         (0.10009765625, "0.100097656"), (3.4028234663852886e38,
                                                                          "3.40282347e+38")])
def test_format_f32_is_xla_round_trip_spelling(value, text) -> None:
    assert format_f32(value) == text


def test_literal_values() -> None:
    arr = literal_to_array("{ { 1, 2, 3 }, { 4, 5, 6 } }", hlo.parse_shape("s32[2,3]{1,0}"))
    assert arr.dtype == np.int32 and arr.tolist() == [[1, 2, 3], [4, 5, 6]]
    b = literal_to_array("{0.1001, -nan, inf}", hlo.parse_shape("bf16[3]{0}"))
    assert b.dtype == ml_dtypes.bfloat16
    assert b.view(np.uint16).tolist()[0] == 0x3DCD and np.isnan(b[1].astype(np.float32))
    assert literal_to_array("true", hlo.parse_shape("pred[]")).item() is True
    with pytest.raises(ValueError, match="elided"):
        literal_to_array("{...}", hlo.parse_shape("f32[20]{0}"))
    with pytest.raises(ValueError, match="needs 4"):
        literal_to_array("{1, 2}", hlo.parse_shape("f32[4]{0}"))


def test_instruction_literal_from_real_data() -> None:
    from hlo_testdata import data_file

    m = hlo.parse(data_file("jax-0.10.2", "bf16_mix.hlo.txt").read_text())
    consts = [i for i in m.all_instructions() if i.opcode == "constant" and i.shape.rank]
    assert consts and all(c.literal().shape == c.shape.dimensions for c in consts)


def test_hlo_room_never_imports_ir_or_passes() -> None:
    code = ("import sys, pyprecision.hlo\n"
            "bad = [m for m in sys.modules if m.startswith(('pyprecision.ir', 'pyprecision.passes',"
            " 'pyprecision.tools', 'pyprecision.emulate'))]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_stack_frame_tables_are_kept_and_readable() -> None:
    from hlo_testdata import SAMPLES

    text = next(p for p in SAMPLES if p.name == "stack_frames.hlo.txt").read_text()
    m = hlo.parse(text)
    t = m.stack_frame_tables()
    assert t["FileNames"] == {1: '"<embedded module>"', 2: '"yet/another/test.py"'}
    assert t["StackFrames"][2] == "{file_location_id=2 parent_frame_id=2}"
    assert m.entry.root.metadata["stack_frame_id"] == "2"
    assert hlo.to_text(m) == text


def test_execution_thread_and_conditional_calls() -> None:
    from hlo_testdata import SAMPLES

    m = hlo.parse(next(p for p in SAMPLES if p.name == "misc_syntax.hlo.txt").read_text())
    cond = m.entry.instruction("cond")
    assert cond.called("true_computation").name == "true_branch"
    assert cond.called("false_computation").name == "false_branch"
    assert m.computation("async_comp").footer_attributes == ', execution_thread="host"'


def test_tuple_constant_literal() -> None:
    from hlo_testdata import SAMPLES

    m = hlo.parse(next(p for p in SAMPLES if p.name == "old_style_constants.hlo.txt").read_text())
    a, b = m.entry.instruction("constant.2").literal_value()
    with pytest.raises(ValueError, match="tuple"):
        m.entry.instruction("constant.2").literal()
    assert a.tolist() == [[1.0], [2.0]] and b.tolist() == [2.0, 42.0]
    four = m.entry.instruction("constant").literal()
    assert four.shape == (3, 2, 1, 1) and four[2, 1, 0, 0] == np.float32(4.4)


def test_duplicate_instruction_name_located() -> None:
    from pyprecision.errors import ParseError

    with pytest.raises(ParseError) as info:
        hlo.parse("HloModule m\n\nENTRY e {\n  p = f32[] parameter(0)\n  p = f32[] negate(p)\n}\n")
    assert (info.value.line, info.value.col) == (5, 3)
    assert "duplicate instruction name 'p'" in info.value.message
