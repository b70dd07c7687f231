"""run_pipeline / run_passes: the pass order per mode, verification between passes, statistics."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from pyprecision import ir
from pyprecision.errors import PassError, VerifyError
from pyprecision.frontend import parse_flags
from pyprecision.passes import (
    PASSES,
    STATISTICS,
    Target,
    make_pass,
    parse_pass_list,
    pipeline_pass_names,
    run_passes,
    run_pipeline,
)

from .helpers import EXAMPLES, canon, parse


@pytest.mark.parametrize(
    ("mode", "names"),
    [
        ("none", []),
        ("all", ["auto-cast-fp32", "dtype-mutator", "cast-elimination"]),
        ("all-fp8e4", ["auto-cast-fp32", "dtype-mutator", "cast-elimination"]),
        ("experimental-all-fp16", ["auto-cast-fp32", "dtype-mutator", "cast-elimination"]),
        ("matmult", ["auto-cast-tc-inputs", "dtype-mutator", "cast-elimination"]),
        ("matmult-fp32r", ["auto-cast-tc-inputs", "dtype-mutator", "cast-elimination"]),
    ],
)
def test_pipeline_pass_names(mode: str, names: list[str]) -> None:
    assert pipeline_pass_names(mode) == names
    assert pipeline_pass_names(parse_flags(["--fp32-cast", mode])) == names


def test_registry_names_are_kebab_case_and_passes_are_frozen() -> None:
    assert list(PASSES) == ["auto-cast-fp32", "auto-cast-inputs", "auto-cast-tc-inputs",
                            "dtype-mutator", "cast-elimination", "fp8e4m3fn-as-fp8e4"]
    p = make_pass("cast-elimination", Target())
    with pytest.raises(AttributeError):
        p.name = "x"  # type: ignore[misc]
    ac = make_pass("auto-cast-fp32", Target())
    with pytest.raises(AttributeError):
        ac.disable_inline_cast = True  # type: ignore[misc]


def test_parse_pass_list_options() -> None:
    ps = parse_pass_list("auto-cast-fp32{disable_inline_cast=true},dtype-mutator{mutate-multi-users}",
                         Target())
    assert ps[0].disable_inline_cast is True and ps[1].mutate_multi_users is True
    with pytest.raises(PassError, match="true or false"):
        parse_pass_list("auto-cast-fp32{disable-inline-cast=maybe}", Target())


def test_run_pipeline_reports_every_statistic() -> None:
    m = ir.parse((EXAMPLES / "mlp.pir").read_text())
    stats = run_pipeline(m, parse_flags(["--auto-cast", "all"]), target="gen3")
    assert set(stats) == set(STATISTICS)
    assert stats["DTypeMutator.casted_weights"] == 48  # the 4x3 fp32 weight, once
    # the weight; the bias splat is folded in place and not counted (spec 002 :61 vs :79)
    assert stats["DTypeMutator.folded_cast_load"] == 1
    assert stats.changed == {"auto-cast-fp32": True, "dtype-mutator": True, "cast-elimination": True}
    assert "# Number of bytes statically casted in weight tensor" in stats.to_text()


def test_run_pipeline_none_leaves_program_identical() -> None:
    text = (EXAMPLES / "mlp.pir").read_text()
    m = ir.parse(text)
    stats = run_pipeline(m, "none")
    assert ir.to_text(m) == ir.to_text(ir.parse(text))
    assert all(v == 0 for v in stats.values()) and stats.changed == {}


def test_run_pipeline_unknown_target_or_mode() -> None:
    m = ir.parse((EXAMPLES / "mlp.pir").read_text())
    with pytest.raises(PassError, match="unknown target"):
        run_pipeline(m, "all", target="gen9")
    with pytest.raises(PassError, match="unknown fp32-cast mode"):
        run_pipeline(m, "all-bf16")


@dataclass(frozen=True)
class _Breaker:
    """A pass that breaks the IR (uses a value before its definition)."""

    name: ClassVar[str] = "breaker"

    def run(self, unit: ir.Module) -> bool:
        insts = list(unit.main.instructions())
        insts[-1].remove_from_parent()
        unit.main.entry.push_front(insts[-1])
        return True


@dataclass(frozen=True)
class _Crasher:
    name: ClassVar[str] = "crasher"

    def run(self, unit: ir.Module) -> bool:
        raise KeyError("boom")


TEXT = """
func @main {
  tensor @x : input float32[2]
  tensor @y : output float32[2]
^bb0:
  %x = affine_load @x : float32[2]
  %n = neg %x : float32[2]
  affine_store %n, @y
}
"""


def test_verify_failure_names_the_pass_and_attaches_printed_ir() -> None:
    m = parse(TEXT)
    with pytest.raises(VerifyError, match="after pass breaker") as exc:
        run_passes(m, [_Breaker()])
    notes = "\n".join(getattr(exc.value, "__notes__", []))
    assert "IR after breaker:" in notes and "affine_store %n, @y" in notes


def test_crash_inside_a_pass_becomes_pass_error_with_ir() -> None:
    m = parse(TEXT)
    with pytest.raises(PassError, match="pass crasher failed: KeyError") as exc:
        run_passes(m, [_Crasher()])
    assert canon(TEXT) in "\n".join(exc.value.__notes__)


@pytest.mark.slow
def test_pipeline_on_the_generated_10k_program() -> None:
    m = ir.parse((EXAMPLES / "big_10k.pir").read_text())
    n = sum(1 for _ in m.main.instructions())
    stats = run_pipeline(m, "matmult", "gen3")
    assert n >= 10_000
    assert stats["DTypeMutator.folded_cast_load"] > 0
    assert ir.to_text(ir.parse(ir.to_text(m))) == ir.to_text(m)
