"""ir.paused_gc (decision P24): the collector is off inside, and its state before is its state
after, also when the block raises or the collector was already off; the lowering, the passes and
the clone leave it as they found it."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from pyprecision import hlo, ir, lower
from pyprecision.frontend import parse_flags
from pyprecision.passes import run_pipeline

HLO = """HloModule m
ENTRY e {
  a = f32[4,4] parameter(0)
  b = f32[4,4] parameter(1)
  d = f32[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[4,4] tanh(d)
}
"""


@pytest.fixture(params=[True, False], ids=["enabled", "disabled"])
def gc_state(request):
    was = gc.isenabled()
    (gc.enable if request.param else gc.disable)()
    yield request.param
    (gc.enable if was else gc.disable)()


def test_paused_inside_restored_after(gc_state: bool) -> None:
    with ir.paused_gc():
        assert not gc.isenabled()
        with ir.paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled() is gc_state


def test_restored_when_the_block_raises(gc_state: bool) -> None:
    with pytest.raises(ZeroDivisionError), ir.paused_gc():
        1 / 0  # noqa: B018
    assert gc.isenabled() is gc_state


def test_compile_steps_leave_the_collector_as_found(gc_state: bool) -> None:
    cfg = parse_flags(["--auto-cast", "all"])
    lowered = lower.lower(hlo.parse(HLO), config=cfg)
    assert gc.isenabled() is gc_state
    m = ir.clone_module(lowered.module)
    assert gc.isenabled() is gc_state
    run_pipeline(m, cfg, "gen2")
    assert gc.isenabled() is gc_state
    assert ir.to_text(m) != ir.to_text(lowered.module)  # the passes did narrow something


# ---- ir.frozen_gc / ir.freeze_made (decision P30) ----


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


@pytest.fixture
def clean_freeze():
    """No frozen objects before or after (a test that fails midway unfreezes what it left)."""
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()


def test_freeze_made_freezes_only_inside_and_the_outermost_exit_unfreezes(clean_freeze) -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        ir.freeze_made()
        assert gc.get_freeze_count() == 0  # outside: nothing
        with ir.frozen_gc():
            ir.freeze_made()
            assert gc.get_freeze_count() > 0
            with ir.frozen_gc():  # a runner's run inside tune's search
                ir.freeze_made()
            assert gc.get_freeze_count() > 0  # the inner exit keeps the outer's freeze
        assert gc.get_freeze_count() == 0
    finally:
        (gc.enable if was else gc.disable)()


def test_frozen_garbage_is_collected_after_the_search(clean_freeze) -> None:
    import weakref

    with ir.frozen_gc():
        node = _Node()
        ref = weakref.ref(node)
        del node  # garbage, but frozen with everything else before any collection sees it
        ir.freeze_made()
        gc.collect()
        assert ref() is not None or not gc.isenabled()
    gc.collect()
    assert ref() is None


def test_a_freeze_of_the_callers_is_never_undone(clean_freeze) -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()  # frozen objects freed by reference counting lower it
    with ir.frozen_gc():
        node = _Node()
        ir.freeze_made()
        assert any(o is node for o in gc.get_objects())  # not frozen: still walked
        assert 0 < gc.get_freeze_count() <= frozen
    assert 0 < gc.get_freeze_count() <= frozen  # the caller's freeze stands


def test_nothing_frozen_with_the_collector_off_or_on_an_exception(clean_freeze) -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with ir.frozen_gc():
            ir.freeze_made()
            assert gc.get_freeze_count() == 0
    finally:
        (gc.enable if was else gc.disable)()
    gc.enable()
    try:
        with pytest.raises(RuntimeError), ir.frozen_gc():
            ir.freeze_made()
            raise RuntimeError
        assert gc.get_freeze_count() == 0
    finally:
        (gc.enable if was else gc.disable)()


def test_a_runners_run_and_tune_leave_nothing_frozen(clean_freeze) -> None:
    from pyprecision.emulate import FlagSetRunner
    from pyprecision.kernel import thread_limit
    from pyprecision.tune import tune

    was = gc.isenabled()
    gc.enable()
    try:
        m = hlo.parse(HLO)
        args = [np.ones((4, 4), np.float32), np.full((4, 4), 0.5, np.float32)]
        runner = FlagSetRunner(m, args)
        calls = []
        real = gc.freeze

        def spy() -> None:
            calls.append(1)
            real()

        gc.freeze = spy  # type: ignore[assignment]
        try:
            configs = [parse_flags([]), parse_flags(["--auto-cast", "all"])]
            with thread_limit(1):  # both programs made here (two threads: one in a child, V30)
                shared = runner.run(configs)
            assert len(calls) >= 2  # each program's kept blocks frozen as they end (P30, P34)
            assert gc.get_freeze_count() == 0
            with thread_limit(2):  # the forked halves (V30, TU14) leave nothing frozen either
                assert FlagSetRunner(m, args).run(configs).runs[1].outputs is not None
            assert gc.get_freeze_count() == 0
            result = tune(m, args, budget=1e-2)
        finally:
            gc.freeze = real  # type: ignore[assignment]
        assert len(calls) > 2 and gc.get_freeze_count() == 0
        assert shared.runs[0].outputs is not None and result.recommended is not None
    finally:
        (gc.enable if was else gc.disable)()


def test_a_kept_block_is_frozen_before_the_collector_is_back_inside_a_search_only(clean_freeze) -> None:
    """``paused_gc(keep=True)`` (decision P34): inside a search what the block made is frozen
    as the block ends, before the collector is back on, so no collection walks it; outside a
    search, and without ``keep``, nothing is frozen and the collector walks it as before."""
    was = gc.isenabled()
    gc.enable()
    try:
        for search, keep in ((True, True), (True, False), (False, True)):
            gc.collect()
            with ir.frozen_gc() if search else _nothing():
                with ir.paused_gc(keep=keep):
                    made = [_Node() for _ in range(3 * gc.get_threshold()[0])]
                    assert not gc.isenabled()
                walked = {id(o) for o in gc.get_objects()}
                assert (id(made[0]) in walked) == (not (search and keep))
                assert (gc.get_freeze_count() > 0) == (search and keep)
                del made, walked
            assert gc.get_freeze_count() == 0
    finally:
        (gc.enable if was else gc.disable)()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
