"""ir.paused_gc (decision P24): the collector is off inside, and its state before is its state
after, also when the block raises or the collector was already off; the lowering, the passes and
the clone leave it as they found it."""
from __future__ import annotations

import gc

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
