"""The program diagnosis: every flag set tried, ranked by its distance to the dump (relative L2 in
units of the format's precision, NaN-against-number first), the best named in the user's own
spelling with how much closer it is than the next (decision V23)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.verify.distance import distance

__all__ = ["ProgramDiagnosis", "Ranked", "rank_outputs"]


@dataclass
class Ranked:
    """One flag set's place: its worst output's relative L2 distance (``eps``, units of the
    format's precision), NaN-against-number count, mismatching elements; ``error`` when the set
    could not run or its outputs cannot be read as the dump's; ``same_as`` the set whose identical
    program gave its outputs."""

    setting: Any
    eps: float = math.inf
    unbounded: int = 0
    mismatches: int = -1
    median_ulp: float = 0.0
    error: str | None = None
    same_as: Any = None

    def key(self) -> tuple[bool, int, float, float]:
        """Sort key: runnable first, then fewest NaN-against-number, smallest L2, median, count."""
        return (self.error is not None, self.unbounded, self.eps, self.median_ulp)

    def describe_distance(self) -> str:
        """``relative L2 4.2 eps, median 3 ULP`` or the error."""
        if self.error is not None:
            return f"not comparable: {self.error}"
        text = f"relative L2 {self.eps:.3g} eps, median {self.median_ulp:g} ULP"
        if self.unbounded:
            text += f", {self.unbounded} NaN against a number"
        return text

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {"policy": self.setting.to_json(), "description": self.setting.describe(),
                "rel_l2_eps": None if math.isinf(self.eps) else self.eps,
                "median_ulp": self.median_ulp, "unbounded": self.unbounded,
                "mismatches": self.mismatches, "error": self.error,
                "same_program_as": None if self.same_as is None else self.same_as.describe()}


def rank_outputs(setting: Any, outs: dict[str, tuple[np.ndarray, Any]] | None,
                 dumped: dict[str, np.ndarray],
                 compare: Callable[..., list[tuple[str, Any]]], error: str | None = None,
                 same_as: Any = None) -> Ranked:
    """The Ranked row of one setting's outputs against the dump (``compare`` is the program
    check's output comparison)."""
    if outs is None:
        return Ranked(setting, error=error or "no outputs", same_as=same_as)
    try:
        reports = compare(outs, dumped, 0)
    except DumpError as exc:
        return Ranked(setting, error=str(exc), same_as=same_as)
    dists = [distance(r.comparison, r.space) for _, r in reports]
    eps = max((d.key()[1] for d in dists), default=0.0)
    unb = sum(d.unbounded + d.nonfinite for d in dists)
    med = max((d.median_ulp for d in dists), default=0.0)
    n = sum(r.comparison.mismatches for _, r in reports)
    return Ranked(setting, eps, unb, n, med, same_as=same_as)


@dataclass
class ProgramDiagnosis:
    """Every setting tried, ranked (``ranking``, best first); ``exact`` the first that reproduces
    every output bit for bit, ``alternatives`` the others that do; ``closest`` the best when none
    does. ``emulations``: how many distinct programs were emulated for ``tried`` settings."""

    requested: Any
    ranking: list[Ranked] = field(default_factory=list)
    tried: int = 0
    emulations: int | None = None
    notes: list[str] = field(default_factory=list)
    given: Ranked | None = None

    def add(self, rows: Iterable[Ranked]) -> None:
        """Add rows and keep the ranking sorted (stable: ties keep the order tried)."""
        self.ranking.extend(rows)
        self.tried = len(self.ranking)
        self.ranking.sort(key=Ranked.key)

    @property
    def exact(self) -> Any:
        """The first setting that reproduces the dump exactly, or None."""
        hits = self._exact_rows()
        return hits[0].setting if hits else None

    @property
    def alternatives(self) -> list[Any]:
        """The other settings that reproduce it exactly."""
        return [r.setting for r in self._exact_rows()[1:]]

    @property
    def closest(self) -> Any:
        """The best setting when none is exact."""
        best = self._best()
        return best.setting if best is not None and self.exact is None else None

    @property
    def closest_mismatches(self) -> int | None:
        """Mismatching elements of ``closest``."""
        best = self._best()
        return best.mismatches if best is not None and self.exact is None else None

    def _exact_rows(self) -> list[Ranked]:
        return [r for r in self.ranking if r.error is None and r.mismatches == 0]

    def _best(self) -> Ranked | None:
        return self.ranking[0] if self.ranking and self.ranking[0].error is None else None

    def runner_up(self) -> Ranked | None:
        """The best row that is farther than the best one (a different result, not a tie)."""
        best = self._best()
        if best is None:
            return None
        return next((r for r in self.ranking[1:] if r.error is None and r.key() != best.key()),
                    None)

    def ties(self) -> list[Ranked]:
        """The rows after the best that are exactly as close (typically: the same program)."""
        best = self._best()
        return [] if best is None else [r for r in self.ranking[1:] if r.error is None
                                        and r.key() == best.key()]

    def margin(self) -> float | None:
        """How many times closer the best is than the runner-up (relative L2), inf when the best
        is at distance 0; None without a runner-up."""
        best, nxt = self._best(), self.runner_up()
        if best is None or nxt is None:
            return None
        if nxt.unbounded > best.unbounded:
            return math.inf
        if best.eps == 0:
            return math.inf
        return nxt.eps / best.eps

    def given_margin(self) -> float | None:
        """How many times closer the best is than the flags given (``given``, when it was among
        the sets tried and is farther than the best)."""
        best, given = self._best(), self.given
        if best is None or given is None or given.error is not None or given.key() == best.key():
            return None
        if best.eps == 0 or given.unbounded > best.unbounded:
            return math.inf
        return given.eps / best.eps

    def summary(self) -> str:
        """One sentence (then the notes)."""
        tail = "".join(f"; {n}" for n in self.notes)
        return self._summary() + tail

    def _summary(self) -> str:
        best = self._best()
        if best is None:
            return f"no setting among {self.tried} tried could be compared with the dump"
        nxt = self.runner_up()
        if self.exact is not None:
            text = f"the dump is reproduced exactly by {self.exact.describe()}"
        else:
            text = (f"no setting among {self.tried} tried reproduces the dump; closest: "
                    f"{best.setting.describe()} ({best.describe_distance()})")
        ties = self.ties() if self.exact is None else []
        if ties:
            text += f"; as close: {len(ties)} other set(s), e.g. {ties[0].setting.describe()}"
        if nxt is not None and self.exact is not None:
            text += f"; the next closest: {_flags(nxt.setting)} ({nxt.describe_distance()})"
        elif nxt is not None:
            m = self.margin()
            how = "infinitely" if m is None or math.isinf(m) else f"{_times(m)}"
            text += (f"; {_flags(best.setting)} is {how} closer than {_flags(nxt.setting)} "
                     f"({nxt.describe_distance()})")
        g = self.given_margin()
        if g is not None and self.given is not None and self.given.key() != (
                nxt.key() if nxt is not None else None):
            how = "infinitely" if math.isinf(g) else _times(g)
            text += (f"; {how} closer than the flags given, {_flags(self.given.setting)} "
                     f"({self.given.describe_distance()})")
        return text

    def to_json(self) -> dict[str, Any]:
        """The diagnosis as JSON (``policy`` null when nothing reproduces the dump)."""
        best = self._best()
        m = self.margin()
        return {
            "policy": self.exact.to_json() if self.exact else None,
            "description": self.exact.describe() if self.exact else None,
            "alternatives": [a.to_json() for a in self.alternatives],
            "closest": None if self.closest is None or best is None else {
                "policy": self.closest.to_json(), "mismatches": self.closest_mismatches,
                "rel_l2_eps": best.eps, "median_ulp": best.median_ulp},
            "margin": None if m is None else (None if math.isinf(m) else m),
            "given": None if self.given is None else self.given.to_json(),
            "candidates_tried": self.tried,
            "emulations": self.emulations,
            "ranking": [r.to_json() for r in self.ranking],
            "summary": self.summary(),
        }


def _times(m: float) -> str:
    if m >= 100:
        return f"{m:,.0f}×"
    return f"{m:.3g}×"


def _flags(setting: Any) -> str:
    """The flags alone (the note in brackets left out): ``--auto-cast matmult``."""
    flags = getattr(setting, "flags", ())
    return " ".join(flags) if flags else "(no flags)"
