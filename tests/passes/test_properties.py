"""Properties over random well-formed programs (tests/ir/strategies.py) and the emulator invariants."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir.strategies import inputs_for, modules  # tests/ is on sys.path (rootdir-relative packages)

from pyprecision import ir
from pyprecision.emulate import run_ir
from pyprecision.passes import (
    AutoCastTCInputs,
    CastElimination,
    DTypeMutator,
    MutateState,
    MutatorRun,
    Target,
    make_pass,
    pipeline_pass_names,
)

from .helpers import TargetDouble, parse

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MODES = ["all", "all-fp32r", "all-fp8e4", "experimental-all-fp16", "matmult", "matmult-bf16",
         "matmult-fp8e4"]


def same_outputs(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k, value in a.items():
        x, y = np.asarray(value).astype(np.float64), np.asarray(b[k]).astype(np.float64)
        np.testing.assert_array_equal(x, y, err_msg=k)  # NaN == NaN positionally


def roundtrip(m: ir.Module) -> None:
    text = ir.to_text(m)
    assert ir.to_text(ir.parse(text)) == text


@SETTINGS
@given(m=modules(), mode=st.sampled_from(MODES), gen=st.sampled_from(["gen2", "gen3", "gen4"]))
def test_verifier_and_print_parse_after_every_pass(m: ir.Module, mode: str, gen: str) -> None:
    target = Target.from_config(mode, gen)
    for name in pipeline_pass_names(mode):
        make_pass(name, target).run(m)
        ir.verify(m)
        roundtrip(m)


@SETTINGS
@given(data=st.data(), mode=st.sampled_from(MODES))
def test_cast_elimination_only_moves_casts(data: st.DataObject, mode: str) -> None:
    m = data.draw(modules())
    target = Target.from_config(mode, "gen3")
    for name in pipeline_pass_names(mode)[:2]:  # AutoCast + DTypeMutator, then compare around CE
        make_pass(name, target).run(m)
    inputs = data.draw(inputs_for(m.main))
    before = run_ir(m, inputs)
    CastElimination().run(m)
    ir.verify(m)
    same_outputs(before, run_ir(m, inputs))


@SETTINGS
@given(data=st.data(), mode=st.sampled_from(["matmult", "matmult-bf16", "matmult-fp8e4"]))
def test_shrink_tensor_only_moves_casts(data: st.DataObject, mode: str) -> None:
    m = data.draw(modules())
    p = AutoCastTCInputs(Target.from_config(mode, "gen2"))
    f = m.main
    for inst in list(f.instructions()):
        if inst.parent is not None:
            p.transform_instruction(inst)
    inputs = data.draw(inputs_for(f))
    before = run_ir(m, inputs)
    p.after_stmt_transform(f)  # the physical narrowing
    ir.verify(m)
    same_outputs(before, run_ir(m, inputs))


def fold_const_loads_only(m: ir.Module, dtype_target: TargetDouble) -> int:
    """Run DTypeMutator's gates only on casts of const SBAtomLoads (the const-fold path)."""
    p = DTypeMutator(dtype_target)  # type: ignore[arg-type]
    run = MutatorRun(m.main)
    folded = 0
    for inst in list(m.main.instructions()):
        if isinstance(inst, ir.UnaryOp) and inst.is_cast and inst.data.dtype.is_float \
                and inst.dtype.is_float:
            owner = inst.data.owner
            if isinstance(owner, ir.SBAtomLoad) and owner.load_const:
                folded += p.match_or_mutate_dst_ty(owner, inst.dtype, run) is MutateState.Mutated
    return folded


@st.composite
def weight_programs(draw: st.DrawFn) -> tuple[str, str]:
    rows, cols = draw(st.sampled_from([(2, 3), (3, 2), (1, 4)]))
    n = rows * cols
    values = draw(st.lists(st.floats(-1e5, 1e5, width=32, allow_subnormal=True), min_size=n,
                           max_size=n))
    import base64

    dense = base64.b64encode(np.asarray(values, dtype=np.float32).tobytes()).decode()
    dt = draw(st.sampled_from(["bfloat16", "float16", "float32r", "float8e4", "float8e4m3fn"]))
    op = draw(st.sampled_from(["neg", "relu", "square", "abs"]))
    text = f"""
    func @main {{
      tensor @x : input float32[{rows},{cols}]
      tensor @w : const float32[{rows},{cols}] = dense "{dense}"
      tensor @y : output float32[{rows},{cols}]
    ^bb0:
      %x = affine_load @x : float32[{rows},{cols}]
      %w = sb_atom_load @w : float32[{rows},{cols}]
      %c = cast %w : {dt}[{rows},{cols}]
      %u = {op} %c : float32[{rows},{cols}]
      %s = add %u, %x : float32[{rows},{cols}]
      affine_store %s, @y
    }}
    """
    return text, dt


@SETTINGS
@given(prog=weight_programs(), data=st.data())
def test_const_folded_weight_equals_runtime_cast(prog: tuple[str, str], data: st.DataObject) -> None:
    text, _ = prog
    runtime = parse(text)
    folded = parse(text)
    assert fold_const_loads_only(folded, TargetDouble(enable_dma_cast=False)) == 1
    ir.verify(folded)
    assert not any(isinstance(i, ir.SBAtomLoad) and i.tensor.dtype.name == "float32"
                   for i in folded.main.instructions())
    inputs = data.draw(inputs_for(runtime.main))
    same_outputs(run_ir(runtime, inputs), run_ir(folded, inputs))


@SETTINGS
@given(data=st.data())
def test_const_fold_on_random_programs(data: st.DataObject) -> None:
    m = data.draw(modules())
    inputs = data.draw(inputs_for(m.main))
    before = run_ir(m, inputs)
    fold_const_loads_only(m, TargetDouble(enable_dma_cast=False))
    ir.verify(m)
    after = run_ir(m, inputs)
    same_outputs(before, after)


RETYPE = """
func @main {
  tensor @a : input float32[1]
  tensor @b : input float32[1]
  tensor @y : output bfloat16[1]
^bb0:
  %a = affine_load @a : float32[1]
  %b = affine_load @b : float32[1]
  %m = mul %a, %b : float32[1]
  %c = cast %m : bfloat16[1]
  affine_store %c, @y
}
"""


def test_retype_turns_two_roundings_into_one() -> None:
    # exact product 1 + 2^-8 + (2^-28 - 2^-40): fp32 rounds it to the bf16 tie 1 + 2^-8, which
    # RNE sends down to 1.0; rounding the exact product once to bf16 goes up to 1 + 2^-7.
    a = np.array([1 + 2.0**-8 - 2.0**-20], dtype=np.float32)
    b = np.array([1 + 2.0**-20], dtype=np.float32)
    two = parse(RETYPE)
    one = parse(RETYPE)
    assert DTypeMutator(TargetDouble()).run(one) is True  # type: ignore[arg-type]
    assert "%m = mul %a, %b : bfloat16[1]" in ir.to_text(one)
    y_two = run_ir(two, {"a": a, "b": b})["y"].astype(np.float64)
    y_one = run_ir(one, {"a": a, "b": b})["y"].astype(np.float64)
    assert y_two[0] == 1.0
    assert y_one[0] == 1 + 2.0**-7


@SETTINGS
@given(a=st.floats(0.5, 2, width=32), b=st.floats(0.5, 2, width=32))
def test_retyped_product_is_correctly_rounded(a: float, b: float) -> None:
    import ml_dtypes

    one = parse(RETYPE)
    DTypeMutator(TargetDouble()).run(one)  # type: ignore[arg-type]
    two = parse(RETYPE)
    ins = {"a": np.array([a], np.float32), "b": np.array([b], np.float32)}
    exact = np.float64(np.float32(a)) * np.float64(np.float32(b))  # exact: 48-bit product
    y_one = float(run_ir(one, ins)["y"][0])
    y_two = float(run_ir(two, ins)["y"][0])
    assert y_one == float(np.array(exact).astype(ml_dtypes.bfloat16))  # one rounding
    ulp = 2.0 ** (np.floor(np.log2(abs(exact))) - 7)
    assert abs(y_two - y_one) <= ulp  # double rounding is off by at most one bf16 ulp


@pytest.mark.parametrize("mode", MODES)
def test_pipeline_on_examples_verifies_and_round_trips(mode: str) -> None:
    from pyprecision.passes import run_pipeline

    from .helpers import EXAMPLES

    for path in sorted(EXAMPLES.glob("*.pir")):
        if path.stat().st_size > 100_000:
            continue
        m = ir.parse(path.read_text(), filename=str(path))
        run_pipeline(m, mode, "gen3")
        roundtrip(m)



@SETTINGS
@given(m=modules(), name=st.sampled_from(["auto-cast-fp32", "auto-cast-inputs", "auto-cast-tc-inputs",
                                          "dtype-mutator", "cast-elimination"]),
       mode=st.sampled_from(MODES), gen=st.sampled_from(["gen2", "gen3"]))
def test_changed_flag_is_exactly_a_text_change(m: ir.Module, name: str, mode: str, gen: str) -> None:
    before = ir.to_text(m)
    changed = make_pass(name, Target.from_config(mode, gen)).run(m)
    assert changed == (ir.to_text(m) != before)
