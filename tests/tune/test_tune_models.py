"""tune on the real models of tests/data/models (JAX and PyTorch/XLA): the recommendation, re-run
through a fresh ``run_hlo`` pipeline, meets the budget; a loose budget narrows, a zero budget is
exact; the frontier is non-dominated and complete; work shared between flag sets changes no bit."""
from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/models_data.py
from models_data import load_model  # noqa: E402

from pyprecision import emulate, hlo  # noqa: E402
from pyprecision.emulate import run_compiled  # noqa: E402
from pyprecision.frontend import parse_flags  # noqa: E402
from pyprecision.tune import tune  # noqa: E402

MODELS = [("mlp_param", "jax-0.10.2"), ("torch_mlp", "torch_xla-2.9.0"),
          ("mlp_classifier", "jax-0.10.2")]  # fmt: skip


@cache
def _model(name: str, source: str) -> tuple[object, list[np.ndarray]]:
    m = load_model(name, source)
    return hlo.parse(m.text), m.inputs


@cache
def _tune(name: str, source: str, budget: float, metric: str = "rel-l2", exhaustive: bool = False):
    module, args = _model(name, source)
    return tune(module, args, budget, metric, exhaustive=exhaustive)


def _fresh(module: object, args: list[np.ndarray], argv: tuple[str, ...]) -> list[np.ndarray]:
    return [np.asarray(y) for y in emulate.run_hlo(module, args, parse_flags(list(argv)))]


def _rel_l2(ys: list[np.ndarray], refs: list[np.ndarray]) -> float:
    """The worst output's ‖y − r‖ / ‖r‖, written out here (not the code under test)."""
    worst = 0.0
    for y, r in zip(ys, refs, strict=True):
        y64, r64 = y.astype(np.float64), r.astype(np.float64)
        num = np.sqrt(np.sum((y64 - r64) ** 2))
        den = np.sqrt(np.sum(r64**2))
        worst = max(worst, 0.0 if num == 0 else num / den)
    return worst


@pytest.mark.parametrize("name,source", MODELS[:2])
@pytest.mark.parametrize("budget", [1e-3, 1e-2, 0.2])
def test_recommendation_rerun_through_run_hlo_meets_the_budget(name, source, budget):
    module, args = _model(name, source)
    r = _tune(name, source, budget)
    none = _fresh(module, args, ("--auto-cast", "none"))
    got = _fresh(module, args, r.recommended.flags.argv)
    assert _rel_l2(got, none) <= budget
    assert _rel_l2(got, none) == pytest.approx(r.recommended.error, rel=1e-12, abs=0)


@pytest.mark.parametrize("name,source", MODELS[:2])
def test_shared_compilation_equals_a_fresh_pipeline_bit_for_bit(name, source):
    module, args = _model(name, source)
    r = _tune(name, source, 1e-2)
    for t in r.frontier + [r.recommended]:
        shared = run_compiled(t.compiled, args)
        for fs in [t.flags, *t.aliases[:2]]:
            for a, b in zip(shared, _fresh(module, args, fs.argv), strict=True):
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), fs.cli


@pytest.mark.parametrize("name,source", MODELS[:2])
def test_a_loose_budget_narrows_and_a_zero_budget_is_exact(name, source):
    module, args = _model(name, source)
    loose = _tune(name, source, 1.0)
    assert loose.budget_met and loose.recommended.flags.mode != "none"
    assert loose.recommended.cost.total_s < loose.baseline.cost.total_s
    exact = _tune(name, source, 0.0)
    none = _fresh(module, args, ("--auto-cast", "none"))
    for a, b in zip(_fresh(module, args, exact.recommended.flags.argv), none, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name,source", MODELS[:2])
def test_frontier_is_non_dominated_and_covers_every_trial(name, source):
    r = _tune(name, source, 1e-2)

    def dominates(a, b):
        return (a.cost.total_s <= b.cost.total_s and a.error <= b.error
                and (a.cost.total_s < b.cost.total_s or a.error < b.error))

    for f in r.frontier:
        assert not any(dominates(t, f) for t in r.trials), f.flags.cli
    for t in r.trials:
        assert any(f is t or dominates(f, t) or (f.cost.total_s == t.cost.total_s
                                                   and f.error == t.error) for f in r.frontier)
    assert r.recommended in r.frontier
    assert r.baseline.error == 0.0


def test_an_unmeetable_budget_recommends_none_and_says_so():
    module, args = _model("mlp_param", "jax-0.10.2")
    r = _tune("mlp_param", "jax-0.10.2", 1e-12)
    assert r.recommended is r.baseline and not r.budget_met
    assert r.recommended.flags.argv == ("--auto-cast", "none")
    assert any("recommending --auto-cast none" in n for n in r.notes)


def test_a_model_already_narrow_keeps_none_and_says_why():
    m = load_model("bf16_mlp")  # all bf16 already: only saturate-infinity changes the program
    r = tune(hlo.parse(m.text), m.inputs, 1.0, attribution=0)
    assert r.recommended is r.baseline and not r.budget_met
    assert {t.flags.mode for t in r.trials} == {"none"}
    assert any("narrowing flag sets compile to --auto-cast none's program" in n for n in r.notes)


def test_top1_on_the_classifier_keeps_the_predictions():
    module, args = _model("mlp_classifier", "jax-0.10.2")
    r = _tune("mlp_classifier", "jax-0.10.2", 0.0, "top1")
    none = _fresh(module, args, ("--auto-cast", "none"))
    got = _fresh(module, args, r.recommended.flags.argv)
    assert np.array_equal(np.argmax(got[0], -1), np.argmax(none[0], -1))
    assert r.recommended.cost.total_s <= r.baseline.cost.total_s


def test_attribution_names_ops_that_run_narrow():
    r = _tune("mlp_param", "jax-0.10.2", 1e-2)
    assert r.attribution and all(a.added > 0 and a.error >= a.added for a in r.attribution)
    assert all(a.dtype != "float32" for a in r.attribution)
    assert [a.added for a in r.attribution] == sorted((a.added for a in r.attribution), reverse=True)


def test_validate_reports_the_held_out_error():
    module, args = _model("mlp_param", "jax-0.10.2")
    same = tune(module, args, 1e-2, validate=args, attribution=0)
    assert same.validation_error == same.recommended.error and not same.validation_exceeds
    big = [a * np.float32(3e4) for a in args]  # fp16 overflows: the held-out error is not finite
    r = tune(module, args, 1e-3, validate=big, attribution=0)
    assert r.recommended.flags.config.auto_cast_type == "fp16"
    assert r.validation_exceeds


@pytest.mark.parametrize("name,source", MODELS)
def test_tune_through_the_runner_equals_tune_from_independent_pipelines(name, source):
    """Every flag set of the search compiled and run on its own (``compile_hlo``, ``run_hlo``):
    its error and cost are the trial's bit for bit, and the recommendation and the frontier
    chosen from these independent figures are tune's."""
    from pyprecision.emulate import compile_hlo
    from pyprecision.tune.cost import COST_TABLE, estimate_cost
    from pyprecision.tune.metrics import error_of

    module, args = _model(name, source)
    budget = 1e-2
    r = _tune(name, source, budget, exhaustive=True)
    none = _fresh(module, args, ("--auto-cast", "none"))
    alone = {}
    for t in r.trials:
        for fs in [t.flags, *t.aliases]:
            err = error_of("rel-l2", _fresh(module, args, fs.argv), none)
            cost = estimate_cost(compile_hlo(module, parse_flags(list(fs.argv))).lowered.function,
                                 "gen2", COST_TABLE).total_s
            assert (err, cost) == (t.error, t.cost.total_s), fs.cli
            alone[fs.cli] = (cost, err, len(fs.argv))
    assert len(alone) == r.sets_tried
    best = min(v for v in alone.values() if v[1] <= budget)
    assert (r.recommended.cost.total_s, r.recommended.error, len(r.recommended.flags.argv)) == best
    front: list[tuple[float, float]] = []
    for cost, err, _ in sorted(alone.values()):
        if not front or err < front[-1][1]:
            front.append((cost, err))
    assert [(t.cost.total_s, t.error) for t in r.frontier] == front


@pytest.mark.parametrize("name,source", MODELS)
@pytest.mark.parametrize("budget,metric", [(0.0, "rel-l2"), (1e-3, "rel-l2"), (1e-2, "rel-l2"),
                                           (1.0, "rel-l2"), (0.0, "ulp"), (0.0, "top1")])
def test_the_early_stop_recommends_what_the_exhaustive_search_does(name, source, budget, metric):
    """Decision TU8: programs emulated cheapest first, stopping past the recommendation's cost,
    give the exhaustive search's recommendation, error and cost; every program left out costs more
    than it; the programs emulated are the exhaustive search's own (same errors)."""
    module, args = _model(name, source)
    early = tune(module, args, budget, metric, attribution=0)
    full = tune(module, args, budget, metric, attribution=0, exhaustive=True)
    assert early.recommended.flags == full.recommended.flags
    assert (early.recommended.error, early.recommended.cost) == (full.recommended.error,
                                                                 full.recommended.cost)
    assert not full.not_emulated and early.programs == full.programs == len(full.trials)
    assert all(t.cost.total_s > early.recommended.cost.total_s for t in early.not_emulated)
    errors = {t.flags: t.error for t in full.trials}
    assert all(errors[t.flags] == t.error for t in early.trials)
    doc = early.to_json()
    assert doc["programs_not_emulated"] == len(early.not_emulated) and not doc["exhaustive"]
    assert doc["programs"] == doc["programs_emulated"] + doc["programs_not_emulated"]
