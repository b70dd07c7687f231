"""The verifier accepts the examples and rejects each kind of broken program with a clear message."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from pyprecision import ir
from pyprecision.errors import VerifyError

ROOT = pathlib.Path(__file__).resolve().parents[2]

HEAD = """func @main {
  tensor @x : input float32[2,2]
  tensor @n : input int32[2]
  tensor @w : const float32[2,2] = splat 1.0
  tensor @q : input float8e4m3fn[2]
  tensor @y : output float32[2,2]
  tensor @g : internal int32[2]
"""


def prog(*lines: str, extra: str = "") -> str:
    return HEAD + "".join(f"  {ln}\n" for ln in lines) + "}\n" + extra


def rejects(text: str, frag: str) -> VerifyError:
    m = ir.parse(text, "v.pir", verify=False)
    with pytest.raises(VerifyError) as ei:
        ir.verify(m)
    assert frag in str(ei.value), str(ei.value)
    with pytest.raises(VerifyError):
        ir.parse(text, "v.pir")
    return ei.value


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.pir")), ids=lambda p: p.stem)
def test_examples_verify(path):
    ir.verify(ir.parse(path.read_text(), str(path)))


X = "%x = affine_load @x : float32[2,2]"
N = "%n = affine_load @n : int32[2]"

TEXT_CASES = [
    (
        "int_operand_in_float_add",
        [X, N, "%c = cast %n : int32[2]", "%b = add %x, int32 1 : float32[2,2]"],
        "do not match a float32 result",
    ),
    (
        "shape_mismatch",
        [X, N, "%f = cast %n : float32[2]", "%b = add %x, %f : float32[2,2]"],
        "shape [2] != result shape [2,2]",
    ),
    (
        "compare_result_not_uint8",
        [X, "%m = cmp_lt %x, %x : float32[2,2]"],
        "a comparison produces uint8",
    ),
    (
        "compare_mixed_kinds",
        [X, N, "%m = cmp_lt %n, float32 1.0 : uint8[2]"],
        "must both be float or both integer",
    ),
    (
        "select_float_predicate",
        [X, "%s = select %x, %x, %x : float32[2,2]"],
        "predicate must be a uint8 value",
    ),
    (
        "select_scalar_predicate_kind",
        [X, "%m = cmp_lt %x, %x : uint8[2,2]", "%s = select %m, %x, int32 0 : float32[2,2]"],
        "do not match a float32 result",
    ),
    (
        "matmul_k_mismatch",
        [X, N, "%f = cast %n : float32[2]", "%t = matmul %x, %x : float32[2,3]"],
        "result shape [2,3] != [2,2]",
    ),
    (
        "matmul_int_operand",
        [N, "%t = matmul %n, %n : float32[1,1]"],
        "matmul operands and result must be float",
    ),
    ("load_int_as_float", ["%n = affine_load @n : float32[2]"], "cannot load int32 as float32"),
    ("load_shape", ["%x = affine_load @x : float32[4]"], "result shape [4] != tensor shape [2,2]"),
    (
        "broadcast_needs_row",
        ["%x = sb_atom_load @x broadcast : float32[4,2]"],
        "broadcast load needs tensor shape [1,...]",
    ),
    ("store_into_const", [X, "affine_store %x, @w"], "writes const tensor @w"),
    (
        "store_int_into_float",
        [N, "%m = cast %n : int32[2]", "affine_store %n, @x"],
        "cannot store int32 into float32 @x",
    ),
    ("reinterpret_width", ["%q = affine_load @q as bfloat16 : bfloat16[2]"], "width differs"),
    ("bitcast_width", [X, "%b = bitcast %x : int16[2,2]"], "changes the width"),
    ("exp_on_int", [N, "%e = exp %n : int32[2]"], "'exp' needs a float dtype"),
    ("unary_kind_change", [X, "%e = neg %x : int32[2,2]"], "use cast"),
    ("and_on_floats", [X, "%e = and %x, %x : float32[2,2]"], "'and' needs integer operands"),
    (
        "gep_not_allowed",
        [N, "tensor_scalar_gep.add %n, int32 1 -> @g {allowed = [int16]}"],
        "not one of the allowed dtypes",
    ),
    (
        "gep_shape",
        [X, "tensor_scalar_gep.add %x, float32 1.0 -> @g"],
        "source shape [2,2] != tensor shape [2]",
    ),
    (
        "generic_index_float",
        [X, "%v = generic_load @x[%x] : float32[2,2]"],
        "the index must be a 1-D integer value",
    ),
    ("generic_shape", [N, "%v = generic_load @x[%n] : float32[3,2]"], "!= gathered shape [2]"),
    ("memcpy_shape", ["offloaded_memcpy @x -> @g"], "shapes differ"),
    ("undefined_callee", ["call @nowhere ins(@x) outs(@y)"], "call to undefined function @nowhere"),
]


@pytest.mark.parametrize("name,lines,frag", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_rejects(name, lines, frag):
    e = rejects(prog(*lines), frag)
    assert str(e).startswith("v.pir:") and "in @main:" in str(e)


CALLEE = """
func @f {
  tensor @a : input float32[2,2]
  tensor @r : output float32[2,2]
^bb0:
}
"""


def test_call_arity_and_shape():
    rejects(prog("call @f ins(@x, @x) outs(@y)", extra=CALLEE), "@f takes 1 inputs, 2 given")
    rejects(prog("call @f ins(@n) outs(@y)", extra=CALLEE), "does not match @f's @a")
    ir.verify(ir.parse(prog("call @f ins(@x) outs(@y)", extra=CALLEE)))


def test_recursive_calls_rejected():
    text = (
        "func @a {\n  tensor @t : input float32[1]\n  call @b ins(@t) outs()\n}\n"
        "func @b {\n  tensor @t : input float32[1]\n  call @a ins(@t) outs()\n}\n"
    )
    rejects(text, "recursive call cycle: @a -> @b -> @a")


def _module():
    return ir.parse(
        prog(X, "%a = neg %x : float32[2,2]", "%b = abs %a : float32[2,2]", "affine_store %b, @y")
    )


def test_use_before_def():
    m = _module()
    f = m.main
    _x, a, b, _st = f.entry.instructions
    b.remove_from_parent()
    b.insert_before(a)
    with pytest.raises(VerifyError, match="%a is used before its definition"):
        ir.verify(m)


def test_missing_use_list_entry():
    m = _module()
    a = m.main.entry.instructions[1]
    a.result._uses.clear()
    with pytest.raises(VerifyError, match="missing from its use list"):
        ir.verify(m)


def test_use_by_detached_instruction():
    m = _module()
    a = m.main.entry.instructions[1]
    ir.make_cast(a.result, "bfloat16")  # created, never inserted: its use of %a dangles
    with pytest.raises(VerifyError, match="use by an instruction that is not in the function"):
        ir.verify(m)


def test_duplicate_value_names():
    m = _module()
    f = m.main
    a = f.entry.instructions[1]
    dup = ir.UnaryOp("neg", a.result, ir.Value("a", "float32", (2, 2)))
    dup.insert_after(a)
    with pytest.raises(VerifyError, match="value %a is defined twice"):
        ir.verify(m)


def test_const_value_must_match_dtype_after_retype():
    f = ir.Function("main")
    t = f.add_tensor(ir.Tensor("w", (2,), "float32", "const", np.ones(2, np.float32)))
    ir.verify(f)
    t.mutate_tensor_ty("bfloat16")
    with pytest.raises(VerifyError, match="value has numpy dtype float32, bfloat16 needs bfloat16"):
        ir.verify(f)


def test_value_on_non_const_and_missing_const_value():
    f = ir.Function("main")
    f.add_tensor(ir.Tensor("x", (2,), "float32", "input", np.ones(2, np.float32)))
    with pytest.raises(VerifyError, match="only const tensors have a value"):
        ir.verify(f)
    g = ir.Function("g")
    g.add_tensor(ir.Tensor("w", (2,), "float32", "const"))
    with pytest.raises(VerifyError, match="const tensor has no value"):
        ir.verify(g)


def test_access_to_tensor_of_another_function():
    m = _module()
    other = ir.Function("other")
    t = other.add_tensor(ir.Tensor("z", (2, 2), "float32", "input"))
    ld = ir.AffineLoad(t, ir.Value("z", "float32", (2, 2)))
    m.main.entry.push_front(ld)
    with pytest.raises(VerifyError, match="not declared in this function"):
        ir.verify(m)


def test_verify_error_names_source_location():
    text = prog(X, "%e = exp %x : int32[2,2]")
    with pytest.raises(VerifyError) as ei:
        ir.parse(text, "loc.pir")
    assert str(ei.value).startswith("loc.pir:9:3: in @main: 'exp':")


def test_unprintable_names_rejected():
    m = _module()
    m.main.entry.first.result.name = "x-1"
    with pytest.raises(VerifyError, match="value name 'x-1' is not printable"):
        ir.verify(m)
    f = ir.Function("g")
    f.add_tensor(ir.Tensor("a b", (1,), "float32", "input"))
    with pytest.raises(VerifyError, match="the name is not printable"):
        ir.verify(f)
