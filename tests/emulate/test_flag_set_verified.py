"""FlagSetRunner verifies a program after its passes when it runs it or hands it out, once per
digest, not when it compiles it (decision P31): a search compiles many programs it never runs. A
program the passes broke still gets verify's error, with the IR, wherever it is used; nothing
that runs is unverified."""
from __future__ import annotations

import pytest

from pyprecision import hlo
from pyprecision.emulate import FlagSetRunner, can_fork
from pyprecision.emulate.pipeline import many
from pyprecision.errors import VerifyError
from pyprecision.frontend import parse_flags
from pyprecision.kernel import thread_limit
from pyprecision.passes import pipeline
from pyprecision.tune import tune
from tests.models_data import load_model

ALL = parse_flags(["--auto-cast", "all"])
MATMULT = parse_flags(["--auto-cast", "matmult"])
NONE = parse_flags(["--auto-cast", "none"])


def _runner(name: str = "mlp_param", source: str = "jax-0.10.2") -> FlagSetRunner:
    data = load_model(name, source)
    return FlagSetRunner(hlo.parse(data.text), data.inputs, share_values=False)


def _count(monkeypatch) -> list[object]:
    """Every IR verification the passes' pipeline makes (after its passes or deferred), by
    module."""
    seen: list[object] = []
    real = pipeline.verify

    def counted(unit):
        seen.append(unit)
        return real(unit)

    monkeypatch.setattr(pipeline, "verify", counted)
    monkeypatch.delenv("PYPRECISION_VERIFY_EACH_PASS", raising=False)
    return seen


def _break_under(monkeypatch, mode: str) -> None:
    """The passes of ``mode`` leave an IR that uses a value before its definition."""
    real = many.run_pipeline

    def broken(module, config, *a, **k):
        stats = real(module, config, *a, **k)
        if config.fp32_cast_mode == mode:
            fn = module.main
            last = list(fn.instructions())[-1]
            last.remove_from_parent()
            fn.entry.push_front(last)
        return stats

    monkeypatch.setattr(many, "run_pipeline", broken)


def test_compiling_verifies_nothing_running_verifies_once_per_digest(monkeypatch) -> None:
    seen = _count(monkeypatch)
    runner = _runner()
    progs = [runner.program(c) for c in (ALL, MATMULT, NONE)]
    assert seen == []  # compiled, not run
    runner.outputs(progs[0])
    runner.outputs(progs[0])  # emulated once: verified once
    assert seen == [progs[0].compiled.lowered.module]
    compiled = runner.compile(MATMULT)
    assert len(seen) == 2 and seen[1] is compiled.lowered.module
    runner.outputs(progs[1])  # the same digest as the one handed out: not verified again
    assert len(seen) == 2


def test_a_program_the_passes_broke_fails_where_it_is_used(monkeypatch) -> None:
    _break_under(monkeypatch, "all")
    runner = _runner()
    prog = runner.program(ALL)  # compiled: the break is not seen yet
    for _ in range(2):  # recorded: the same error each time it is asked for
        with pytest.raises(VerifyError, match="after passes auto-cast-fp32, dtype-mutator, "
                                              "cast-elimination") as exc:  # fmt: skip
            runner.outputs(prog)
        assert "IR after auto-cast-fp32" in "\n".join(exc.value.__notes__)
    with pytest.raises(VerifyError, match="after passes"):
        runner.compile(ALL)
    run, digest = runner.run_one(ALL)
    assert run.outputs is None and "after passes auto-cast-fp32" in (run.error or "")
    ok, _ = runner.run_one(MATMULT)  # the others are not touched
    assert ok.error is None and ok.outputs is not None
    with pytest.raises(VerifyError):
        runner.run_one(ALL, strict=True)


def test_a_broken_program_is_still_found_across_many_configs(monkeypatch) -> None:
    """run() over a list where the broken program's twin (accumulation off, derived without the
    passes, P25) is there too: both report verify's error, the rest run."""
    _break_under(monkeypatch, "all")
    runner = _runner()
    twin = parse_flags(["--auto-cast", "all", "--disable-mixed-precision-accumulation"])
    with thread_limit(1):
        runs = runner.run([MATMULT, ALL, twin, NONE]).runs
    assert [r.error is None for r in runs] == [True, False, False, True]
    assert all("after passes auto-cast-fp32" in r.error for r in runs[1:3])


@pytest.mark.parametrize("name,source", [("mlp_param", "jax-0.10.2"),
                                         ("torch_mlp", "torch_xla-2.9.0")])  # fmt: skip
def test_tune_verifies_only_what_it_emulates(monkeypatch, name: str, source: str) -> None:
    seen = _count(monkeypatch)
    data = load_model(name, source)
    with thread_limit(1):  # one process: every verification is counted here
        res = tune(hlo.parse(data.text), data.inputs, budget=1e-2)
    emulated = {id(t.compiled.lowered.module) for t in res.trials}
    assert 0 < len(seen) <= len(res.trials) < res.programs
    assert {id(m) for m in seen} <= emulated  # only programs it emulated


def test_a_program_made_from_its_twin_is_verified_by_its_twin(monkeypatch) -> None:
    """A program with accumulation off, derived from its twin's (P25), differs from it only in
    ``narrow_acc`` flags, which the verifier does not read: the twin's module is verified, once
    for both."""
    seen = _count(monkeypatch)
    runner = _runner("encoder_block")
    off = parse_flags(["--auto-cast", "all", "--disable-mixed-precision-accumulation"])
    derived = runner.program(off)
    assert derived.twin is not None and derived.digest != derived.twin.digest
    runner.outputs(derived)
    assert seen == [derived.twin.compiled.lowered.module]
    runner.outputs(runner.program(ALL))  # the twin itself: verified already
    assert len(seen) == 1


def test_what_tune_hands_out_is_verified_in_its_own_process(monkeypatch) -> None:
    """At two threads a forked child emulates some programs (TU15); the trials tune returns hold
    programs compiled here, and each was verified here before it was handed out."""
    if not can_fork():
        pytest.skip("no os.fork here")
    here: set[int] = set()
    real = FlagSetRunner.verified

    def verified(self, prog):
        here.add(id(prog.compiled.lowered))  # this process's set: the child adds to its own copy
        return real(self, prog)

    monkeypatch.setattr(FlagSetRunner, "verified", verified)
    data = load_model("encoder_block")
    with thread_limit(2):
        res = tune(hlo.parse(data.text), data.inputs, budget=1e-3)
    assert len(res.trials) > 2
    assert {id(t.compiled.lowered) for t in res.trials} <= here


def test_programs_the_forked_child_emulated_count_as_verified(monkeypatch) -> None:
    """V30's child verifies a program before it emulates it (``outputs``): handing that program
    out here afterwards (``compile``) does not verify it again; the process's own are verified
    once each."""
    if not can_fork():
        pytest.skip("no os.fork here")
    configs = [ALL, MATMULT, parse_flags(["--auto-cast", "matmult", "--auto-cast-type", "fp16"]),
               parse_flags(["--auto-cast", "all", "--auto-cast-type", "fp16"])]  # fmt: skip
    seen = _count(monkeypatch)
    runner = _runner("encoder_block")
    with thread_limit(2):
        runner.run(configs)
    assert 0 < len(seen) < len(configs)  # the child verified the others, in its own process
    before = len(seen)
    for c in configs:
        runner.compile(c)
    assert len(seen) == before
