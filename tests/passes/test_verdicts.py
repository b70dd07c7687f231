"""The decisions as pure functions (passes/mutator_gates.py, passes/autocast_rules.py): each gate's
and guard's spec case gives its (state, rule, action), in the spec's order, and deciding never
changes the IR. Quirks the spec marks are tests named after them."""
from __future__ import annotations

from typing import Any

import pytest

from pyprecision import ir
from pyprecision.passes import (
    absorb_verdict,
    instruction_verdict,
    match_or_mutate_verdict,
    mutate_load_verdict,
    shrink_verdict,
)
from pyprecision.passes.auto_cast_tc_inputs import truncated_dtype

from .helpers import parse

BF16 = ir.bfloat16


def named(m: ir.Module, name: str) -> ir.Instruction:
    return next(i for i in m.main.instructions() if i.result is not None and i.result.name == name)


def decide(m: ir.Module, fn: Any, *args: Any, **kw: Any) -> tuple[str, str, str]:
    """Call a verdict function and check it left the printed module byte-identical."""
    before = ir.to_text(m)
    v = fn(*args, **kw)
    assert ir.to_text(m) == before, "a verdict function changed the IR"
    return v.state, v.rule, v.action


def gates(m: ir.Module, operand: Any, dtype: Any = "bfloat16", multi: bool = False,
          dma: bool = True) -> tuple[str, str, str]:
    return decide(m, match_or_mutate_verdict, operand, dtype, mutate_multi_users=multi,
                  enable_dma_cast=dma)


def one_cast(producer: str, decls: str = "tensor @x : input float32[2,2]", extra: str = "") -> ir.Module:
    return parse(f"""
    func @main {{
      {decls}
      tensor @y : output bfloat16[2,2]
      tensor @z : output float32[2,2]
    ^bb0:
      {producer}
      %c = cast %p : bfloat16[2,2]
      affine_store %c, @y
      {extra}
    }}
    """)


EXP = "%x = affine_load @x : float32[2,2]\n  %p = exp %x : float32[2,2]"


# -- spec 002 matchOrMutateDstTy: the eight gates, in order -------------------------------------
def test_gate_1_match_when_the_dtype_is_already_equal() -> None:
    m = one_cast(EXP)
    assert gates(m, named(m, "p"), "float32") == ("match", "gate 1", "")


def test_gate_2_reinterpreted_access_pattern() -> None:
    m = parse("""
    func @main {
      tensor @x : input int32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %f = affine_load @x as float32 : float32[2,2]
      affine_store %f, @y
    }
    """)
    assert gates(m, named(m, "f").src) == ("mismatch", "gate 2", "")  # type: ignore[attr-defined]


def test_gate_3_gep_producer_outside_its_allowed_dtypes() -> None:
    m = parse("""
    func @main {
      tensor @ids : input float32[3]
      tensor @rows : internal float32[3]
      tensor @y : output float32[3]
    ^bb0:
      %ids = affine_load @ids : float32[3]
      tensor_scalar_gep.add %ids, float32 1.0 -> @rows {allowed = [float32, float16]}
      %r = affine_load @rows : float32[3]
      affine_store %r, @y
    }
    """)
    view = named(m, "r").src  # type: ignore[attr-defined]
    assert gates(m, view) == ("mismatch", "gate 3", "")
    assert gates(m, view, "float16") == ("mismatch", "gate 4", "")  # legal, but a view has no dst


def test_gate_4_fires_before_the_multi_user_knob_of_gate_7() -> None:
    m = one_cast(EXP, extra="affine_store %p, @z")
    assert gates(m, named(m, "p"), multi=True) == ("mismatch", "gate 4", "")
    v = match_or_mutate_verdict(named(m, "p"), BF16, mutate_multi_users=True, enable_dma_cast=True)
    assert v.reason == "multi-user: dst is read 2 times, not exactly once"


def test_gate_5_reinterpreting_producer() -> None:
    m = one_cast("%i = affine_load @x : int32[2,2]\n  %p = bitcast %i : float32[2,2]",
                 decls="tensor @x : input int32[2,2]")
    assert gates(m, named(m, "p")) == ("mismatch", "gate 5", "")


def test_gate_6_hands_an_sb_atom_load_to_mutate_load() -> None:
    m = one_cast("%p = sb_atom_load @x : float32[2,2]")
    assert gates(m, named(m, "p")) == ("mutated", "gate 6", "dma-cast")
    assert gates(m, named(m, "p"), dma=False) == ("mismatch", "gate 6", "")


def test_gate_7_multi_user_only_without_mutate_multi_users() -> None:
    """Gate 7 reads the producer's own users; decision P17: a dst read once has one user in this
    IR, so a probe with a second use of the result stands in for the seed's multi-user op."""
    m = one_cast(EXP)
    p = named(m, "p")

    class MultiUser:  # the producer, with has_single_user answered False
        def __getattr__(self, name: str) -> Any:
            return False if name == "has_single_user" else getattr(p, name)

    probe: Any = MultiUser()
    assert gates(m, probe) == ("mismatch", "gate 7", "")
    assert gates(m, probe, multi=True) == ("mutated", "gate 8", "retype")


def test_gate_8_quirk_can_mutate_dst_ty_is_false_for_a_matmul() -> None:
    m = one_cast("%x = affine_load @x : float32[2,2]\n  %p = matmul %x, %x : float32[2,2]")
    v = match_or_mutate_verdict(named(m, "p"), BF16, mutate_multi_users=False, enable_dma_cast=True)
    assert (v.state, v.rule, v.reason) == ("mismatch", "gate 8", "canMutateDstTy is false (matmul "
                                           "results live in fp32 PSUM)")


def test_all_eight_gates_pass_retypes() -> None:
    m = one_cast(EXP)
    assert gates(m, named(m, "p")) == ("mutated", "gate 8", "retype")


# -- spec 002 mutateLoad (:127), gate 6's sub-gates in order ------------------------------------
BCAST = """
func @main {
  tensor @row : input {rowdt}[1,2]
  tensor @y : output float16[2,2]
^bb0:
  %row = sb_atom_load @row broadcast : {rowdt}[2,2]
  %c = cast %row : float16[2,2]
  affine_store %c, @y
}
"""


@pytest.mark.parametrize("rowdt", ["bfloat16", "float32r"])
def test_mutate_load_130_broadcast_bf16_or_fp32r_load_cannot_become_fp16(rowdt: str) -> None:
    m = parse(BCAST.replace("{rowdt}", rowdt))
    assert decide(m, mutate_load_verdict, named(m, "row"), "float16",
                  enable_dma_cast=True) == ("mismatch", "gate 6", "")


def test_mutate_load_136_fp8_e5m2_is_not_a_load_target() -> None:
    m = one_cast("%p = sb_atom_load @x : float32[2,2]")
    assert decide(m, mutate_load_verdict, named(m, "p"), "float8_e5m2",
                  enable_dma_cast=True) == ("mismatch", "gate 6", "")


WEIGHT = "tensor @w : const {wdt}[2,2] = splat 0.5"


def test_mutate_load_146_weight_already_the_target_dtype_is_a_match() -> None:
    """Decision P11: ``self.dtype`` at :146 is the requested dtype."""
    m = one_cast("%p = sb_atom_load @w : float32[2,2]", decls=WEIGHT.format(wdt="bfloat16"))
    assert decide(m, mutate_load_verdict, named(m, "p"), "bfloat16",
                  enable_dma_cast=False) == ("match", "gate 6", "")


def test_mutate_load_149_a_weight_is_const_folded_without_dma_cast() -> None:
    m = one_cast("%p = sb_atom_load @w : float32[2,2]", decls=WEIGHT.format(wdt="float32"))
    assert decide(m, mutate_load_verdict, named(m, "p"), "bfloat16",
                  enable_dma_cast=False) == ("mutated", "gate 6", "const-fold")


def test_mutate_load_152_the_switch_enable_dma_cast_is_read_off_the_target() -> None:
    """CORRECTION (spec 002 §1): enable_dma_cast is the target's, passed in, never the pass's."""
    m = one_cast("%p = sb_atom_load @x : float32[2,2]")
    load = named(m, "p")
    assert decide(m, mutate_load_verdict, load, "bfloat16", enable_dma_cast=False)[:2] == \
        ("mismatch", "gate 6")
    assert decide(m, mutate_load_verdict, load, "bfloat16", enable_dma_cast=True) == \
        ("mutated", "gate 6", "dma-cast")


def test_driver_decision_p10_only_float_to_float_casts_of_a_result() -> None:
    m = parse("""
    func @main {
      tensor @x : input float32[2,2]
      tensor @y : output int32[2,2]
      tensor @z : output float32[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      %i = cast %x : int32[2,2]
      %same = cast %x : float32[2,2]
      affine_store %i, @y
      affine_store %same, @z
    }
    """)
    verdict = absorb_verdict(named(m, "i"))
    assert verdict is not None and (verdict.state, verdict.rule) == ("skip", "driver")
    assert absorb_verdict(named(m, "same")) is None  # an identity cast: cast-elimination's job
    assert absorb_verdict(named(m, "x")) is None  # not a cast


# -- spec 000 §3 transformInstruction: the skip rules --------------------------------------------
MIXED = """
func @main {
  tensor @x : input float32[2,2]
  tensor @ids : input int32[2]
  tensor @out : output int32[4]
  tensor @z : output float32[2,2]
  tensor @y : output float32[2,2]
^bb0:
  %x = affine_load @x : float32[2,2]
  %ids = affine_load @ids : int32[2]
  %k = add %ids, %ids : int32[2]
  generic_store %k, @out[%ids]
  %p = cmp_gt %x, %x : uint8[2,2]
  %s = select %p, %x, float32 0.0 : float32[2,2]
  opaque "copy" ins(@x) outs(@z)
  affine_store %s, @y
}
"""


def rule_of(m: ir.Module, inst: ir.Instruction) -> tuple[str, str, str]:
    return decide(m, instruction_verdict, inst, BF16)


def test_quirk_opaque_call_ops_are_skipped_by_skip_rule_1() -> None:
    m = parse(MIXED)
    opaque = next(i for i in m.main.instructions() if isinstance(i, ir.OpaqueOp))
    assert rule_of(m, opaque) == ("skip", "skip rule 1", "")


def test_skip_rule_2_integer_path_and_skip_rule_4_integer_generic_store() -> None:
    m = parse(MIXED)
    assert rule_of(m, named(m, "k")) == ("skip", "skip rule 2", "")
    store = next(i for i in m.main.instructions() if isinstance(i, ir.GenericStore))
    assert rule_of(m, store) == ("skip", "skip rule 4", "")


def test_skip_rule_3_a_select_keeps_its_predicate() -> None:
    m = parse(MIXED)
    assert rule_of(m, named(m, "s")) == ("apply", "skip rule 3", "narrow")


def test_quirk_loads_and_stores_cast_opposite_ends() -> None:
    """Spec 000 §5 QUIRK: a load casts its RESULT, a store its SOURCE."""
    m = parse(MIXED)
    assert rule_of(m, named(m, "x"))[2] == "cast-result"
    store = next(i for i in m.main.instructions() if isinstance(i, ir.AffineStore))
    assert rule_of(m, store)[2] == "cast-source"


def test_gotcha_transform_unary_op_folds_a_cast_whose_source_is_already_the_target() -> None:
    m = parse("""
    func @main {
      tensor @x : input bfloat16[2]
      tensor @y : output float32[2]
      tensor @z : output float16[2]
    ^bb0:
      %x = affine_load @x : bfloat16[2]
      %up = cast %x : float32[2]
      %h = cast %x : float16[2]
      affine_store %up, @y
      affine_store %h, @z
    }
    """)
    assert rule_of(m, named(m, "up")) == ("apply", "", "fold")  # fp32 → bf16 = its source: folded
    assert rule_of(m, named(m, "h")) == ("skip", "", "")  # not fp32, not redundant: left alone


# -- spec 000 §6 shrinkTensor: the guard chain, in order -------------------------------------------
def shrink_text(extra: str = "", load: str = "%r = affine_load @t : float32[2,2]",
                cast: str = "%rc = cast %r : bfloat16[2,2]") -> str:
    return f"""
    func @main {{
      tensor @x : input float32[2,2]
      tensor @t : internal float32[2,2]
      tensor @w : const float32[2,2] = splat 1.0
      tensor @y : output float32[2,2]
      tensor @z : output float32[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      affine_store %x, @t
      {load}
      {cast}
      %mm = matmul %rc, %rc : float32[2,2]
      affine_store %mm, @y
      {extra}
    }}
    """


def guard(text: str, tensor: str = "t") -> tuple[str, str, str]:
    m = parse(text)
    return decide(m, shrink_verdict, m.main.get_tensor(tensor), truncated_dtype)


@pytest.mark.parametrize(("text", "tensor", "rule"), [
    (shrink_text('opaque "copy" ins(@t) outs(@z)'), "t", "shrinkTensor guard 1"),
    (shrink_text('opaque "copy" ins(@x) outs(@t)'), "t", "shrinkTensor guard 2"),
    (shrink_text("%r2 = affine_load @t : float32[2,2]\n  affine_store %r2, @z"), "t",
     "shrinkTensor guard 4"),
    (shrink_text(load="%r = affine_load @z : float32[2,2]"), "z", "shrinkTensor guard 5"),
    (shrink_text(load="%r = affine_load @w : float32[2,2]"), "w", "shrinkTensor guard 6"),
    (shrink_text(cast="%rc = exp %r : float32[2,2]"), "t", "shrinkTensor guard 8"),
])
def test_shrink_tensor_guards_in_the_spec_order(text: str, tensor: str, rule: str) -> None:
    assert guard(text, tensor) == ("skip", rule, "")


def test_shrink_tensor_guard_11_a_computing_writer_blocks_decision_p7() -> None:
    text = shrink_text().replace("  affine_store %x, @t",
                                 "  tensor_scalar_gep.mul %x, float32 0.5 -> @t "
                                 "{allowed = [float32, bfloat16]}")
    assert guard(text) == ("skip", "shrinkTensor guard 11", "")


def test_shrink_tensor_all_guards_pass() -> None:
    assert guard(shrink_text()) == ("apply", "shrinkTensor", "shrink")


def test_decision_p5_a_memcpy_into_a_tensor_already_narrow_is_left_alone() -> None:
    text = """
    func @main {
      tensor @x : input float32[2,2]
      tensor @t : internal {tdt}[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      offloaded_memcpy @x -> @t
      %r = affine_load @t : float32[2,2]
      affine_store %r, @y
    }
    """
    for tdt, want in (("bfloat16", ("skip", "", "")), ("float32", ("apply", "", "narrow-destination"))):
        m = parse(text.replace("{tdt}", tdt))
        memcpy = next(i for i in m.main.instructions() if isinstance(i, ir.OffloadedMemCpy))
        assert rule_of(m, memcpy) == want
