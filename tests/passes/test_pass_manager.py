"""The one pass manager (pyprecision/pass_manager.py) behaves the same for the loop IR and HLO:
verify before and after every pass, the printed unit attached to every failure."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from pyprecision import hlo
from pyprecision.errors import PassError, VerifyError
from pyprecision.pass_manager import run_pass_sequence

HLO = """HloModule m

ENTRY main {
  p0 = f32[2]{0} parameter(0)
  ROOT n = f32[2]{0} negate(p0)
}
"""


@dataclass(frozen=True)
class _DuplicateName:
    """Breaks an HLO module: a second instruction named like the first."""

    name: ClassVar[str] = "duplicate-name"

    def run(self, module: Any) -> bool:
        comp = module.entry
        first = comp.instructions[0]
        comp.instructions.insert(1, hlo.HloInstruction(first.name, first.opcode, first.shape, [], []))
        return True


@dataclass(frozen=True)
class _Crasher:
    name: ClassVar[str] = "crasher"

    def run(self, unit: Any) -> bool:
        raise KeyError("boom")


@dataclass(frozen=True)
class _Nothing:
    name: ClassVar[str] = "nothing"

    def run(self, unit: Any) -> bool:
        return False


def _hlo_run(passes: list[Any]) -> dict[str, bool]:
    return run_pass_sequence(hlo.parse(HLO), passes, verify=hlo.verify, to_text=hlo.to_text,
                             label="HLO module")


def test_hlo_pass_that_breaks_the_module_is_named_with_the_module_attached() -> None:
    with pytest.raises(VerifyError, match="after pass duplicate-name: main: duplicate") as exc:
        _hlo_run([_DuplicateName()])
    notes = "\n".join(exc.value.__notes__)
    assert "HLO module after duplicate-name:" in notes and "negate(p0)" in notes


def test_hlo_crash_inside_a_pass_becomes_pass_error_with_the_module() -> None:
    with pytest.raises(PassError, match="pass crasher failed: KeyError") as exc:
        _hlo_run([_Crasher()])
    assert "HLO module when it stopped:" in exc.value.__notes__[0]


def test_broken_unit_is_refused_before_the_first_pass() -> None:
    module = hlo.parse(HLO)
    _DuplicateName().run(module)
    with pytest.raises(VerifyError) as exc:
        run_pass_sequence(module, [_Nothing()], verify=hlo.verify, to_text=hlo.to_text,
                          label="HLO module")
    assert exc.value.__notes__[0].startswith("HLO module before the pipeline:")


def test_repeated_pass_names_are_numbered() -> None:
    assert _hlo_run([_Nothing(), _Nothing()]) == {"nothing": False, "nothing#1": False}


def test_hlo_run_passes_goes_through_the_shared_manager() -> None:
    """An unknown name is refused before anything runs; a real pass reports its change."""
    with pytest.raises(PassError, match="unknown HLO pass"):
        hlo.run_passes(hlo.parse(HLO), ["no-such-pass"])
    assert hlo.run_passes(hlo.parse(HLO.replace("f32", "bf16")), ["upcast-all-to-fp32"]) is True
    assert list(hlo.PASSES) == ["batch-norm-training-upcast", "upcast-all-to-fp32",
                                "neuron-int-matmul-downcast"]


class _CountingVerify:
    """hlo.verify, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, unit: Any) -> None:
        self.calls += 1
        hlo.verify(unit)


def test_default_verifies_once_after_the_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PYPRECISION_VERIFY_EACH_PASS the unit is verified once, after the last pass; no
    passes, no verification (decision P20)."""
    monkeypatch.delenv("PYPRECISION_VERIFY_EACH_PASS", raising=False)
    v = _CountingVerify()
    run_pass_sequence(hlo.parse(HLO), [_Nothing(), _Nothing(), _Nothing()], verify=v,
                      to_text=hlo.to_text)  # fmt: skip
    assert v.calls == 1
    run_pass_sequence(hlo.parse(HLO), [], verify=v, to_text=hlo.to_text)
    assert v.calls == 1
    each = _CountingVerify()
    run_pass_sequence(hlo.parse(HLO), [_Nothing(), _Nothing(), _Nothing()], verify=each,
                      to_text=hlo.to_text, each=True)  # fmt: skip
    assert each.calls == 4


def test_a_break_found_after_the_sequence_names_the_passes_and_prints_the_unit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYPRECISION_VERIFY_EACH_PASS", raising=False)
    with pytest.raises(VerifyError, match="after passes nothing, duplicate-name: main: duplicate"
                       ) as exc:
        _hlo_run([_Nothing(), _DuplicateName()])
    notes = "\n".join(exc.value.__notes__)
    assert "HLO module after nothing, duplicate-name (PYPRECISION_VERIFY_EACH_PASS=1" in notes
    assert "negate(p0)" in notes


def test_the_environment_variable_selects_per_pass_verification(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPRECISION_VERIFY_EACH_PASS", "1")
    with pytest.raises(VerifyError, match="after pass duplicate-name:"):
        _hlo_run([_DuplicateName(), _Nothing()])
    monkeypatch.setenv("PYPRECISION_VERIFY_EACH_PASS", "0")
    with pytest.raises(VerifyError, match="after passes duplicate-name, nothing:"):
        _hlo_run([_DuplicateName(), _Nothing()])
    monkeypatch.setenv("PYPRECISION_VERIFY_EACH_PASS", "maybe")
    with pytest.raises(ValueError, match="PYPRECISION_VERIFY_EACH_PASS='maybe': expected 1 or 0"):
        _hlo_run([_Nothing()])
