"""AutoCastFP32 (spec 000 §1–§3, §5): text in, text out."""
from __future__ import annotations

import pytest
from filecheck import filecheck  # tests/ is on sys.path

from pyprecision import ir
from pyprecision.passes import AutoCastFP32, Target

from .helpers import assert_unchanged, parse, run


def acast(mode: str = "all", **kw: bool) -> AutoCastFP32:
    return AutoCastFP32(Target.from_config(mode), **kw)


@pytest.mark.parametrize(
    ("mode", "dtype"),
    [("all", "bfloat16"), ("all-fp32r", "float32r"), ("all-fp8e4", "float8e4"),
     ("experimental-all-fp16", "float16"), ("matmult-bf16", "float16"), ("none", "float16")],
)
def test_cascade_selects_dtype(mode: str, dtype: str) -> None:
    assert acast(mode).dtype.name == dtype


def test_quirk_call_ins_call_outs_only_in_all_fp32r() -> None:
    """Spec 000 §1 QUIRK: the two sets exist only in the all-fp32r branch (per run, never on the
    pass itself)."""
    for mode in ("all", "all-fp8e4", "experimental-all-fp16", "matmult", "none"):
        p = acast(mode)
        assert not p.tracks_call_edges
        run = p.new_run()
        assert run.call_ins is None and run.call_outs is None
    p = acast("all-fp32r")
    assert p.tracks_call_edges
    run = p.new_run()
    assert run.call_ins == set() and run.call_outs == set()
    assert not hasattr(p, "call_ins") and not hasattr(p, "call_outs")


MIXED = """
func @main {
  tensor @x : input float32[2,2]
  tensor @w : const float32[2,2] = splat 0.5
  tensor @t : internal float32[2,2]
  tensor @y : output float32[2,2]
^bb0:
  %x = affine_load @x : float32[2,2]
  %w = affine_load @w : float32[2,2]
  %a = add %x, %w : float32[2,2]
  %m = mul %a, float32 0.1 : float32[2,2]
  affine_store %m, @t
  %r = affine_load @t : float32[2,2]
  %p = cmp_gt %r, %x : uint8[2,2]
  %s = select %p, %r, float32 0.0 : float32[2,2]
  affine_store %s, @y
}
"""


def test_all_mode_whole_function() -> None:
    changed, out = run(acast("all"), MIXED)
    assert changed
    filecheck(out, """
        CHECK:      tensor @x : input bfloat16[2,2]
        CHECK-NEXT: tensor @w : const float32[2,2] = splat 0.5
        CHECK-NEXT: tensor @t : internal bfloat16[2,2]
        CHECK-NEXT: tensor @y : output bfloat16[2,2]
        CHECK:      %x = affine_load @x : bfloat16[2,2]
        CHECK-NEXT: %w = affine_load @w : float32[2,2]
        CHECK-NEXT: %bfloat16.w = cast %w : bfloat16[2,2]
        CHECK-NEXT: %a = add %x, %bfloat16.w : bfloat16[2,2]
        CHECK-NEXT: %m = mul %a, bfloat16 0.1 : bfloat16[2,2]
        CHECK-NEXT: affine_store %m, @t
        CHECK-NEXT: %r = affine_load @t : bfloat16[2,2]
        CHECK-NEXT: %p = cmp_gt %r, %x : uint8[2,2]
        CHECK-NEXT: %s = select %p, %r, bfloat16 0.0 : bfloat16[2,2]
        CHECK-NOT:  float32
    """)


NARROW_ONLY = """
func @main {
  tensor @x : input bfloat16[2,2]
  tensor @i : input int32[2,2]
  tensor @y : output bfloat16[2,2]
  tensor @j : output int32[2,2]
^bb0:
  %x = affine_load @x : bfloat16[2,2]
  %e = exp %x : bfloat16[2,2]
  %c = cast %e : float16[2,2]
  affine_store %c, @y
  %i = affine_load @i : int32[2,2]
  %k = add %i, int32 3 : int32[2,2]
  affine_store %k, @j
}
"""


@pytest.mark.parametrize("mode", ["all", "all-fp32r", "all-fp8e4", "experimental-all-fp16"])
def test_no_change_without_fp32(mode: str) -> None:
    assert_unchanged(acast(mode), NARROW_ONLY)


BOUNDARY = """
func @main {
  tensor @x : input float32[2,2]
  tensor @y : output float32[2,2]
  tensor @z : output float32[2,2]
^bb0:
  %x = affine_load @x : float32[2,2]
  opaque "copy" ins(@x) outs(@z)
  %n = neg %x : float32[2,2]
  affine_store %n, @y
}
"""


def test_decision_p1_narrowed_input_skips_insert_input_casts() -> None:
    # beforeStmtTransform narrows the input, THEN tests dtype == float32: no boundary cast.
    _, out = run(acast("all"), BOUNDARY)
    filecheck(out, """
        CHECK:      tensor @x : input bfloat16[2,2]
        CHECK-NOT:  cast
        CHECK:      %x = affine_load @x : bfloat16[2,2]
        CHECK-NEXT: opaque "copy" ins(@x) outs(@z)
        CHECK-NEXT: %n = neg %x : bfloat16[2,2]
        CHECK-NOT:  cast
    """)


def test_decision_p1_call_edge_input_keeps_fp32_and_gets_inline_cast() -> None:
    _, out = run(acast("all-fp32r"), BOUNDARY)
    filecheck(out, """
        CHECK:      tensor @x : input float32[2,2]
        CHECK-NEXT: tensor @y : output float32r[2,2]
        CHECK-NEXT: tensor @z : output float32[2,2]
        CHECK:      %float32r.x = affine_load @x : float32r[2,2]
        CHECK-NEXT: opaque "copy" ins(@x) outs(@z) {call_ins = [@x], call_outs = [@z]}
        CHECK-NEXT: %n = neg %float32r.x : float32r[2,2]
    """)


def test_note_inline_cast_option_picks_shape_not_whether() -> None:
    _, out = run(acast("all-fp32r", disable_inline_cast=True), BOUNDARY)
    filecheck(out, """
        CHECK:      tensor @x : input float32[2,2]
        CHECK:      %x.1 = affine_load @x : float32[2,2]
        CHECK-NEXT: %float32r.x = cast %x.1 : float32r[2,2]
        CHECK-NEXT: opaque "copy" ins(@x) outs(@z) {call_ins = [@x], call_outs = [@z]}
        CHECK-NEXT: %n = neg %float32r.x : float32r[2,2]
    """)


def test_gotcha_replace_all_uses_with_except_excludes_the_cast() -> None:
    m = parse(BOUNDARY)
    acast("all-fp32r", disable_inline_cast=True).run(m)
    ir.verify(m)
    insts = list(m.main.instructions())
    load, cast = insts[0], insts[1]
    assert cast.is_cast and cast.data is load.result  # not a self-cycle
    assert [u.user for u in cast.result.uses] == [insts[3]]


def test_quirk_opaque_call_skipped_and_recorded_at_boundary() -> None:
    m = parse(BOUNDARY)
    p = acast("all-fp32r")
    run = p.new_run()
    p.run_on_function(m.main, run)
    x, z = m.main.get_tensor("x"), m.main.get_tensor("z")
    assert run.call_ins == {x} and run.call_outs == {z}
    opaque = next(i for i in m.main.instructions() if isinstance(i, ir.OpaqueOp))
    assert [ap.dtype.name for ap in opaque.aps] == ["float32", "float32"]  # untouched


INDEX_GATHER = """
func @main {
  tensor @ids : input int32[2]
  tensor @table : input float32[4,2]
  tensor @y : output float32[2,2]
  tensor @z : output float32[4,2]
^bb0:
  %ids = affine_load @ids : int32[2]
  %g = generic_load @table[%ids] : float32[2,2]
  opaque "copy" ins(@table) outs(@z)
  affine_store %g, @y
}
"""


def test_decision_p6_generic_load_boundary_cast_stays_after_its_index() -> None:
    _, out = run(acast("all-fp32r"), INDEX_GATHER)
    filecheck(out, """
        CHECK:      tensor @table : input float32[4,2]
        CHECK:      %ids = affine_load @ids : int32[2]
        CHECK-NEXT: %float32r.table = generic_load @table[%ids] : float32r[2,2]
        CHECK-NEXT: opaque "copy" ins(@table) outs(@z) {call_ins = [@table], call_outs = [@z]}
        CHECK-NEXT: affine_store %float32r.table, @y
    """)


def test_skip_rule_2_integer_path_and_rule_3_select_predicate() -> None:
    text = """
    func @main {
      tensor @w : const float32[2,2] = splat 1.5
      tensor @i : input int32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %w = affine_load @w : float32[2,2]
      %i = affine_load @i : int32[2,2]
      %k = mul %i, int32 2 : int32[2,2]
      %p = cmp_lt %w, %w : uint8[2,2]
      %s = select %p, %w, float32 1.0 : float32[2,2]
      affine_store %s, @y
    }
    """
    _, out = run(acast("all"), text)
    filecheck(out, """
        CHECK:      tensor @i : input int32[2,2]
        CHECK-NEXT: tensor @y : output bfloat16[2,2]
        CHECK:      %bfloat16.w = cast %w : bfloat16[2,2]
        CHECK-NEXT: %i = affine_load @i : int32[2,2]
        CHECK-NEXT: %k = mul %i, int32 2 : int32[2,2]
        CHECK-NEXT: %p = cmp_lt %bfloat16.w, %bfloat16.w : uint8[2,2]
        CHECK-NEXT: %s = select %p, %bfloat16.w, bfloat16 1.0 : bfloat16[2,2]
    """)


def test_skip_rule_4_generic_store_integer_guard() -> None:
    text = """
    func @main {
      tensor @ids : input int32[2]
      tensor @v : input int32[2,2]
      tensor @out : output int32[4,2]
    ^bb0:
      %ids = affine_load @ids : int32[2]
      %v = affine_load @v : int32[2,2]
      generic_store %v, @out[%ids]
    }
    """
    assert_unchanged(acast("all"), text)


def test_note_scalars_in_place_tensors_get_cast() -> None:
    text = """
    func @main {
      tensor @w : const float32[2,2] = splat 3.0
      tensor @y : output float32[2,2]
    ^bb0:
      %w = affine_load @w : float32[2,2]
      %m = mul %w, float32 0.1 : float32[2,2]
      affine_store %m, @y
    }
    """
    _, out = run(acast("all-fp8e4"), text)
    assert "%m = mul %float8e4.w, float8e4 0.1 : float8e4[2,2]" in out
    assert out.count(" cast ") == 1  # the tensor operand got a cast node; the scalar did not


def test_quirk_loads_and_stores_cast_opposite_ends() -> None:
    text = """
    func @main {
      tensor @i : input int32[2,2]
      tensor @w : const float32[2,2] = splat 2.0
      tensor @t : internal float32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %i = affine_load @i : int32[2,2]
      %b = bitcast %i : float32[2,2]
      affine_store %b, @t
      %w = affine_load @w : float32[2,2]
      %r = affine_load @t : float32[2,2]
      %s = add %r, %w : float32[2,2]
      affine_store %s, @y
    }
    """
    _, out = run(acast("all"), text)
    filecheck(out, """
        CHECK:      tensor @t : internal bfloat16[2,2]
        CHECK:      %b = bitcast %i : float32[2,2]
        CHECK-NEXT: %bfloat16.b = cast %b : bfloat16[2,2]
        CHECK-NEXT: affine_store %bfloat16.b, @t
        CHECK-NEXT: %w = affine_load @w : float32[2,2]
        CHECK-NEXT: %bfloat16.w = cast %w : bfloat16[2,2]
        CHECK-NEXT: %r = affine_load @t : bfloat16[2,2]
        CHECK-NEXT: %s = add %r, %bfloat16.w : bfloat16[2,2]
    """)


def test_gotcha_transform_unary_op_folds_double_casts() -> None:
    text = """
    func @main {
      tensor @x : input float32[2,2]
      tensor @y : output float32[2,2]
      tensor @z : output float16[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      %c = cast %x : bfloat16[2,2]
      %u = cast %c : float32[2,2]
      %h = cast %x : float16[2,2]
      affine_store %u, @y
      affine_store %h, @z
    }
    """
    _, out = run(acast("all"), text)
    filecheck(out, """
        CHECK:      %x = affine_load @x : bfloat16[2,2]
        CHECK-NEXT: %h = cast %x : float16[2,2]
        CHECK-NEXT: affine_store %x, @y
        CHECK-NEXT: affine_store %h, @z
    """)


def test_transform_offloaded_memcpy_lands_narrowed() -> None:
    text = """
    func @main {
      tensor @w : const float32[2,2] = splat 0.75
      tensor @t : internal float32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      offloaded_memcpy @w -> @t
      %r = affine_load @t : float32[2,2]
      affine_store %r, @y
    }
    """
    _, out = run(acast("all-fp8e4"), text)
    assert "tensor @t : internal float8e4[2,2]" in out
    assert "%r = affine_load @t : float8e4[2,2]" in out
    assert " cast " not in out


def test_bitcast_and_reinterpreted_views_untouched() -> None:
    text = """
    func @main {
      tensor @x : input int32[2,2]
      tensor @y : output int32[2,2]
    ^bb0:
      %x = affine_load @x : int32[2,2]
      %f = bitcast %x : float32[2,2]
      %i = bitcast %f : int32[2,2]
      affine_store %i, @y
    }
    """
    assert_unchanged(acast("all"), text)


def test_float_tensor_scalar_gep_narrows_like_a_store() -> None:
    text = """
    func @main {
      tensor @w : const float32[3] = splat 2.0
      tensor @t : internal float32[3]
      tensor @y : output float32[3]
    ^bb0:
      %w = affine_load @w : float32[3]
      tensor_scalar_gep.mul %w, float32 0.5 -> @t {allowed = [float32, bfloat16]}
      %r = affine_load @t : float32[3]
      affine_store %r, @y
    }
    """
    _, out = run(acast("all"), text)
    assert "tensor_scalar_gep.mul %bfloat16.w, bfloat16 0.5 -> @t" in out
    assert "tensor @t : internal bfloat16[3]" in out
    # a GEP whose allowed set lacks the dtype is left alone
    _, out16 = run(acast("experimental-all-fp16"), text)
    assert "tensor @t : internal float32[3]" in out16
