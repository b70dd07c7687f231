"""Precision flags as a Neuron user has them: $NEURON_CC_FLAGS and a neuronx-cc command line from a
log (pyprecision.frontend.command_line; decision F7 for the target mapping)."""
from __future__ import annotations

import pytest

from pyprecision.errors import FlagError
from pyprecision.frontend import (
    NEURON_TARGETS,
    neuron_target_generation,
    parse_flags,
    parse_neuron_command,
)

LOG_LINE = ("neuronx-cc --target=trn1 compile --framework XLA "
            "/tmp/neuroncc_compile_workdir/1234/model/model.MODULE_77+8f1b.hlo.pb --output "
            "/tmp/neuroncc_compile_workdir/1234/model/graph.neff --verbose=35 --auto-cast matmult "
            "--auto-cast-type=bf16 --enable-saturate-infinity -O2 --model-type=transformer")


def test_log_line_keeps_precision_flags_and_target_skips_the_rest() -> None:
    cmd = parse_neuron_command(LOG_LINE)
    assert cmd.precision_argv == ("--auto-cast", "matmult", "--auto-cast-type=bf16",
                                  "--enable-saturate-infinity")
    assert (cmd.target, cmd.neuron_target) == ("gen2", "trn1")
    assert cmd.skipped == ("neuronx-cc", "compile", "--framework", "XLA",
                           "/tmp/neuroncc_compile_workdir/1234/model/model.MODULE_77+8f1b.hlo.pb",
                           "--output", "/tmp/neuroncc_compile_workdir/1234/model/graph.neff",
                           "--verbose=35", "-O2", "--model-type=transformer")
    cfg = parse_flags(list(cmd.precision_argv))
    assert cfg.fp32_cast_mode == "matmult-bf16" and cfg.enable_saturate_infinity


def test_fast_math_takes_only_its_own_tokens_not_the_input_path() -> None:
    cmd = parse_neuron_command("--fast-math no-fast-relayout model.hlo.pb --target trn2")
    assert cmd.precision_argv == ("--fast-math", "no-fast-relayout")
    assert cmd.skipped == ("model.hlo.pb",) and cmd.target == "gen3"


@pytest.mark.parametrize(("target", "gen"), [("trn1", "gen2"), ("trn1n", "gen2"), ("inf2", "gen2"),
                                             ("trn2", "gen3"), ("TRN2", "gen3"), ("trn3", "gen4")])
def test_target_mapping_decision_f7(target: str, gen: str) -> None:
    assert neuron_target_generation(target) == gen


def test_every_mapped_generation_is_a_target_descriptor() -> None:
    from pyprecision.passes.target import GENERATIONS

    assert set(NEURON_TARGETS.values()) <= set(GENERATIONS)


@pytest.mark.parametrize(("text", "match"), [
    ("--target=inf1", "neuron-cc's"),
    ("--target=tpu", "unknown neuronx-cc target"),
    ("--target=trn1 --target=trn2", "conflicting --target"),
    ("--auto-cast bogus", "invalid choice"),
    ("--auto-cast", "needs a value"),
    ("--fast-math model.pb", "needs at least one"),
    ("--auto-cast 'matmult", "cannot split"),
])
def test_bad_flags_are_one_flag_error(text: str, match: str) -> None:
    with pytest.raises(FlagError, match=match):
        parse_neuron_command(text)


def test_empty_flags_are_the_defaults() -> None:
    cmd = parse_neuron_command("")
    assert cmd.precision_argv == () and cmd.target is None and cmd.skipped == ()
