"""Elementwise runs evaluated block by block (decision EM-14) give every bit the one-instruction-at-
a-time evaluator gives: on every real model of tests/data under several flag sets, and on random
elementwise chains (hypothesis) over adversarial float32 words, in float32 and the narrow formats.

The blocks are made small here (a few elements, ragged last block) so the real models, which are
small, are cut into many blocks; the reference run has fusion switched off."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import hlo, ir
from pyprecision.emulate import compile_hlo, run_compiled, run_ir
from pyprecision.emulate.ir import fused
from pyprecision.emulate.shared import blocks
from pyprecision.errors import EmulationError, LoweringError, PassError, VerifyError
from pyprecision.frontend import parse_flags
from tests.models_data import load_model, model_names

ERRORS = (EmulationError, LoweringError, PassError, VerifyError)
FLAGS = [["--auto-cast", "none"], ["--auto-cast", "matmult"], ["--auto-cast", "all"],
         ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3", "--enable-saturate-infinity"]]
MODELS = [(s, n) for s in ("jax-0.10.2", "torch_xla-2.9.0") for n in model_names(s)
          if n not in ("bert_base", "bert_base_per_head")]  # the two BERTs: minutes, same ops


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK", 7)
    monkeypatch.setattr(blocks, "MIN_ELEMENTS", 8)


def _bits(outs):
    return [np.asarray(o).tobytes() for o in outs]


def _unfused(monkeypatch, compiled, inputs):
    with monkeypatch.context() as m:
        m.setattr(fused, "MIN_RUN", 10**9)
        return run_compiled(compiled, inputs)


_PLANNED: list[int] = []


@pytest.mark.parametrize("source,name", MODELS)
def test_real_models_block_by_block(source, name, small_blocks, monkeypatch):
    data = load_model(name, source)
    if not data.inputs:
        pytest.skip("text-only module")
    module = hlo.parse(data.text)
    for flags in FLAGS:
        try:
            compiled = compile_hlo(module, parse_flags(flags))
        except ERRORS:
            continue
        f = compiled.lowered.function
        runs = fused.plan_runs(list(f.instructions()))
        _PLANNED.append(sum(len(r.body) for r in runs.values()))
        try:
            want = _unfused(monkeypatch, compiled, data.inputs)
        except ERRORS as exc:
            with pytest.raises(type(exc)):
                run_compiled(compiled, data.inputs)
            continue
        assert _bits(run_compiled(compiled, data.inputs)) == _bits(want), flags


def test_the_real_models_have_runs():
    """The comparison above is not vacuous: its models form runs (it ran first in this file)."""
    if not _PLANNED:
        pytest.skip("run with the real-model test")
    assert sum(_PLANNED) > 100


SPECIAL = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC00001,
           0x7F800001, 0xFFA00005, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
           0x3F800000, 0x3F800001, 0x477FE000, 0x43E00000, 0xC3700000]
words = st.one_of(st.sampled_from(SPECIAL), st.integers(0, 2**32 - 1),
                  st.floats(-8, 8, width=32).map(
                      lambda v: int(np.float32(v).view(np.uint32))))
UNARY = ["neg", "abs", "exp", "sqrt", "reciprocal", "square", "tanh", "sign", "floor", "satinf"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]
DTYPES = ["float32", "bfloat16", "float16", "float8e4", "float8e5"]


@st.composite
def chains(draw):
    """IR text of a random elementwise chain on two [n] inputs, and the inputs."""
    n = draw(st.integers(1, 40))
    dt = draw(st.sampled_from(DTYPES))
    x = np.array(draw(st.lists(words, min_size=n, max_size=n)), np.uint32).view(np.float32)
    y = np.array(draw(st.lists(words, min_size=n, max_size=n)), np.uint32).view(np.float32)
    lines = [f"  %x0 = affine_load @x : float32[{n}]", f"  %y0 = affine_load @y : float32[{n}]",
             f"  %a = cast %x0 : {dt}[{n}]", f"  %b = cast %y0 : {dt}[{n}]"]
    names = ["a", "b"]
    for k in range(draw(st.integers(3, 14))):
        what = draw(st.sampled_from(["unary", "binary", "imm", "select"]))
        p = draw(st.sampled_from(names))
        q = draw(st.sampled_from(names))
        v = f"v{k}"
        if what == "unary":
            lines.append(f"  %{v} = {draw(st.sampled_from(UNARY))} %{p} : {dt}[{n}]")
        elif what == "binary":
            lines.append(f"  %{v} = {draw(st.sampled_from(BINARY))} %{p}, %{q} : {dt}[{n}]")
        elif what == "imm":
            c = draw(st.sampled_from(["0.5", "-1.0", "3.0", "0.0"]))
            lines.append(f"  %{v} = {draw(st.sampled_from(BINARY))} %{p}, {dt} {c} : {dt}[{n}]")
        else:
            lines.append(f"  %m{k} = {draw(st.sampled_from(['cmp_lt', 'cmp_eq', 'cmp_ge']))} "
                         f"%{p}, %{q} : uint8[{n}]")
            lines.append(f"  %{v} = select %m{k}, %{q}, %{p} : {dt}[{n}]")
        names.append(v)
    outs = draw(st.lists(st.sampled_from(names[2:]), min_size=1, max_size=3, unique=True))
    lines += [f"  %o{i} = cast %{o} : float32[{n}]" for i, o in enumerate(outs)]
    lines += [f"  affine_store %o{i}, @out{i}" for i in range(len(outs))]
    decl = [f"  tensor @x : input float32[{n}]", f"  tensor @y : input float32[{n}]"]
    decl += [f"  tensor @out{i} : output float32[{n}]" for i in range(len(outs))]
    return "func @main {\n" + "\n".join(decl) + "\n^bb0:\n" + "\n".join(lines) + "\n}\n", x, y


@settings(max_examples=150, deadline=None)
@given(chain=chains(), block=st.integers(1, 9))
def test_random_chains_block_by_block(chain, block):
    text, x, y = chain
    module = ir.parse(text)
    saved = blocks.BLOCK, blocks.MIN_ELEMENTS, fused.MIN_RUN
    try:
        fused.MIN_RUN = 10**9
        want = run_ir(module, {"x": x, "y": y})
        blocks.BLOCK, blocks.MIN_ELEMENTS, fused.MIN_RUN = block, 1, 2
        f = module.main
        assert fused.plan_runs(list(f.instructions()))  # the chain is a run
        got = run_ir(module, {"x": x, "y": y})
    finally:
        blocks.BLOCK, blocks.MIN_ELEMENTS, fused.MIN_RUN = saved
    assert set(got) == set(want)
    for k in want:
        assert got[k].tobytes() == want[k].tobytes(), k


def test_a_run_keeps_only_the_values_read_after_it():
    """Outputs are exactly the values a later instruction reads; the rest never exist whole."""
    n = 300
    text = f"""func @main {{
  tensor @x : input float32[{n}]
  tensor @out : output float32[{n}]
  tensor @out2 : output float32[{n}]
^bb0:
  %x = affine_load @x : float32[{n}]
  %a = mul %x, float32 2.0 : float32[{n}]
  %b = add %a, float32 1.0 : float32[{n}]
  %c = mul %b, %a : float32[{n}]
  %d = neg %c : float32[{n}]
  affine_store %d, @out
  affine_store %b, @out2
}}
"""
    f = ir.parse(text).main
    insts = list(f.instructions())
    saved = blocks.BLOCK, blocks.MIN_ELEMENTS
    try:
        blocks.BLOCK, blocks.MIN_ELEMENTS = 64, 64
        runs = fused.plan_runs(insts)
    finally:
        blocks.BLOCK, blocks.MIN_ELEMENTS = saved
    (run,) = runs.values()
    assert [type(insts[k]).__name__ for k in run.body] == ["BinaryOp"] * 3 + ["UnaryOp"]
    assert run.outputs == {id(insts[2].result), id(insts[4].result)}  # %b and %d
    assert run.inputs == [id(insts[0].result)]
