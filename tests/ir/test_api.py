"""Builder, use lists, erasure, DCE, dead tensors and the per-instruction properties the passes read."""

from __future__ import annotations

import numpy as np
import pytest

from pyprecision import ir
from pyprecision.errors import VerifyError

TEXT = """func @main {
  tensor @x : input float32[2,2]
  tensor @w : const float32[2,2] = splat 0.5
  tensor @row : const float32[1,2] = splat 1.0
  tensor @t : internal float32[2,2]
  tensor @dead : internal float32[2,2]
  tensor @y : output float32[2,2]
^bb0:
  %x = affine_load @x : float32[2,2]
  %w = sb_atom_load @w : float32[2,2]
  %r = sb_atom_load @row broadcast : float32[2,2]
  %mm = matmul %x, %w : float32[2,2]
  %a = add %mm, %r : float32[2,2]
  %m = cmp_gt %a, float32 0.0 : uint8[2,2]
  %s = select %m, %a, float32 0.0 : float32[2,2]
  affine_store %s, @t
  %l = affine_load @t : float32[2,2]
  %n = neg %l : float32[2,2]
  affine_store %n, @y
}
"""


def setup():
    m = ir.parse(TEXT)
    f = m.main
    return m, f, {i.result.name: i for i in f.instructions() if i.result is not None}


def test_replace_all_uses_with_except_keeps_the_cast_input():
    """GOTCHA (spec 000 §2): uses are registered at creation, so the new cast must be excluded."""
    m, _f, ops = setup()
    a = ops["a"]
    cast = ir.make_cast(a.result, "bfloat16")
    cast.insert_after(a)
    assert (cast, 0) in a.result.uses  # registered before any rewiring
    n = a.result.replace_all_uses_with_except(cast, cast)
    assert n == 2  # cmp_gt and select's on_true; not the cast
    assert cast.data is a.result
    assert all(u.user is cast for u in a.result.uses)
    ir.verify(m)


def test_replace_all_uses_with_without_except_makes_a_self_cycle_the_verifier_catches():
    m, _f, ops = setup()
    a = ops["a"]
    cast = ir.make_cast(a.result, "bfloat16")
    cast.insert_after(a)
    a.result.replace_all_uses_with(cast)
    assert cast.data is cast.result
    with pytest.raises(VerifyError, match="used before its definition"):
        ir.verify(m)


def test_replace_use_of_with_and_erase():
    m, _f, ops = setup()
    s = ops["s"]
    assert s.replace_use_of_with(ops["a"], ops["mm"].result) == 1
    assert s.on_true is ops["mm"].result
    with pytest.raises(ValueError, match="still used"):
        ops["m"].erase_from_parent()
    assert s.replace_use_of_with(ops["m"].result, ops["m"].result) == 1
    ir.verify(m)


def test_erase_updates_tensor_access_lists():
    m, f, ops = setup()
    t = f.get_tensor("t")
    assert t.n_loads == 1 and t.n_stores == 1 and t.single_def_single_use
    ops["n"].replace_all_uses_with(ops["l"])
    ops["n"].erase_from_parent()
    ops["l"].result.replace_all_uses_with(ops["s"])
    ops["l"].erase_from_parent()
    assert t.n_loads == 0 and not t.single_def_single_use
    ir.verify(m)


def test_front_under_bb_inserts_in_creation_order_and_restores():
    m, f, ops = setup()
    b = ir.IRBuilder(function=f)
    b.set_insertion_point_to_end(f.entry)
    with b.front_under_bb():
        c1 = b.create_load(f.get_tensor("x"), "bfloat16", name="xb")
        c2 = b.cast_to(c1.result, "float32")
    assert f.entry.instructions[:2] == [c1, c2]
    assert c2.result.name == "float32.xb"
    last = b.create_unary("copy", ops["n"].result)  # back at the end
    assert f.entry.last is last
    ir.verify(m)


def test_cast_to_without_insertion_point_goes_after_the_definition():
    _m, f, ops = setup()
    b = ir.IRBuilder(function=f)
    c = b.cast_to(ops["x"], ir.bfloat16)
    assert ops["x"].next is c and c.is_cast and c.dtype == ir.bfloat16
    assert c.result.name == "bfloat16.x"
    c2 = b.cast_to(ops["x"], ir.bfloat16)
    assert c2.result.name == "bfloat16.x.1"
    n = ops["x"].result.replace_all_uses_with_except(c, [c, c2])
    assert n == 1 and ops["mm"].stationary is c.result


def test_insert_before_after_and_block_order():
    m, f, ops = setup()
    c = ir.UnaryOp("copy", ops["x"].result, ir.Value(f.unique_name("cp"), "float32", (2, 2)))
    c.insert_before(ops["w"])
    assert ops["x"].next is c and c.next is ops["w"] and c.prev is ops["x"]
    c.remove_from_parent()
    c.insert_after(f.entry.last)
    assert f.entry.last is c and len(f.entry) == 12
    ir.verify(m)


def test_recursive_dce_and_dead_tensors():
    m, f, ops = setup()
    ops["n"].result.replace_all_uses_with(ops["mm"])  # the store to @y now reads the matmul
    removed = f.dce()
    # neg, load of @t, store to @t, select, compare, add and the broadcast load are dead; @t, @row dropped
    assert removed == 7
    assert not f.has_tensor("t") and not f.has_tensor("row") and not f.has_tensor("dead")
    assert f.has_tensor("y") and f.has_tensor("x")
    ir.verify(m)
    assert f.drop_dead_tensors() == 0


def test_recursively_dce_keeps_calls_and_output_stores():
    m = ir.parse("""func @main {
  tensor @x : input float32[2]
  tensor @y : output float32[2]
  opaque "copy" ins(@x) outs(@y)
  %a = affine_load @x : float32[2]
  %b = neg %a : float32[2]
  affine_store %a, @y
}
""")
    f = m.main
    assert ir.recursively_dce(list(f.instructions())) == 1  # only %b
    assert [type(i).__name__ for i in f.instructions()] == ["OpaqueOp", "AffineLoad", "AffineStore"]


def test_can_mutate_dst_ty_is_a_property_on_every_instruction():
    assert isinstance(ir.Instruction.__dict__["can_mutate_dst_ty"], property)
    _m, f, ops = setup()
    verdict = {n: ops[n].can_mutate_dst_ty for n in ops}
    assert verdict == {
        "x": True,
        "w": True,
        "r": True,
        "mm": False,
        "a": True,
        "m": False,
        "s": True,
        "l": True,
        "n": True,
    }
    store = f.entry.last
    assert store.can_mutate_dst_ty is False


def test_properties_the_passes_read():
    _m, f, ops = setup()
    w = ops["w"]
    assert isinstance(w, ir.SBAtomLoad) and w.load_const and not w.has_partition_broadcast
    assert ops["r"].has_partition_broadcast
    assert w.dst is w.result and w.dst.tensor is w.result and w.dst.tensor.n_loads == 1
    assert ops["a"].has_single_user is False and ops["mm"].has_single_user
    assert ops["m"].allowed_dtypes == (ir.uint8,)
    assert ir.bfloat16 in ops["a"].allowed_dtypes and ir.int32 not in ops["a"].allowed_dtypes
    assert w.reinterpret is None and not w.is_reinterpreted
    st = f.entry.last
    assert isinstance(st, ir.AffineStore) and st.dst.is_output and st.src is ops["n"].result
    assert st.dtype == ir.float32
    x = f.get_tensor("x")
    assert x.is_input and x.is_input_or_output and not x.is_output and not x.is_const
    assert x.size_in_bytes == 16 and x.are_all_dim_affine and not x.is_reinterpreted
    assert ir.TensorUtils.load_insts(x) == [ops["x"]]
    assert ir.TensorUtils.store_insts(f.get_tensor("t")) == [f.entry.instructions[7]]
    assert [t.name for t in f.ordered_all_tensors] == ["x", "w", "row", "t", "dead", "y"]
    assert ops["mm"].stationary is ops["x"].result and ops["mm"].moving is ops["w"].result


def test_dtype_setter_and_mutate_tensor_ty():
    m, f, ops = setup()
    a = ops["a"]
    a.dtype = ir.bfloat16
    assert a.result.dtype is ir.bfloat16 and "%a = add %mm, %r : bfloat16[2,2]" in ir.to_text(m)
    ir.verify(m)  # float operands of another width are legal: the op rounds once to bf16
    st = f.entry.last
    st.dtype = "float16"
    assert f.get_tensor("y").dtype is ir.float16


def test_reinterpret_and_generic_access():
    m = ir.parse("""func @main {
  tensor @q : input float8e4m3fn[2]
  tensor @tab : input float32[4,2]
  tensor @i : input int32[3]
  %q = affine_load @q as float8e4 : float8e4[2]
  %i = affine_load @i : int32[3]
  %g = generic_load @tab[%i] : float32[3,2]
}
""")
    f = m.main
    q, i, g = f.entry.instructions
    assert (
        q.reinterpret is ir.float8e4 and q.is_reinterpreted and f.get_tensor("q").is_reinterpreted
    )
    assert not q.can_mutate_dst_ty
    assert not f.get_tensor("tab").are_all_dim_affine and g.index is i.result
    assert ir.UnaryOp("bitcast", q.result, ir.Value("bc", "int8", (2,))).reinterpret is True


def test_clone_tensor_replace_tensor_and_single_value_tensor():
    m, f, ops = setup()
    w = f.get_tensor("w")
    assert isinstance(w, ir.SingleValueTensor)
    w.dtype = ir.bfloat16  # the SingleValueTensor fast path: retype in place
    assert "tensor @w : const bfloat16[2,2] = splat 0.5" in ir.to_text(m)
    t = ir.Tensor("v", (2, 2), "float32", "const", np.arange(4, dtype=np.float32).reshape(2, 2))
    c = t.clone(f.unique_tensor_name("w"))
    assert c.name == "w_1" and c.value is not t.value and np.array_equal(c.value, t.value)
    f.add_tensor(c)
    ops["w"].src.replace_tensor(c)
    assert ops["w"].tensor is c and c.n_loads == 1 and w.n_loads == 0
    ops["w"].result.mutate_tensor_ty(ir.float32)
    assert f.drop_dead_tensors() == 2  # @w and @dead
    ir.verify(m)


def test_clone_instruction_gets_a_unique_name_and_is_detached():
    m, f, ops = setup()
    c = ops["x"].clone()
    assert c.parent is None and c.result.name == "x.1" and c.tensor is f.get_tensor("x")
    assert f.get_tensor("x").n_loads == 2  # registered at creation
    c.insert_after(ops["x"])
    c.dtype = "bfloat16"
    ir.verify(m)


def test_allocate_id_and_debug_loc():
    _m, f, ops = setup()
    a, b = ops["x"].allocate_id(), ops["w"].allocate_id()
    assert b == a + 1 and f.allocate_id() == b + 1
    ops["x"].update_debug_loc("here")
    assert ops["x"].dl == "here"
    assert str(ops["w"].dl) == "<string>:10:3"


def test_dtype_table_and_numpy_equality():
    assert ir.float32 == np.float32 and ir.float32r != np.float32
    import ml_dtypes

    assert ir.bfloat16 == ml_dtypes.bfloat16 and ir.float8e4 == ml_dtypes.float8_e4m3
    assert {d.name: d.fmt for d in ir.FLOAT_DTYPES} == {
        "float32": None,
        "float32r": "fp32r",
        "bfloat16": "bf16",
        "float16": "fp16",
        "float8e4": "fp8e4",
        "float8e4m3fn": "fp8e4m3fn",
        "float8_e5m2": "fp8e5",
    }
    assert ir.as_dtype("fp8e5") is ir.float8_e5m2 and ir.as_dtype(np.int16) is ir.int16
    assert ir.uint8.is_integer and not ir.uint8.is_signed and ir.float8e4.itemsize == 1
    with pytest.raises(KeyError):
        ir.as_dtype("float64")


def test_call_sets_are_printed_sorted():
    m = ir.parse("""func @main {
  tensor @b : input float32[1]
  tensor @a : output float32[1]
  opaque "copy" ins(@b) outs(@a)
}
""")
    op = m.main.entry.first
    op.call_ins.add(m.main.get_tensor("b"))
    op.call_outs.update({m.main.get_tensor("a"), m.main.get_tensor("b")})
    assert "{call_ins = [@b], call_outs = [@a, @b]}" in ir.to_text(m)


def test_dtype_assignment_is_coerced():
    _m, f, ops = setup()
    v = ops["a"].result
    v.dtype = "bf16"
    assert v.dtype is ir.bfloat16
    t = f.get_tensor("t")
    t.dtype = np.float16
    assert t.dtype is ir.float16
    s = ir.ScalarValue(1.0, "fp32")
    s.dtype = "float8e4"
    assert s.dtype is ir.float8e4
    with pytest.raises(KeyError):
        v.dtype = "float64"
