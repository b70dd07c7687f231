"""The optional provenance hook (passes/provenance.py): every decision point reports itself, and with
the hook off nothing changes — outputs and statistics byte-identical."""
from __future__ import annotations

from typing import Any

import pytest

from pyprecision import ir
from pyprecision.frontend import MODE_TABLE
from pyprecision.passes import (
    AutoCastFP32,
    AutoCastInputs,
    AutoCastTCInputs,
    CastElimination,
    Decision,
    DTypeMutator,
    MutateState,
    Target,
    make_pass,
    pipeline_pass_names,
    run_pipeline,
)

from .helpers import EXAMPLES, TargetDouble, parse


def dm(log: list[Decision] | None, dma: bool = True, multi: bool = False) -> DTypeMutator:
    return DTypeMutator(TargetDouble(enable_dma_cast=dma), mutate_multi_users=multi,  # type: ignore[arg-type]
                        provenance=log)


def inst(m: ir.Module, name: str) -> ir.Instruction:
    return next(i for i in m.main.instructions() if i.result is not None and i.result.name == name)


def gates(log: list[Decision]) -> list[tuple[str, str, str]]:
    """(op, rule, state) of every DTypeMutator gate decision."""
    return [(d.op, d.rule, d.state) for d in log if d.rule.startswith("gate ")]


def one_cast(producer: str, decls: str = "tensor @x : input float32[2,2]",
             cast_to: str = "bfloat16") -> str:
    return f"""
    func @main {{
      {decls}
      tensor @y : output {cast_to}[2,2]
    ^bb0:
      {producer}
      %c = cast %p : {cast_to}[2,2]
      affine_store %c, @y
    }}
    """


# -- DTypeMutator: every gate reports itself -------------------------------------------------------
def test_gate_1_match_reports_itself() -> None:
    log: list[Decision] = []
    m = parse(one_cast("%x = affine_load @x : float32[2,2]\n  %p = exp %x : float32[2,2]"))
    assert dm(log).match_or_mutate_dst_ty(inst(m, "p"), "float32") is MutateState.Match
    assert gates(log) == [("%p", "gate 1", "match")]


def test_gate_2_reinterpreted_view_reports_itself() -> None:
    log: list[Decision] = []
    m = parse("""
    func @main {
      tensor @x : input int32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %f = affine_load @x as float32 : float32[2,2]
      affine_store %f, @y
    }
    """)
    dm(log).match_or_mutate_dst_ty(inst(m, "f").src, "bfloat16")  # type: ignore[attr-defined]
    assert [(d.rule, d.state) for d in log] == [("gate 2", "mismatch")]


def test_gate_3_gep_producer_reports_itself() -> None:
    log: list[Decision] = []
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
    dm(log).match_or_mutate_dst_ty(inst(m, "r").src, "bfloat16")  # type: ignore[attr-defined]
    assert [(d.rule, d.state) for d in log] == [("gate 3", "mismatch")]
    assert "bfloat16" in log[0].message


def test_gate_4_multi_user_reports_itself_and_the_cast_is_kept() -> None:
    log: list[Decision] = []
    m = parse(one_cast("%x = affine_load @x : float32[2,2]\n  %p = exp %x : float32[2,2]\n"
                       "  %q = mul %p, %p : float32[2,2]", "tensor @x : input float32[2,2]\n"
                       "  tensor @z : output float32[2,2]").replace(
        "affine_store %c, @y", "affine_store %c, @y\n  affine_store %q, @z"))
    dm(log).run(m)
    assert gates(log) == [("%p", "gate 4", "mismatch")]
    assert "read 3 times" in log[0].message  # %q reads it twice, the cast once
    kept = [d for d in log if d.rule == "kept"]
    assert [d.op for d in kept] == ["%c"] and "gate 4" in kept[0].message


def test_gate_5_bitcast_reports_itself() -> None:
    log: list[Decision] = []
    m = parse(one_cast("%x = affine_load @x : int32[2,2]\n  %p = bitcast %x : float32[2,2]",
                       "tensor @x : input int32[2,2]"))
    dm(log).run(m)
    assert gates(log) == [("%p", "gate 5", "mismatch")]


@pytest.mark.parametrize(("decls", "load", "dma", "cast_to", "state", "words"), [
    ("tensor @x : input float32[2,2]", "sb_atom_load @x", False, "bfloat16", "mismatch",
     "no DMA cast"),
    ("tensor @x : input float32[2,2]", "sb_atom_load @x", True, "bfloat16", "mutated",
     "the DMA carries the cast"),
    ("tensor @x : input float32[2,2]", "sb_atom_load @x", True, "float8_e5m2", "mismatch",
     "e5m2"),
    ("tensor @x : const float32[2,2] = splat 0.5", "sb_atom_load @x", False, "bfloat16",
     "mutated", "const-folded"),
])
def test_gate_6_mutate_load_sub_gates_report_themselves(
        decls: str, load: str, dma: bool, cast_to: str, state: str, words: str) -> None:
    log: list[Decision] = []
    m = parse(one_cast(f"%p = {load} : float32[2,2]", decls, cast_to))
    dm(log, dma=dma).run(m)
    (gate,) = [d for d in log if d.rule == "gate 6"]
    assert (gate.op, gate.state) == ("%p", state) and words in gate.message


def test_gate_6_weight_fold_reports_static_cast_load_tensor() -> None:
    log: list[Decision] = []
    text = """
    func @main {
      tensor @w : const float32[2,2] = dense "AACAPwAAAEAAAEBAAACAQA=="
      tensor @y : output bfloat16[2,2]
      tensor @z : output bfloat16[2,2]
    ^bb0:
      %w = sb_atom_load @w : float32[2,2]
      %c = cast %w : bfloat16[2,2]
      %w2 = sb_atom_load @w : float32[2,2]
      %c2 = cast %w2 : bfloat16[2,2]
      affine_store %c, @y
      affine_store %c2, @z
    }
    """
    dm(log).run(parse(text))
    folds = [(d.op, d.message) for d in log if d.rule == "staticCastLoadTensor"]
    assert folds == [("%w", "@w re-encoded as @w_bfloat16"),
                     ("%w2", "reuses @w_bfloat16 (tensor_map memo)")]


def test_gate_8_matmul_and_all_gates_passed_report_themselves() -> None:
    log: list[Decision] = []
    m = parse(one_cast("%x = affine_load @x : float32[2,2]\n  %p = matmul %x, %x : float32[2,2]"))
    dm(log).run(m)
    assert gates(log) == [("%p", "gate 8", "mismatch")]
    assert "PSUM" in log[0].message
    log.clear()
    m = parse(one_cast("%x = affine_load @x : float32[2,2]\n  %p = exp %x : float32[2,2]"))
    dm(log).run(m)
    assert gates(log) == [("%p", "gate 8", "mutated")]
    assert log[0].text() == "DTypeMutator (all eight gates passed): retyped to bfloat16, the cast absorbed"
    assert [(d.op, d.rule) for d in log[1:]] == [("%c", "absorbed")]


STORE_ONE_LOAD = """
func @main {
  tensor @x : input float32[2,2]
  tensor @t : internal float32[2,2]
  tensor @y : output bfloat16[2,2]
^bb0:
  %x = affine_load @x : float32[2,2]
  affine_store %x, @t
  %r = affine_load @t : float32[2,2]
  %c = cast %r : bfloat16[2,2]
  affine_store %c, @y
}
"""


def test_decision_p17_gate_7_is_reachable_only_for_a_memory_writer() -> None:
    m = parse(STORE_ONE_LOAD)
    store = next(i for i in m.main.instructions() if isinstance(i, ir.StoreInst))
    assert store.dst.tensor.n_loads == 1 and not store.has_single_user  # no result value
    log: list[Decision] = []
    assert dm(log).match_or_mutate_dst_ty(store, "bfloat16") is MutateState.Mismatch
    assert [(d.op, d.rule, d.message) for d in log] == [("affine_store @t", "gate 7", "multi-user")]
    # mutate_multi_users lets the writer past gate 7; gate 8 then decides (a store's dst cannot be
    # retyped by DTypeMutator): the knob changes which gate decides, not the program
    log.clear()
    assert dm(log, multi=True).match_or_mutate_dst_ty(store, "bfloat16") is MutateState.Mismatch
    assert [d.rule for d in log] == ["gate 8"]
    assert ir.to_text(m) == ir.to_text(parse(STORE_ONE_LOAD))


@pytest.mark.parametrize("name", ["mlp", "broadcast_load", "index_path", "masked_select",
                                  "opaque_call", "transpose_matmul"])
def test_decision_p17_mutate_multi_users_changes_no_program(name: str) -> None:
    text = (EXAMPLES / f"{name}.pir").read_text()
    for mode in ("all", "matmult-bf16"):
        outs = []
        for multi in (False, True):
            m = ir.parse(text)
            tgt = Target.from_config(mode, "gen3")
            passes = [make_pass(n, tgt) for n in pipeline_pass_names(mode)]
            passes[1] = DTypeMutator(tgt, mutate_multi_users=multi)
            run_pipeline(m, mode, tgt, passes)
            outs.append(ir.to_text(m))
        assert outs[0] == outs[1]


# -- the other passes ------------------------------------------------------------------------------
def test_auto_cast_fp32_skip_rules_and_rewrites_report_themselves() -> None:
    log: list[Decision] = []
    m = ir.parse((EXAMPLES / "opaque_call.pir").read_text())
    AutoCastFP32(Target.from_config("all"), provenance=log).run(m)
    assert any(d.rule == "skip rule 1" for d in log)
    log.clear()
    m = ir.parse((EXAMPLES / "mlp.pir").read_text())
    AutoCastFP32(Target.from_config("all"), provenance=log).run(m)
    texts = {(d.op, d.text()) for d in log}
    assert ("%mm", "auto-cast-fp32: fp32 result narrowed to bfloat16 (spec 000 §3)") in texts
    assert ("@xT", "auto-cast-fp32: input @xT narrowed to bfloat16 at the boundary "
            "(spec 000 §2)") in texts
    assert any(d.op == "%bfloat16.w" and "the load casts its result" in d.message for d in log)


def test_skip_rule_2_integer_path_reports_itself() -> None:
    log: list[Decision] = []
    m = ir.parse((EXAMPLES / "index_path.pir").read_text())
    AutoCastFP32(Target.from_config("all"), provenance=log).run(m)
    assert any(d.rule == "skip rule 2" for d in log)


@pytest.mark.parametrize("inline", [True, False])
def test_insert_input_casts_reports_itself(inline: bool) -> None:
    log: list[Decision] = []
    m = parse("""
    func @main {
      tensor @x : input float32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      %e = exp %x : float32[2,2]
      affine_store %e, @y
    }
    """)
    tgt = Target.from_config("all")
    # an input that stays fp32 at the boundary (a call edge in the seed); force the §2 path
    p = AutoCastFP32(tgt, disable_inline_cast=not inline, provenance=log)
    p.insert_input_casts(m.main.get_tensor("x"))
    rules = [(d.op, d.rule) for d in log]
    assert ("%x", "insertInputCasts") in rules
    assert len([r for r in rules if r[1] == "insertInputCasts"]) == (2 if inline else 3)


def test_auto_cast_inputs_reports_itself() -> None:
    log: list[Decision] = []
    m = ir.parse((EXAMPLES / "mlp.pir").read_text())
    AutoCastInputs(Target.from_config("all"), provenance=log).run(m)
    assert any(d.op == "@xT" and "narrowed" in d.message for d in log)
    assert any(d.op == "%mm" and "only loads of inputs" in d.message for d in log)


def test_cast_tc_operand_and_shrink_tensor_report_themselves() -> None:
    log: list[Decision] = []
    m = parse("""
    func @main {
      tensor @x : input float32[2,3]
      tensor @t : internal float32[2,3]
      tensor @w : const float32[2,2] = splat 0.5
      tensor @y : output float32[3,2]
    ^bb0:
      %x = affine_load @x : float32[2,3]
      %e = exp %x : float32[2,3]
      affine_store %e, @t
      %r = affine_load @t : float32[2,3]
      %w = sb_atom_load @w : float32[2,2]
      %mm = matmul %r, %w : float32[3,2]
      affine_store %mm, @y
    }
    """)
    AutoCastTCInputs(Target.from_config("matmult-bf16"), provenance=log).run(m)
    rules = [(d.op, d.rule) for d in log]
    assert ("%bfloat16.w", "castTCOperand") in rules
    assert ("@t", "shrinkTensor") in rules and ("%r", "shrinkTensor") in rules
    guards = {d.op: d.message for d in log if d.rule.startswith("shrinkTensor guard")}
    assert guards["@x"] == "boundary tensor" and guards["@w"] == "constant tensor"
    assert guards["@y"] == "read 0 times, not exactly once"
    assert any(d.op == "%e" and "only matmul operands" in d.message for d in log)


def test_cast_elimination_rules_report_themselves() -> None:
    log: list[Decision] = []
    m = parse("""
    func @main {
      tensor @x : input bfloat16[2,2]
      tensor @y : output bfloat16[2,2]
    ^bb0:
      %x = affine_load @x : bfloat16[2,2]
      %a = cast %x : float32[2,2]
      %b = cast %a : bfloat16[2,2]
      %i = cast %x : bfloat16[2,2]
      %dead = cast %x : float16[2,2]
      affine_store %b, @y
    }
    """)
    CastElimination(provenance=log).run(m)
    got = {(d.op, d.rule) for d in log}
    assert {("%b", "rule 2"), ("%b", "rule 1"), ("%i", "rule 1"), ("%a", "rule 3"),
            ("%dead", "rule 3")} <= got


# -- the hook is a pure observer ---------------------------------------------------------------------
MODES = ["all", "experimental-all-fp16", "all-fp32r", "all-fp8e4", "matmult-bf16", "matmult-fp16",
         "matmult-fp8e4"]


def _run(text: str, mode: str, log: list[Decision] | None) -> tuple[str, Any]:
    m = ir.parse(text)
    stats = run_pipeline(m, mode, "gen3", provenance=log)
    return ir.to_text(m), (dict(stats), stats.changed)


@pytest.mark.parametrize("name", ["mlp", "broadcast_load", "index_path", "masked_select",
                                  "opaque_call", "transpose_matmul"])
def test_hook_off_and_on_give_byte_identical_outputs_and_statistics(name: str) -> None:
    text = (EXAMPLES / f"{name}.pir").read_text()
    for mode in MODES:
        assert mode in MODE_TABLE
        log: list[Decision] = []
        off = _run(text, mode, None)
        on = _run(text, mode, log)
        assert on == off
        assert log  # the hook did record something
        assert all(isinstance(d, Decision) and d.pass_name for d in log)


def test_hook_is_off_by_default_and_not_a_pass_option() -> None:
    tgt = Target.from_config("all")
    for p in (AutoCastFP32(tgt), DTypeMutator(tgt), CastElimination()):
        assert p.provenance is None
    with pytest.raises(Exception, match="no option 'provenance'"):
        make_pass("dtype-mutator{provenance=true}", tgt)
