"""The selection of tune (decision TU8), as pure functions over (cost, flag length, error) rows:
emulating cheapest first and stopping where no program left could be the recommendation picks the
recommendation that emulating every program and taking ``min(ok, key=(cost, error, length))`` picks
(the search before TU8), ties at equal cost included."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision.tune import Score, emulation_order, next_to_emulate, recommend

# few distinct values so that equal costs, equal errors and equal lengths are common
COSTS = st.sampled_from([1.0, 2.0, 2.5, 3.0, 5.0])
ERRORS = st.sampled_from([0.0, 1e-4, 1e-3, 1e-2, 0.1, math.inf])
ROWS = st.lists(st.tuples(COSTS, st.integers(2, 6), ERRORS), min_size=0, max_size=12)
BUDGETS = st.sampled_from([0.0, 1e-4, 1e-3, 1e-2, 0.1, 1.0])


def _search(rows: list[tuple[float, int, float]], budget: float,
            exhaustive: bool = False) -> tuple[list[Score], list[int]]:  # fmt: skip
    """search.tune's loop over hidden errors: row 0 is --auto-cast none (error 0, known first)."""
    scores = [Score(c, n, 0.0 if i == 0 else None) for i, (c, n, _) in enumerate(rows)]
    emulated = []
    while (i := next_to_emulate(scores, budget, exhaustive)) is not None:
        assert scores[i].error is None  # never one twice
        emulated.append(i)
        scores[i] = Score(scores[i].cost, scores[i].length, rows[i][2])
    return scores, emulated


def _before_tu8(rows: list[tuple[float, int, float]], budget: float) -> int:
    """The recommendation as the search before TU8 took it: every program emulated, the first of
    the least (cost, error, length) among those within budget, in program order."""
    ok = [i for i, r in enumerate(rows) if r[2] <= budget]
    return min(ok, key=lambda i: (rows[i][0], rows[i][2], rows[i][1]))


@settings(max_examples=400, deadline=None)
@given(st.tuples(COSTS, st.integers(2, 6)), ROWS, BUDGETS)
def test_early_stop_recommends_what_emulating_everything_recommends(none, rest, budget):
    rows = [(none[0], none[1], 0.0), *rest]
    scores, emulated = _search(rows, budget)
    rec = recommend(scores, budget)
    assert rec == _before_tu8(rows, budget) == recommend(_search(rows, budget, True)[0], budget)
    # cheapest first; what was not emulated costs more than the recommendation
    assert [scores[i].cost for i in emulated] == sorted(scores[i].cost for i in emulated)
    skipped = [i for i, s in enumerate(scores) if s.error is None]
    assert all(scores[i].cost > scores[rec].cost for i in skipped)
    # and every program of the recommendation's cost was emulated
    assert all(s.error is not None for s in scores if s.cost == scores[rec].cost)


@settings(max_examples=100, deadline=None)
@given(st.tuples(COSTS, st.integers(2, 6)), ROWS, BUDGETS)
def test_exhaustive_emulates_every_program_cheapest_first(none, rest, budget):
    rows = [(none[0], none[1], 0.0), *rest]
    scores, emulated = _search(rows, budget, exhaustive=True)
    assert sorted(emulated) == list(range(1, len(rows)))
    assert emulated == [i for i in emulation_order(scores) if i != 0]


def test_equal_cost_after_the_first_within_budget_is_still_emulated():
    """The first program within budget at cost 2 has error 1e-3; a later one at cost 2 has 1e-4
    (and longer flags): it is emulated and recommended, as min(ok, key) over all would."""
    rows = [(5.0, 2, 0.0), (2.0, 4, 1e-3), (2.0, 6, 1e-4), (3.0, 4, 0.0), (1.0, 4, 0.5)]
    scores, emulated = _search(rows, 1e-2)
    assert emulated == [4, 1, 2] and recommend(scores, 1e-2) == 2
    assert scores[3].error is None  # cost 3 > 2: cannot win


def test_an_unmeetable_budget_emulates_only_what_costs_no_more_than_none():
    rows = [(3.0, 2, 0.0), (1.0, 4, 0.5), (3.0, 4, 0.4), (4.0, 4, 0.0)]
    scores, emulated = _search(rows, 1e-3)
    assert emulated == [1, 2] and recommend(scores, 1e-3) == 0 and scores[3].error is None


def test_nothing_known_within_budget_is_an_error():
    with pytest.raises(ValueError):
        recommend([Score(1.0, 2)], 0.0)
