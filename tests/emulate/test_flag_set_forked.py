"""FlagSetRunner.run with two threads emulates every other distinct program in a forked child
(decision V30): the runs (outputs to the bit, errors, ``same_as``, the emulation count) are those
of one process, on every real model with inputs; a failing child or a program failing in the
child costs time, never a result; one thread forks nothing."""
from __future__ import annotations

import os

import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.emulate import FlagSetRunner, can_fork
from pyprecision.emulate.pipeline import many
from pyprecision.errors import EmulationError
from pyprecision.frontend import parse_flags
from pyprecision.kernel import thread_limit
from pyprecision.verify.hlo_check import diagnosis_flag_sets
from tests.models_data import load_model, model_names

pytestmark = pytest.mark.skipif(not can_fork(), reason="no os.fork here")

CONFIGS = [c for _, c in diagnosis_flag_sets(parse_flags(["--auto-cast", "matmult"]))]


def _runs(name: str, threads: int, configs=CONFIGS):
    data = load_model(name)
    runner = FlagSetRunner(hlo.parse(data.text), data.inputs)
    with thread_limit(threads):
        return runner, runner.run(configs)


def _same(a, b) -> None:
    assert a.emulations == b.emulations and a.lowerings == b.lowerings
    for x, y in zip(a.runs, b.runs, strict=True):
        assert (x.error, x.same_as, x.changed) == (y.error, y.same_as, y.changed), x.config
        assert (x.outputs is None) == (y.outputs is None)
        for p, q in zip(x.outputs or [], y.outputs or [], strict=True):
            p, q = np.asarray(p), np.asarray(q)
            assert p.dtype == q.dtype and p.shape == q.shape and p.tobytes() == q.tobytes()


@pytest.mark.parametrize("name", [n for n in model_names() if load_model(n).inputs])
def test_two_processes_give_the_runs_of_one(name: str) -> None:
    _, one = _runs(name, 1)
    _, two = _runs(name, 2)
    _same(one, two)


def test_the_child_compiles_and_emulates_its_half_and_this_process_the_rest(monkeypatch) -> None:
    here: list[bytes] = []
    compiled: list[object] = []
    real_emulate, real_program = many.FlagSetRunner._emulate, many.FlagSetRunner._program

    def emulate(self, prog):
        here.append(prog.digest)  # this process's lists: the child appends to its own copies
        return real_emulate(self, prog)

    def program(self, config):
        compiled.append(config)
        return real_program(self, config)

    monkeypatch.setattr(many.FlagSetRunner, "_emulate", emulate)
    monkeypatch.setattr(many.FlagSetRunner, "_program", program)
    runner, two = _runs("encoder_block", 2)
    alone = len({runner.program_key(c) for c in CONFIGS})
    assert len(here) == len(set(here)) and 0 < len(here) < two.emulations
    assert 0 < len(compiled) < alone


def test_a_second_call_reuses_what_both_processes_emulated() -> None:
    runner, first = _runs("encoder_block", 2)
    with thread_limit(2):
        again = runner.run(CONFIGS)
    assert again.emulations == 0
    assert all(r.same_as is not None for r in again.runs if r.outputs is not None)
    _same(first, _runs("encoder_block", 1)[1])


@pytest.mark.parametrize("how", ["child dies", "fails in the child"])
def test_a_failing_child_costs_time_not_the_result(monkeypatch, how: str) -> None:
    _, want = _runs("scan_rnn", 1)
    parent = os.getpid()
    real = many.FlagSetRunner._emulate

    def broken(self, prog):
        if os.getpid() != parent:
            if how == "child dies":
                os._exit(9)
            raise EmulationError("out of time in the child")
        return real(self, prog)

    monkeypatch.setattr(many.FlagSetRunner, "_emulate", broken)
    _, got = _runs("scan_rnn", 2)
    _same(want, got)


def test_one_thread_forks_nothing(monkeypatch) -> None:
    def no_fork(*a, **k):
        raise AssertionError("forked with one thread")

    monkeypatch.setattr(many, "forked", no_fork)
    _runs("encoder_block", 1)
