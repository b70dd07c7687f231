"""tune's compile split between the process and a forked child (decision TU14): the same result,
to the bit, as compiling everything in the process, on real models; a child that fails, crashes
or is left early costs time, never a result; the child's half is really not compiled here."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/models_data.py
from models_data import load_model  # noqa: E402

from pyprecision import hlo  # noqa: E402
from pyprecision.emulate import FlagSetRunner  # noqa: E402
from pyprecision.kernel import thread_limit  # noqa: E402
from pyprecision.tune import search, tune  # noqa: E402
from pyprecision.emulate import can_fork, forked  # noqa: E402

pytestmark = pytest.mark.skipif(not can_fork(), reason="no os.fork here")

MODELS = [("mlp_param", "jax-0.10.2"), ("torch_mlp", "torch_xla-2.9.0"),
          ("mlp_classifier", "jax-0.10.2")]  # fmt: skip


def _model(name: str, source: str) -> tuple[object, list[np.ndarray]]:
    m = load_model(name, source)
    return hlo.parse(m.text), m.inputs


def _tune(module, args, threads: int, **kw):
    with thread_limit(threads):
        return tune(module, args, **kw)


@pytest.mark.parametrize("name,source", MODELS)
@pytest.mark.parametrize("budget", [0.0, 1e-2, 1.0])
def test_the_forked_compile_gives_the_in_process_result(name, source, budget):
    module, args = _model(name, source)
    one = _tune(module, args, 1, budget=budget, attribution=2)
    two = _tune(module, args, 2, budget=budget, attribution=2)
    assert two.to_json() == one.to_json()
    for a, b in zip(one.trials, two.trials, strict=True):  # the same programs, emulated alike
        assert a.flags == b.flags and a.cost == b.cost and a.error == b.error


def test_the_child_compiles_its_half_and_the_process_does_not(monkeypatch):
    module, args = _model("mlp_param", "jax-0.10.2")
    made: list[object] = []
    real = FlagSetRunner._program

    def counted(self, config):
        made.append(config)  # counted in this process only: the child's list is its own
        return real(self, config)

    monkeypatch.setattr(FlagSetRunner, "_program", counted)
    one = _tune(module, args, 1, budget=1e-2)
    alone = len(made)
    made.clear()
    two = _tune(module, args, 2, budget=1e-2)
    assert two.to_json() == one.to_json()
    assert 0 < len(made) < alone, (len(made), alone)
    sat = [c for c in made if c.enable_saturate_infinity]
    emulated_sat = [t for t in two.trials if t.flags.config.enable_saturate_infinity]
    assert len(sat) <= 2 * len(emulated_sat)  # only what was emulated (and its twin) came back


@pytest.mark.parametrize("how", ["raises", "crashes", "garbles"])
def test_a_failing_child_costs_time_not_the_result(monkeypatch, how):
    module, args = _model("torch_mlp", "torch_xla-2.9.0")
    want = _tune(module, args, 1, budget=1e-2).to_json()

    def broken(*a, **k):
        if how == "raises":
            raise MemoryError("child out of memory")
        if how == "crashes":
            os._exit(7)
        return [(b"short", None)]  # not a row per set: taken for a failure

    monkeypatch.setattr(search, "_digests_and_costs", broken)
    assert _tune(module, args, 2, budget=1e-2).to_json() == want


def test_forked_returns_the_childs_value_whole():
    big = np.arange(3 << 20, dtype=np.uint8)  # 3 MiB: many times a pipe's buffer
    with forked(lambda: (os.getpid(), big)) as child:
        pid, got = child.result()
    assert pid != os.getpid() and np.array_equal(got, big)


@pytest.mark.parametrize("fn", [lambda: 1 / 0, lambda: os._exit(3), lambda: (lambda: None)])
def test_forked_gives_none_when_the_child_fails(fn):
    with forked(fn) as child:  # raises / dies / returns what does not pickle
        assert child.result() is None


def test_forked_disabled_forks_nothing():
    with forked(lambda: os.getpid(), enabled=False) as child:
        assert child.result() is None


def test_leaving_the_block_early_kills_and_reaps_the_child():
    with pytest.raises(KeyError), forked(lambda: time.sleep(600)) as child:
        pid = child.pid
        raise KeyError("the parent failed")
    with pytest.raises(ChildProcessError):  # reaped: no zombie left behind
        os.waitpid(pid, os.WNOHANG)
