"""The HLO evaluator's elementwise runs, block by block (decision EM-14), give every bit the
one-instruction-at-a-time evaluator gives: on every real model of tests/data with inputs and on
the differential fuzzer's random elementwise chains (every dtype and edge value it draws), with
blocks of a few elements (a ragged last block) so that small models are cut into many."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from pyprecision import emulate, hlo
from pyprecision.emulate.hlo import fused as hlo_fused
from pyprecision.emulate.hlo.limits import schedule
from pyprecision.emulate.ir import fused as ir_fused
from pyprecision.emulate.shared import blocks
from pyprecision.errors import EmulationError
from tests.fuzz.test_fuzz_opcodes import NONE, modules
from tests.models_data import load_model, model_names, sources

MODELS = [(s, n) for s in sources() for n in model_names(s)
          if n not in ("bert_base", "bert_base_per_head")]


def _bits(outs):
    return [np.asarray(o).tobytes() for o in outs]


def _both(fn):
    """(unfused, fused with 3-element blocks and runs from 2 instructions) results of ``fn``."""
    saved = (blocks.BLOCK, blocks.MIN_ELEMENTS, hlo_fused.MIN_RUN, ir_fused.MIN_RUN)
    try:
        hlo_fused.MIN_RUN = ir_fused.MIN_RUN = 10**9
        want = fn()
        blocks.BLOCK, blocks.MIN_ELEMENTS, hlo_fused.MIN_RUN, ir_fused.MIN_RUN = 3, 1, 2, 2
        got = fn()
    finally:
        blocks.BLOCK, blocks.MIN_ELEMENTS, hlo_fused.MIN_RUN, ir_fused.MIN_RUN = saved
    return want, got


@pytest.mark.parametrize("source,name", MODELS)
def test_real_models_block_by_block(source, name):
    data = load_model(name, source)
    if not data.inputs:
        pytest.skip("text-only module")
    m = hlo.parse(data.text)
    try:
        want, got = _both(lambda: emulate.run_hlo(m, data.inputs))
    except EmulationError as exc:
        with pytest.raises(type(exc)):
            emulate.run_hlo(m, data.inputs)
        return
    assert _bits(got) == _bits(want)


def test_the_real_models_form_runs():
    """Not vacuous: with small blocks the real models' schedules have runs."""
    saved = blocks.MIN_ELEMENTS, hlo_fused.MIN_RUN
    blocks.MIN_ELEMENTS, hlo_fused.MIN_RUN = 1, 2
    try:
        total = 0
        for source, name in MODELS:
            m = hlo.parse(load_model(name, source).text)
            for comp in m.computations:
                plan = schedule(comp)
                total += sum(len(r.body) for r in hlo_fused.plan_runs(plan, comp.root).values())
    finally:
        blocks.MIN_ELEMENTS, hlo_fused.MIN_RUN = saved
    assert total > 150


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(modules())
def test_fuzzed_chains_block_by_block(case):
    """The fuzzer's modules (two parameters, a chain of elementwise instructions, all of them
    outputs), on the evaluator and on the pipeline."""
    text, ins = case
    m = hlo.parse(text, "fuzz.hlo")
    for run in (lambda: emulate.run_hlo(m, ins), lambda: emulate.run_hlo(m, ins, NONE)):
        try:
            want, got = _both(run)
        except EmulationError:
            continue  # refused alike (the unfused run raised first)
        assert _bits(got) == _bits(want), text
