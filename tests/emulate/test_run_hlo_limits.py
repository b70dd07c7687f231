"""Bounded HLO evaluation: while iteration cap and wall-time budget, call depth, memory budget
(issue 12 item 3; issue 13's broadcast to f32[100000,100000,100000])."""
from __future__ import annotations

import time

import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.emulate import Limits, run_hlo
from pyprecision.emulate.hlo.eval import Evaluator
from pyprecision.errors import EmulationError
from pyprecision.tools.cli import main

FOREVER = """HloModule m

cond {
  s = s32[] parameter(0)
  z = s32[] constant(-1)
  ROOT c = pred[] compare(s, z), direction=NE
}

body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT t = s32[] add(s, one)
}

ENTRY e {
  p = s32[] parameter(0)
  ROOT w = s32[] while(p), condition=cond, body=body
}
"""

HUGE_BROADCAST = """HloModule m

ENTRY e {
  p = f32[] parameter(0)
  ROOT b = f32[100000,100000,100000] broadcast(p), dimensions={}
}
"""


def test_runaway_while_stops_at_the_iteration_cap_naming_count_and_condition() -> None:
    m = hlo.parse(FOREVER)
    with pytest.raises(EmulationError, match=r"w: while loop did not finish within 50 "
                       r"iterations; its condition cond last gave True"):
        run_hlo(m, [np.int32(0)], limits=Limits(max_while_iterations=50))


def test_runaway_while_stops_by_the_time_budget_within_seconds() -> None:
    m = hlo.parse(FOREVER)
    t0 = time.monotonic()
    with pytest.raises(EmulationError, match=r"stopped after \d+ iteration\(s\) by the time "
                       r"budget of 0.2 s; its condition cond last gave True"):
        run_hlo(m, [np.int32(0)], limits=Limits(max_while_iterations=10**9, time_budget=0.2))
    assert time.monotonic() - t0 < 10  # generous: the machine is shared


def test_default_limits_stop_a_runaway_loop_but_set_no_time_budget() -> None:
    # running the defaults takes ~8 s here (100 000 iterations), so only their values are
    # checked; the two tests above run the same code with smaller values. No wall-time budget by
    # default (hlo-eval.md HE17): a real model may take minutes; the iteration cap stops a runaway loop.
    d = Limits()
    assert d.max_while_iterations == 100_000 and d.time_budget is None and d.memory_budget is None
    assert Evaluator(hlo.parse(FOREVER), d).budget.deadline is None


def test_a_while_that_finishes_at_the_cap_is_not_an_error() -> None:
    m = hlo.parse(FOREVER.replace("constant(-1)", "constant(7)"))
    (out,) = run_hlo(m, [np.int32(0)], limits=Limits(max_while_iterations=7))
    assert out == 7


def test_broadcast_to_f32_100000_cubed_is_refused_before_allocation() -> None:
    m = hlo.parse(HUGE_BROADCAST)
    with pytest.raises(EmulationError, match=r"b: the result f32\[100000,100000,100000\] needs "
                       r"4,000,000,000,000,000 bytes, more than the memory budget"):
        run_hlo(m, [np.float32(1)])


def test_memory_budget_is_an_option() -> None:
    m = hlo.parse(HUGE_BROADCAST.replace("100000,100000,100000", "8,8"))
    assert run_hlo(m, [np.float32(1)], limits=Limits(memory_budget=256))[0].shape == (8, 8)
    with pytest.raises(EmulationError, match="memory budget of 255 bytes"):
        run_hlo(m, [np.float32(1)], limits=Limits(memory_budget=255))


# a chain of elementwise ops on 8x8 f32 values (256 bytes each): at most two are live at once
CHAIN = """HloModule m

ENTRY e {
  p = f32[8,8] parameter(0)
  a = f32[8,8] add(p, p)
  b = f32[8,8] multiply(a, a)
  c = f32[8,8] subtract(b, a)
  ROOT d = f32[8,8] negate(c)
}
"""


def test_the_memory_budget_is_checked_against_the_live_peak_before_running(monkeypatch) -> None:
    """Values are freed after their last reader, so the chain holds b, a (read by c) and c at
    once: 768 bytes. Within that budget it runs; below it the error names the instruction where
    the peak is reached and the bytes, and no handler has run."""
    m = hlo.parse(CHAIN)
    x = np.ones((8, 8), np.float32)
    (out,) = run_hlo(m, [x], limits=Limits(memory_budget=768))
    assert np.array_equal(out, -(4 * x * x - 2 * x))
    ran: list[str] = []
    real = Evaluator.evaluate
    monkeypatch.setattr(Evaluator, "evaluate",
                        lambda self, inst, ops: ran.append(inst.name) or real(self, inst, ops))
    with pytest.raises(EmulationError, match=r"^c: the evaluation would hold 768 bytes of live "
                       r"values here, more than the memory budget of 767 bytes .*refused before "
                       r"running$"):
        run_hlo(m, [x], limits=Limits(memory_budget=767))
    assert ran == []


def test_huge_broadcast_is_refused_before_any_instruction_runs(monkeypatch) -> None:
    m = hlo.parse(HUGE_BROADCAST)
    monkeypatch.setattr(Evaluator, "evaluate", lambda *a: pytest.fail("an instruction ran"))
    with pytest.raises(EmulationError, match=r"^b: the result f32\[100000,100000,100000\] needs"):
        run_hlo(m, [np.float32(1)])


def test_values_are_dropped_after_their_last_reader() -> None:
    """When d runs, a and b (last read by c) are gone; c is alive until d has read it
    (hlo-eval.md HE18)."""
    import weakref

    m = hlo.parse(CHAIN)
    ev = Evaluator(m)
    real = ev.evaluate
    refs: dict[str, weakref.ref] = {}
    alive_at_d: dict[str, bool] = {}

    def spy(inst, ops):
        if inst.name == "d":
            alive_at_d.update({k: r() is not None for k, r in refs.items()})
        out = real(inst, ops)
        refs[inst.name] = weakref.ref(out)
        return out

    ev.evaluate = spy  # type: ignore[method-assign]
    ev.call(m.entry, [np.ones((8, 8), np.float32)])
    assert alive_at_d == {"a": False, "b": False, "c": True}


def test_call_depth_is_bounded_for_modules_built_without_the_verifier() -> None:
    text = ("HloModule m\n\nf {\n  x = f32[] parameter(0)\n  ROOT c = f32[] call(x), to_apply=f\n}"
            "\n\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\n")
    m = hlo.parse(text, verify=False)
    with pytest.raises(EmulationError, match="nested deeper than 64 calls"):
        run_hlo(m, [np.float32(1)])
    ev = Evaluator(m)
    assert ev.budget.depth == 0  # unwound


@pytest.mark.parametrize("kw", [{"max_while_iterations": -1}, {"time_budget": 0.0},
                                {"max_call_depth": 0}, {"memory_budget": -5}])
def test_bad_limits_are_emulation_errors(kw) -> None:
    with pytest.raises(EmulationError):
        Limits(**kw)


def test_hlo_run_options_reach_the_evaluator(tmp_path, capsys) -> None:
    mod = tmp_path / "w.hlo"
    mod.write_text(FOREVER)
    inp = tmp_path / "in.npz"
    np.savez(inp, arg0=np.int32(0))
    rc = main(["hlo-run", str(mod), "--inputs", str(inp), "-o", str(tmp_path / "o.npz"),
               "--max-while-iterations", "10"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "within 10 iterations" in err
    big = tmp_path / "b.hlo"
    big.write_text(HUGE_BROADCAST)
    np.savez(inp, arg0=np.float32(0))
    rc = main(["hlo-run", str(big), "--inputs", str(inp), "-o", str(tmp_path / "o.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "refused before allocating" in err


def test_operand_cycle_in_an_unverified_module_is_an_error_not_a_hang() -> None:
    from pyprecision.errors import VerifyError

    text = ("HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  a = f32[4] add(p, b)\n"
            "  b = f32[4] add(a, p)\n  ROOT r = f32[4] negate(b)\n}\n")
    m = hlo.parse(text, verify=False)
    with pytest.raises(VerifyError, match="operand cycle"):
        run_hlo(m, [np.zeros(4, np.float32)])


def test_hlo_run_time_budget_still_stops_a_loop(tmp_path, capsys) -> None:
    """No time budget by default, but ``--time-budget`` still sets one (hlo-eval.md HE17)."""
    mod = tmp_path / "w.hlo"
    mod.write_text(FOREVER)
    inp = tmp_path / "in.npz"
    np.savez(inp, arg0=np.int32(0))
    rc = main(["hlo-run", str(mod), "--inputs", str(inp), "-o", str(tmp_path / "o.npz"),
               "--max-while-iterations", "1000000000", "--time-budget", "0.2"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "by the time budget of 0.2 s" in err
