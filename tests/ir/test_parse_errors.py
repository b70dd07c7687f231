"""Every ParseError path: message, and the file:line:col of the offending token."""

from __future__ import annotations

import pytest

from pyprecision import ir
from pyprecision.errors import ParseError

HEAD = "func @main {\n  tensor @x : input float32[2,2]\n  tensor @n : input int32[2]\n"


def body(*lines: str) -> str:
    return HEAD + "".join(f"  {ln}\n" for ln in lines) + "}\n"


# (name, text, line, col, message fragment); columns are 1-based and point at the offending token.
CASES = [
    ("bad_char", "func @main ! {\n}\n", 1, 12, "unexpected character '!'"),
    ("not_func", "tensor @x : input float32[2]\n", 1, 1, "expected 'func'"),
    ("func_no_name", "func main {\n}\n", 1, 6, "expected a @function name, found 'main'"),
    ("func_no_brace", "func @main\n}\n", 1, 11, "expected '{', found end of line"),
    ("func_trailing", "func @main { x\n}\n", 1, 14, "unexpected 'x' at end of line"),
    ("func_twice", "func @f {\n}\nfunc @f {\n}\n", 3, 6, "redefinition of function @f"),
    (
        "missing_close",
        "func @main {\n  tensor @x : input float32[2]",
        2,
        31,
        "missing '}' closing function @main",
    ),
    ("tensor_no_name", body("tensor x : input float32[2]"), 4, 10, "expected a @tensor name"),
    ("tensor_twice", body("tensor @x : input float32[2]"), 4, 10, "redefinition of tensor @x"),
    ("tensor_no_colon", body("tensor @t input float32[2]"), 4, 13, "expected ':'"),
    (
        "tensor_bad_kind",
        body("tensor @t : weight float32[2]"),
        4,
        15,
        "unknown tensor kind 'weight'",
    ),
    ("tensor_bad_dtype", body("tensor @t : input float64[2]"), 4, 21, "unknown dtype 'float64'"),
    (
        "tensor_no_shape",
        body("tensor @t : input float32"),
        4,
        28,
        "expected '[', found end of line",
    ),
    (
        "tensor_zero_dim",
        body("tensor @t : input float32[0]"),
        4,
        29,
        "dimension must be a positive integer",
    ),
    (
        "tensor_frac_dim",
        body("tensor @t : input float32[2.5]"),
        4,
        29,
        "dimension must be a positive integer",
    ),
    ("tensor_empty_shape", body("tensor @t : input float32[]"), 4, 30, "at least one dimension"),
    ("tensor_dim_comma", body("tensor @t : input float32[2 3]"), 4, 31, "expected ','"),
    (
        "value_on_input",
        body("tensor @t : input float32[2] = splat 1.0"),
        4,
        32,
        "only const tensors have a value",
    ),
    ("const_no_value", body("tensor @t : const float32[2]"), 4, 31, "needs '= dense"),
    (
        "bad_init",
        body("tensor @t : const float32[2] = zeros"),
        4,
        34,
        "expected 'dense' or 'splat', found 'zeros'",
    ),
    ("bad_base64", body('tensor @t : const float32[1] = dense "A*=="'), 4, 40, "invalid base64"),
    (
        "payload_size",
        body('tensor @t : const float32[2] = dense "AACAPw=="'),
        4,
        40,
        "payload has 4 bytes",
    ),
    (
        "splat_int_float",
        body("tensor @t : const int32[2] = splat 1.5"),
        4,
        38,
        "invalid int32 literal '1.5'",
    ),
    (
        "splat_out_of_range",
        body("tensor @t : const uint8[2] = splat 256"),
        4,
        38,
        "256 is out of range for uint8",
    ),
    ("tensor_trailing", body("tensor @t : input float32[2] extra"), 4, 32, "unexpected 'extra'"),
    ("label_twice", HEAD + "^a:\n^a:\n}\n", 5, 1, "redefinition of block ^a"),
    ("label_no_colon", HEAD + "^a\n}\n", 4, 3, "expected ':'"),
    (
        "unknown_inst",
        body("%a = frobnicate %x : float32[2,2]"),
        4,
        8,
        "unknown instruction 'frobnicate'",
    ),
    ("no_equals", body("%a affine_load @x : float32[2,2]"), 4, 6, "expected '='"),
    ("needs_result", body("affine_load @x : float32[2,2]"), 4, 3, "'affine_load' produces a value"),
    (
        "no_result_allowed",
        body("%a = affine_store %x, @x"),
        4,
        8,
        "'affine_store' produces no value",
    ),
    (
        "value_twice",
        body("%a = affine_load @x : float32[2,2]", "%a = affine_load @x : float32[2,2]"),
        5,
        3,
        "redefinition of value %a",
    ),
    ("undefined_value", body("%a = neg %zz : float32[2,2]"), 4, 12, "use of undefined value %zz"),
    (
        "undeclared_tensor",
        body("%a = affine_load @nope : float32[2,2]"),
        4,
        20,
        "use of undeclared tensor @nope",
    ),
    (
        "bad_operand",
        body("%a = affine_load @x : float32[2,2]", "%b = add %a, @x : float32[2,2]"),
        5,
        16,
        "expected an operand",
    ),
    (
        "scalar_hex_float",
        body(
            "%a = affine_load @x : float32[2,2]", "%b = add %a, float32 0x3f800000 : float32[2,2]"
        ),
        5,
        24,
        "invalid float32 literal '0x3f800000'",
    ),
    (
        "scalar_no_number",
        body("%a = affine_load @x : float32[2,2]", "%b = add %a, float32 : float32[2,2]"),
        5,
        24,
        "expected a number",
    ),
    ("no_type", body("%a = affine_load @x"), 4, 22, "expected ':' and the result type"),
    (
        "trailing_after_type",
        body("%a = affine_load @x : float32[2,2] junk"),
        4,
        38,
        "unexpected 'junk'",
    ),
    (
        "gep_kind",
        body("%a = affine_load @n : int32[2]", "tensor_scalar_gep.cmp_lt %a, int32 1 -> @n"),
        5,
        3,
        "unknown tensor_scalar_gep op 'cmp_lt'",
    ),
    (
        "gep_not_scalar",
        body("%a = affine_load @n : int32[2]", "tensor_scalar_gep.add %a, %a -> @n"),
        5,
        29,
        "needs an immediate scalar",
    ),
    (
        "gep_no_arrow",
        body("%a = affine_load @n : int32[2]", "tensor_scalar_gep.add %a, int32 1 @n"),
        5,
        37,
        "expected '->'",
    ),
    (
        "unknown_attr",
        body(
            "%a = affine_load @n : int32[2]", "tensor_scalar_gep.add %a, int32 1 -> @n {bogus = []}"
        ),
        5,
        44,
        "unknown attribute 'bogus'",
    ),
    (
        "attr_unclosed",
        body(
            "%a = affine_load @n : int32[2]",
            "tensor_scalar_gep.add %a, int32 1 -> @n {allowed = [int32]",
        ),
        5,
        61,
        "expected ','",
    ),
    ("call_no_ins", body("call @f outs(@x)"), 4, 11, "expected 'ins'"),
    (
        "opaque_no_kernel",
        body("opaque softmax ins(@x) outs(@x)"),
        4,
        10,
        'expected a "kernel" name',
    ),
    (
        "view_as_dtype",
        body("%a = affine_load @x as float99 : float32[2,2]"),
        4,
        26,
        "unknown dtype 'float99'",
    ),
    ("generic_no_index", body("%a = generic_load @x : float32[2,2]"), 4, 24, "expected '['"),
]


@pytest.mark.parametrize("name,text,line,col,frag", CASES, ids=[c[0] for c in CASES])
def test_parse_error_location_and_message(name, text, line, col, frag):
    with pytest.raises(ParseError) as ei:
        ir.parse(text, filename="prog.pir")
    e = ei.value
    assert frag in e.message
    assert (e.line, e.col) == (line, col), str(e)
    assert str(e) == f"prog.pir:{line}:{col}: {e.message}"


def test_default_filename_is_string():
    with pytest.raises(ParseError) as ei:
        ir.parse("bogus\n")
    assert str(ei.value).startswith("<string>:1:1: ")


def test_parse_error_is_a_pyprecision_error():
    from pyprecision.errors import PyPrecisionError

    with pytest.raises(PyPrecisionError):
        ir.parse("func @main {\n")


def test_comments_and_blank_lines_are_ignored():
    m = ir.parse("// header\n\nfunc @main { // trailing\n  # hash comment\n}\n")
    assert ir.to_text(m) == "func @main {\n}\n"
