"""Which programs ``tune`` emulates, in which order, and which it recommends, decided from each
program's (estimated cost, error, flag length) alone: pure functions over :class:`Score` rows
(decide, then apply; ``search.tune`` emulates what :func:`next_to_emulate` names and writes the
error back). Decision TU8.

The recommendation is the cheapest program within the budget, ties going to the smaller error,
then to the shorter flags, then to the earlier program (:func:`recommend`). Costs are known before
anything is emulated, so once one program meets the budget, a program that costs more cannot be
recommended: programs are emulated cheapest first, and the search stops before the first that costs
more than the cheapest one within the budget found so far. Programs of that very cost are all still
emulated (a later one of them may have the smaller error or the shorter flags)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Score", "emulation_order", "next_to_emulate", "recommend", "stop_cost"]


@dataclass(frozen=True)
class Score:
    """One distinct program as the selection sees it: its estimated cost (seconds), the length
    of the flag set shown for it (``len(argv)``) and its error (None: not emulated yet)."""

    cost: float
    length: int
    error: float | None = None


def emulation_order(scores: Sequence[Score]) -> list[int]:
    """The indices of ``scores`` cheapest first (then shorter flags, then earlier)."""
    return sorted(range(len(scores)), key=lambda i: (scores[i].cost, scores[i].length, i))


def stop_cost(scores: Sequence[Score], budget: float) -> float:
    """The cost of the cheapest program already known to be within ``budget`` (infinity when none
    is): no program costing more can be recommended."""
    return min((s.cost for s in scores if s.error is not None and s.error <= budget),
               default=math.inf)  # fmt: skip


def next_to_emulate(scores: Sequence[Score], budget: float, exhaustive: bool = False) -> int | None:
    """The next program to emulate: the cheapest (in :func:`emulation_order`) whose error is not
    known, unless it costs more than :func:`stop_cost` (then None: nothing left could be the
    recommendation); with ``exhaustive`` every program, still cheapest first."""
    bound = math.inf if exhaustive else stop_cost(scores, budget)
    for i in emulation_order(scores):
        s = scores[i]
        if s.error is None:
            return i if s.cost <= bound else None
    return None


def recommend(scores: Sequence[Score], budget: float) -> int:
    """The index of the recommendation among the programs with a known error within ``budget``:
    least (cost, error, length), the earliest of equals. ValueError if there is none (``tune``
    always has ``--auto-cast none``'s program, error 0)."""
    ok = [i for i, s in enumerate(scores) if s.error is not None and s.error <= budget]
    if not ok:
        raise ValueError(f"no program with a known error within budget {budget!r}")
    return min(ok, key=lambda i: (scores[i].cost, scores[i].error, scores[i].length))
