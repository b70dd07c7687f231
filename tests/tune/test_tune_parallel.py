"""tune's work split between the process and a forked child (decisions TU14, TU15): the same
result, to the bit, as everything in one process, on real models; a child that fails, crashes or
is left early costs time, never a result; the child's half is really not compiled here; the next
program emulated in a child is kept exactly when the search names it."""
from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/models_data.py
from models_data import load_model  # noqa: E402

from pyprecision import hlo  # noqa: E402
from pyprecision.emulate import FlagSetRunner, can_fork, forked  # noqa: E402
from pyprecision.emulate.pipeline import forked as forked_module  # noqa: E402
from pyprecision.kernel import thread_limit  # noqa: E402
from pyprecision.tune import search, tune  # noqa: E402
from pyprecision.tune.selection import Score  # noqa: E402

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


@pytest.mark.parametrize("slow", ["child", "parent"])
def test_the_faster_process_takes_more_units(monkeypatch, slow):
    """TU18: the units go to whichever process asks first, this one from the front (saturate-
    infinity last), the child from the back: a child that starts late leaves this process every
    unit, the saturating ones too; a slow parent leaves the child most. The result is the same."""
    module, args = _model("mlp_param", "jax-0.10.2")
    parent = os.getpid()
    made: list[object] = []
    real_program, real_take = FlagSetRunner._program, search._Claims.take
    late = [slow == "child"]

    def program(self, config):
        if os.getpid() == parent:
            made.append(config)
            if slow == "parent":
                time.sleep(0.2)
        return real_program(self, config)

    def take(self, k, who):
        if who == search._Claims.CHILD and late[0]:  # the child starts late
            late[0] = False
            time.sleep(2.0)
        return real_take(self, k, who)

    monkeypatch.setattr(FlagSetRunner, "_program", program)
    monkeypatch.setattr(search._Claims, "take", take)
    want = _tune(module, args, 1, budget=1e-2).to_json()
    alone, made[:] = len(made), []
    got = _tune(module, args, 2, budget=1e-2)
    assert got.to_json() == want
    sat = [c for c in made if c.enable_saturate_infinity]
    if slow == "child":  # every unit compiled here, the last ones (saturating) included
        assert sat and len(made) == alone, (len(made), alone)
    else:  # the child took the rest: only the first units and what was emulated came back
        assert len(made) < alone // 2, (len(made), alone)


@pytest.mark.parametrize("how", ["raises", "crashes", "garbles", "hangs"])
def test_a_failing_child_costs_time_not_the_result(monkeypatch, how):
    module, args = _model("torch_mlp", "torch_xla-2.9.0")
    want = _tune(module, args, 1, budget=1e-2).to_json()

    def broken(*a, **k):
        if how == "raises":
            raise MemoryError("child out of memory")
        if how == "crashes":
            os._exit(7)
        if how == "hangs":  # a deadlock in the child (V31): killed after the grace, done here
            time.sleep(600)
        return [(b"short", None)]  # not a row per set: taken for a failure

    monkeypatch.setattr(search, "_digests_and_costs", broken)  # the child's, per unit (TU18)
    monkeypatch.setattr(forked_module, "GRACE", 0.5)
    monkeypatch.setattr(forked_module, "PATIENCE", 1.0)
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


def test_a_hung_child_is_killed_after_the_grace_and_reaped():
    t0 = time.monotonic()
    with forked(lambda: time.sleep(600)) as child:
        pid = child.pid
        assert child.result(patience=1.0, grace=0.5) is None
    assert time.monotonic() - t0 < 30  # not the child's 600 s
    with pytest.raises(ChildProcessError):  # killed and reaped
        os.waitpid(pid, os.WNOHANG)


def test_the_wait_scales_with_the_parents_own_share():
    """A child a little slower than the parent is waited for: the deadline is PATIENCE times the
    parent's share; a deadline shorter than the child's remaining work gives None."""
    with forked(lambda: (time.sleep(1.0), "done")[1]) as child:
        time.sleep(0.5)  # the parent's share
        assert child.result(patience=6.0, grace=0.05) == "done"  # waits up to 3 s for ~0.5 s
    with forked(lambda: (time.sleep(1.5), "done")[1]) as child:
        time.sleep(0.1)
        assert child.result(patience=0.5, grace=0.05) is None  # waits 0.05 s for ~1.4 s


_warn_at_fork = []


def _warning_hook() -> None:  # a library's before-fork hook that warns, as JAX's does
    if _warn_at_fork:
        warnings.warn("os.fork() was called. os.fork() is incompatible with multithreaded code, "
                      "and JAX is multithreaded, so this will likely lead to a deadlock.",
                      RuntimeWarning, stacklevel=2)  # fmt: skip


os.register_at_fork(before=_warning_hook)


def test_the_fork_warnings_of_threaded_libraries_are_not_shown(monkeypatch):
    """forked() handles a hung child (V31), so a library's warning that a fork may deadlock is
    not shown to the user; the same hook warns at a plain os.fork (the control)."""
    monkeypatch.setattr(sys.modules[__name__], "_warn_at_fork", [True])
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    assert any("fork" in str(w.message) for w in plain)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        with forked(lambda: 7) as child:
            assert child.result() == 7
    assert not [w for w in ours if "fork" in str(w.message)]


def test_forked_disabled_forks_nothing():
    with forked(lambda: os.getpid(), enabled=False) as child:
        assert child.result() is None


def test_leaving_the_block_early_kills_and_reaps_the_child():
    with pytest.raises(KeyError), forked(lambda: time.sleep(600)) as child:
        pid = child.pid
        raise KeyError("the parent failed")
    with pytest.raises(ChildProcessError):  # reaped: no zombie left behind
        os.waitpid(pid, os.WNOHANG)


# --- TU15: the next program emulated meanwhile in a child, kept only when the search names it
_rows = st.lists(st.tuples(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0]),  # ties on purpose
                           st.integers(1, 4), st.sampled_from([0.0, 0.005, 0.02, 0.5, float("inf")])),
                 min_size=1, max_size=7)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(rows=_rows, budget=st.sampled_from([0.0, 0.01, 0.1, 1.0]), exhaustive=st.booleans())
def test_emulating_in_pairs_fills_in_the_errors_one_at_a_time_does(rows, budget, exhaustive):
    errs = [0.0] + [e for _, _, e in rows]
    start = [Score(2.5, 2, 0.0)] + [Score(c, n) for c, n, _ in rows]  # --auto-cast none first
    asked: dict[int, list[int]] = {1: [], 2: []}

    def runs(workers):
        def error(k):
            asked[workers].append(k)  # this process's list: the child's k lands in its copy
            return errs[k]
        scores = list(start)
        search._emulate(scores, budget, exhaustive, error, workers)
        return scores

    one, two = runs(1), runs(2)
    assert two == one
    assert set(asked[2]) <= set(asked[1])  # the parent emulates nothing the search did not name


def test_a_speculated_error_is_dropped_when_the_search_stops_before_it():
    # program 1 meets the budget; program 2 costs more: the search stops, its error stays unknown
    scores = [Score(9.0, 2, 0.0), Score(1.0, 3), Score(2.0, 3)]
    errs = {1: 0.001, 2: 0.0}
    search._emulate(scores, 0.01, False, errs.__getitem__, 2)
    assert scores[1].error == 0.001 and scores[2].error is None


def test_a_failing_speculation_is_emulated_here_when_it_is_named():
    parent = os.getpid()
    seen: list[int] = []

    def error(k):
        if os.getpid() != parent:
            raise MemoryError("child")
        seen.append(k)
        return 0.5

    scores = [Score(9.0, 2, 0.0), Score(1.0, 3), Score(2.0, 3)]
    search._emulate(scores, 0.01, False, error, 2)
    assert [s.error for s in scores] == [0.0, 0.5, 0.5] and sorted(seen) == [1, 2]


def test_the_wait_works_with_descriptors_above_1023():
    """A process with many files open (a user's) gets pipe descriptors past select()'s limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"the hard limit on open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    held = []
    try:
        while not held or held[-1] < 1030:
            held.append(os.open(os.devnull, os.O_RDONLY))
        with forked(lambda: "done") as child:
            assert child.fd > 1023
            assert child.result() == "done"
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_units_put_what_tune_emulates_first():
    """TU18: every set in one unit with its accumulation twin; ``--auto-cast none``'s unit first,
    then scope ``all`` (the cheapest programs, emulated first), then ``matmult``, each without
    saturate-infinity before with it: the child, taking units from the back, takes what tune is
    least likely to emulate (and so to compile again here)."""
    import dataclasses

    from pyprecision.frontend import MODE_TABLE

    module, args = _model("mlp_param", "jax-0.10.2")
    runner = FlagSetRunner(module, args)
    sets, _ = search._space(runner)
    units = search._units(sets, runner.program_key)
    assert sorted(id(fs) for u in units for fs in u) == sorted(map(id, sets))
    assert units[0][0] is sets[0]
    for u in units:
        keys = {runner.program_key(dataclasses.replace(
            fs.config, enable_mixed_precision_accumulation=True)) for fs in u}
        assert len(keys) == 1
    order = [({"all": 0, "matmult": 1}.get(MODE_TABLE[u[0].config.fp32_cast_mode].scope, 2),
              u[0].config.enable_saturate_infinity) for u in units[1:]]
    assert order == sorted(order) and order[0] == (0, False) and (1, True) in order
