"""The search: every flag set of the space run through one :class:`~pyprecision.emulate.FlagSetRunner`
(the HLO passes and the binding once, one lowering per lowering setting, flag sets whose programs
are the same emulated once; decision TU7), each distinct program costed (an estimate, without
emulation) and then, cheapest first, scored by its error against ``--auto-cast none`` until no
program left could be the recommendation: the cheapest set within the budget (decision TU8)."""

from __future__ import annotations

import dataclasses
import math
import mmap
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from pyprecision import hlo
from pyprecision.emulate import (
    SET_ERRORS,
    CompiledHlo,
    FlagSetRunner,
    Program,
    can_fork,
    forked,
    run_compiled,
)
from pyprecision.frontend import MODE_TABLE, parse_flags
from pyprecision.kernel import default_threads, thread_limit
from pyprecision.tune.attribution import OpShare, attribute
from pyprecision.tune.cost import COST_TABLE, Cost, estimate_cost
from pyprecision.tune.errors import TuneError
from pyprecision.tune.metrics import METRICS, error_of
from pyprecision.tune.selection import Score, emulation_order, next_to_emulate, recommend, stop_cost
from pyprecision.tune.space import ACCUMULATION_FLAG, SATURATE_FLAG, FlagSet, flag_sets

__all__ = ["NotEmulated", "Trial", "TuneResult", "check_arguments", "tune"]

TARGETS = ("gen2", "gen3", "gen4")


@dataclass
class Trial:
    """One distinct program: the flag set shown for it (the shortest of those that print the same
    IR), the others (``aliases``), its error and its estimated cost."""

    flags: FlagSet
    aliases: list[FlagSet]
    error: float
    cost: Cost
    compiled: CompiledHlo = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        """``flags`` (one CLI line), ``error``, ``cost`` (seconds), ``aliases``."""
        return {"flags": self.flags.cli, "error": _num(self.error), "cost": self.cost.total_s,
                "cost_detail": self.cost.to_json(), "aliases": [a.cli for a in self.aliases]}


@dataclass
class NotEmulated:
    """A distinct program left out of the emulation: it costs more than the recommendation, so it
    could not be recommended (decision TU8). Its cost is known, its error is not."""

    flags: FlagSet
    aliases: list[FlagSet]
    cost: Cost

    def to_json(self) -> dict[str, Any]:
        """``flags``, ``cost`` (seconds), ``cost_detail``, ``aliases``; no error."""
        return {"flags": self.flags.cli, "cost": self.cost.total_s,
                "cost_detail": self.cost.to_json(), "aliases": [a.cli for a in self.aliases]}


@dataclass
class TuneResult:
    """What ``tune`` found: the recommended trial, the baseline (``--auto-cast none``), the Pareto
    frontier of (cost, error) of the programs emulated, every trial (an emulated program), the
    programs not emulated because they cost more than the recommendation (none with
    ``exhaustive``), the ops adding most error under the recommendation and (with held-out inputs)
    the recommendation's error there."""

    budget: float
    metric: str
    target: str
    baseline: Trial
    recommended: Trial
    frontier: list[Trial]
    trials: list[Trial]
    sets_tried: int
    attribution: list[OpShare] = field(default_factory=list)
    validation_error: float | None = None
    notes: list[str] = field(default_factory=list)
    not_emulated: list[NotEmulated] = field(default_factory=list)
    exhaustive: bool = False

    @property
    def programs(self) -> int:
        """The distinct programs compiled: emulated or not."""
        return len(self.trials) + len(self.not_emulated)

    @property
    def budget_met(self) -> bool:
        """Whether a program that narrows (another than ``--auto-cast none``'s, in a mode other
        than none) and was emulated meets the budget (every program costing no more than the
        recommendation was)."""
        return any(t.error <= self.budget and t.flags.mode != "none"
                   for t in self.trials if t is not self.baseline)  # fmt: skip

    @property
    def validation_exceeds(self) -> bool:
        """The held-out error is above the budget."""
        return self.validation_error is not None and not self.validation_error <= self.budget

    def to_json(self) -> dict[str, Any]:
        """The JSON document of ``tune --json``."""
        rec = self.recommended
        return {
            "metric": self.metric, "budget": _num(self.budget), "target": self.target,
            "estimate": "cost is an estimate from public peak figures, not a measurement",
            "recommended": {"flags": rec.flags.cli, "argv": list(rec.flags.argv),
                            "error": _num(rec.error), "cost": rec.cost.total_s,
                            "budget_met": self.budget_met},  # fmt: skip
            "baseline": {"flags": self.baseline.flags.cli, "error": _num(self.baseline.error),
                         "cost": self.baseline.cost.total_s},  # fmt: skip
            "frontier": [t.to_json() for t in self.frontier],
            "trials": [t.to_json() for t in self.trials],
            "sets_tried": self.sets_tried, "programs": self.programs,
            "programs_emulated": len(self.trials),
            "programs_not_emulated": len(self.not_emulated), "exhaustive": self.exhaustive,
            "not_emulated": [t.to_json() for t in self.not_emulated],
            "attribution": [a.to_json() for a in self.attribution],
            "validation": None if self.validation_error is None else {
                "error": _num(self.validation_error), "exceeds_budget": self.validation_exceeds},
            "notes": list(self.notes),
        }  # fmt: skip


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "nan")


def check_arguments(module: Any, args: Sequence[Any], what: str = "inputs") -> list[np.ndarray]:
    """``args`` against the ENTRY parameters: their count, shapes and dtypes; one TuneError line
    naming the first that differs."""
    params = sorted(module.entry.parameters, key=lambda p: p.parameter_number or 0)
    if len(args) != len(params):
        raise TuneError(f"{what}: {len(args)} array(s) for {len(params)} parameter(s) of "
                        f"ENTRY {module.entry.name}")  # fmt: skip
    out = []
    for p, a in zip(params, args, strict=True):
        if p.shape.is_tuple:
            raise TuneError(f"{what}: parameter {p.parameter_number} '{p.name}' is a tuple; tune "
                            "takes array parameters")  # fmt: skip
        arr = np.asarray(a)
        want = np.dtype(hlo.numpy_dtype(p.shape.element_type))
        dims = tuple(int(d) for d in p.shape.dimensions)
        if tuple(arr.shape) != dims or arr.dtype != want:
            raise TuneError(f"{what}: parameter {p.parameter_number} '{p.name}' is {want}"
                            f"{list(dims)}, got {arr.dtype}{list(arr.shape)}")  # fmt: skip
        out.append(arr)
    return out


def _check_options(budget: float, metric: str, target: str) -> None:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or math.isnan(budget) \
            or budget < 0:
        raise TuneError(f"budget must be a number ≥ 0, not {budget!r}")
    if metric not in METRICS:
        raise TuneError(f"unknown metric {metric!r} (choose from {', '.join(METRICS)})")
    if target not in TARGETS:
        raise TuneError(f"unknown target {target!r} (choose from {', '.join(TARGETS)})")


def _space(runner: FlagSetRunner) -> tuple[list[FlagSet], list[str]]:
    """The flag sets worth compiling and why axes were left at their default: mixed-precision
    accumulation and saturate-infinity act in the lowering only (the precision passes never read
    them), so a lowering that prints the same with and without one proves it changes nothing;
    the fp8e4m3fn flag relabels float8e4m3fn values only (decision TU1). The lowerings are the
    runner's own, which the flag sets' programs then copy."""
    base = runner.lowering_text(parse_flags([]))
    acc = runner.lowering_text(parse_flags([ACCUMULATION_FLAG])) != base
    sat = runner.lowering_text(parse_flags([SATURATE_FLAG])) != base
    fp8 = "float8e4m3fn" in base
    notes = [f"{flag}: the lowering is the same with and without it, not searched"
             for flag, used in ((ACCUMULATION_FLAG, acc), (SATURATE_FLAG, sat)) if not used]
    if not fp8:
        notes.append("--experimental-unsafe-fp8e4m3fn-as-fp8e4m3: no float8e4m3fn value, not "
                     "searched")  # fmt: skip
    return flag_sets(accumulation=acc, saturate=sat, fp8=fp8, key=runner.program_key), notes


class _Programs:
    """The distinct programs of ``sets`` (by digest, in the order of their first set; decision
    TU7), each with its flag sets and its estimated cost, every cost known before anything is
    emulated (a missing PE dtype fails here; decision TU8), and ``--auto-cast none``'s outputs
    (``ref``). With ``parallel``, a forked child compiles units of sets meanwhile (TU14): this
    process takes :func:`_units` from the front, the child from the back, until they meet
    (:class:`_Claims`, decision TU18); the child's digests and costs come back, and
    :meth:`program` compiles one of its programs here when it is asked for (to emulate it),
    checking the digest. This process emulates ``ref`` after its first unit (``ref``'s own),
    under half the threads, so the claims share that work too."""

    def __init__(self, runner: FlagSetRunner, sets: Sequence[FlagSet], target: str,
                 table: dict[str, dict[str, Any]], progress: bool | None, parallel: bool
                 ) -> None:  # fmt: skip
        self.runner = runner
        units = _units(sets, runner.program_key)
        claims = _Claims(len(units))
        half = max(1, _workers() // 2) if parallel else None

        def in_child() -> dict[int, list[tuple[bytes, Cost] | None]]:
            rows = {}
            for k in reversed(range(len(units))):
                if not claims.take(k, _Claims.CHILD):
                    break
                rows[k] = _digests_and_costs(runner, units[k], target, table)
            return rows

        made: dict[int, Program] = {}
        memo: dict[int, tuple[Any, Cost]] = {}  # the costs (TU17)
        with forked(in_child, enabled=parallel and len(units) > 1) as child:
            for k in _progress(range(len(units)), len(units), "compile", progress):
                if not claims.take(k, _Claims.PARENT):
                    break  # met the child
                for fs in units[k]:
                    made[id(fs)] = runner.program(fs.config)
                    _cost(made[id(fs)], target, table, memo)  # here too, the claims share it
                if k == 0:  # ref first, under half the threads while the child compiles; the
                    with thread_limit(half), suppress(*SET_ERRORS):  # claims share the rest
                        runner.outputs(made[id(sets[0])])
            got = child.result()
        if id(sets[0]) not in made:  # the child took every unit
            made[id(sets[0])] = runner.program(sets[0].config)
        elsewhere: dict[int, tuple[bytes, Cost] | None] = {}
        for k, rows in (got if isinstance(got, dict) else {}).items():
            if _rows_of(rows, units[k]):  # else: compiled here
                elsewhere.update(zip(map(id, units[k]), rows, strict=True))
        self.ref = runner.outputs(made[id(sets[0])])  # a failed emulation raises here
        #: digest -> (the program, None while only the child has compiled it; its flag sets;
        #: the cost the child estimated, None when the parent has the program)
        groups: dict[bytes, tuple[Program | None, list[FlagSet], Cost | None]] = {}
        for fs in sets:
            prog, row = made.get(id(fs)), elsewhere.get(id(fs))
            if prog is None and row is None:  # the child failed on it: compile it here
                prog = runner.program(fs.config)
            digest = prog.digest if prog is not None else row[0]  # type: ignore[index]
            old = groups.get(digest)
            if old is None:
                groups[digest] = (prog, [fs], None if prog is not None else row[1])  # type: ignore[index]
            else:
                old[1].append(fs)
                if old[0] is None and prog is not None:
                    groups[digest] = (prog, old[1], None)
        self.digests = list(groups)
        self.programs = [p for p, _, _ in groups.values()]
        self.members = [m for _, m, _ in groups.values()]
        self.costs: list[Cost] = [_cost(p, target, table, memo) if p is not None else c  # type: ignore[misc]
                                  for p, _, c in groups.values()]  # fmt: skip

    def program(self, i: int) -> Program:
        """The i-th program, compiled here if only the child had compiled it."""
        prog = self.programs[i]
        if prog is None:
            prog = self.runner.program(self.members[i][0].config)
            if prog.digest != self.digests[i]:
                raise RuntimeError(f"internal: {self.members[i][0].cli} compiled to another "
                                   "program here than in the child process")  # fmt: skip
            self.programs[i] = prog
        return prog


def _emulate(scores: list[Score], budget: float, exhaustive: bool, error: Callable[[int], float],
             workers: int, steps: Callable[[range], Iterable[int]] = iter) -> None:  # fmt: skip
    """Fill in the errors of the programs the search names (TU8), cheapest first, each with
    ``error(i)``. With ``workers`` > 1 the program after it (:func:`_following`) is emulated
    meanwhile in a forked child, each process with half the threads, and its error is kept only
    when the search then names it (decision TU15): the same errors as one at a time."""
    # one step per emulation, and a last one that finds nothing left (at most len(scores) steps)
    for _ in steps(range(len(scores))):
        i = next_to_emulate(scores, budget, exhaustive)
        if i is None:
            break
        j = _following(scores, i, budget, exhaustive) if workers > 1 else None
        with thread_limit(max(1, workers // 2) if j is not None else None), \
                forked(partial(error, i if j is None else j), enabled=j is not None) as child:
            scores[i] = Score(scores[i].cost, scores[i].length, error(i))
            ahead = child.result()
        if j is not None and isinstance(ahead, float) and next_to_emulate(scores, budget,
                                                                          exhaustive) == j:  # fmt: skip
            scores[j] = Score(scores[j].cost, scores[j].length, ahead)


def _following(scores: Sequence[Score], i: int, budget: float, exhaustive: bool) -> int | None:
    """The program :func:`next_to_emulate` would name after ``i`` if ``i``'s error left the
    bound as it is: the next not emulated in :func:`emulation_order`, when it costs no more than
    the bound now (TU15)."""
    bound = math.inf if exhaustive else stop_cost(scores, budget)
    for k in emulation_order(scores):
        if k != i and scores[k].error is None:
            return k if scores[k].cost <= bound else None
    return None


def _workers() -> int:
    """The processes tune may use: the thread count in force (``PYPRECISION_THREADS``, a
    ``thread_limit``, else the usable cores)."""
    return default_threads() if can_fork() else 1


def _units(sets: Sequence[FlagSet], key: Callable[[Any], Any]) -> list[list[FlagSet]]:
    """``sets`` in units compiled by one process each (decisions TU14, TU18): a set with its
    accumulation twin (the same set with mixed-precision accumulation on, whose program its own
    is made from: P25). ``--auto-cast none``'s unit (the first set's) comes first; then the units
    tune is likeliest to emulate, since it emulates the cheapest programs first and compiles again
    here any the child made: scope ``all`` (narrowest, cheapest), then ``matmult``, then the rest;
    within each, ``--enable-saturate-infinity`` after the sets without it (its ``satinf``
    instructions cost more). The child takes units from the back."""
    units: dict[Any, list[FlagSet]] = {}
    for fs in sets:
        twin = dataclasses.replace(fs.config, enable_mixed_precision_accumulation=True)
        units.setdefault(key(twin), []).append(fs)
    first, *rest = units.values()

    def likely(unit: list[FlagSet]) -> tuple[int, bool]:
        c = unit[0].config
        row = MODE_TABLE.get(c.fp32_cast_mode)
        return {"all": 0, "matmult": 1}.get(row.scope if row else "", 2), c.enable_saturate_infinity

    return [first, *sorted(rest, key=likely)]


def _rows_of(rows: Any, unit: Sequence[FlagSet]) -> bool:
    """Whether the child's ``rows`` are a row per set of ``unit``: (digest, cost), or None."""
    return isinstance(rows, list) and len(rows) == len(unit) and all(
        r is None or (isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], bytes)
                      and isinstance(r[1], Cost)) for r in rows)  # fmt: skip


class _Claims:
    """Which process takes each unit (decision TU18): a byte each, in memory the forked child
    shares. This process takes units from the front, the child from the back, each the next one
    nobody has taken, until they meet; so the faster one takes more, whatever the machine's other
    load. Two that look at one unit at the same moment may both take it: it is then compiled
    twice, alike (this process keeps its own)."""

    PARENT, CHILD = 1, 2

    def __init__(self, n: int) -> None:
        self.buf = mmap.mmap(-1, n)  # anonymous and shared (MAP_SHARED): the child writes here

    def take(self, k: int, who: int) -> bool:
        """Take unit ``k`` for ``who`` if nobody has."""
        if self.buf[k]:
            return False
        self.buf[k] = who
        return True


def _digests_and_costs(runner: FlagSetRunner, sets: Sequence[FlagSet], target: str,
                       table: dict[str, dict[str, Any]]) -> list[tuple[bytes, Cost] | None]:  # fmt: skip
    """In the child (TU14): each set's program digest and estimated cost, or None where
    compiling or costing failed (the parent then does it, and meets the error itself)."""
    rows: list[tuple[bytes, Cost] | None] = []
    memo: dict[int, tuple[Any, Cost]] = {}
    for fs in sets:
        try:
            prog = runner.program(fs.config)
            rows.append((prog.digest, _cost(prog, target, table, memo)))
        except Exception:  # noqa: BLE001 - the parent compiles it again and raises
            rows.append(None)
    return rows


def _cost(prog: Program, target: str, table: dict[str, dict[str, Any]],
          memo: dict[int, tuple[Any, Cost]] | None = None) -> Cost:  # fmt: skip
    """The estimated cost of ``prog``, read from its accumulation twin's instructions when it was
    made from them (P26). ``memo``: ``id`` of a function → (the function, kept alive; its cost),
    so the flag sets that share one program, and a program and the ones made from it, are costed
    once (decision TU17)."""
    function = (prog.twin or prog).compiled.lowered.function
    got = memo.get(id(function)) if memo is not None else None
    if got is None or got[0] is not function:
        got = (function, estimate_cost(function, target, table))
        if memo is not None:
            memo[id(function)] = got
    return got[1]


def _progress(items: Iterable[Any], total: int, desc: str, enabled: bool | None) -> Iterable[Any]:
    if enabled is False:
        return items
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(items, total=total, desc=desc, disable=None if enabled is None else not enabled,
                leave=False, unit="set")  # fmt: skip


def tune(
    module: Any,
    args: Sequence[Any],
    budget: float = 1e-2,
    metric: str = "rel-l2",
    target: str = "gen2",
    *,
    cost_table: dict[str, dict[str, Any]] | None = None,
    validate: Sequence[Any] | None = None,
    attribution: int = 5,
    progress: bool | None = False,
    exhaustive: bool = False,
) -> TuneResult:
    """The cheapest neuronx-cc flags whose outputs stay within ``budget`` of ``--auto-cast none``'s
    on ``args`` (the ENTRY parameters in order) under ``metric`` (rel-l2, max-abs, ulp, top1; the
    worst output counts), costed on ``target`` with ``cost_table`` (default :data:`COST_TABLE`:
    an estimate, not a measurement). ``module``: an HLO module or its text. ``validate``: held-out
    arguments the recommendation is re-measured on. ``progress``: a tqdm bar (None: on a
    terminal). Programs are emulated cheapest first and the search stops where no program left
    could be the recommendation; ``exhaustive`` emulates every program (the full frontier).
    Bad input is a TuneError."""
    _check_options(budget, metric, target)
    if isinstance(module, str):
        module = hlo.parse(module)
    args = check_arguments(module, args)
    held_out = None if validate is None else check_arguments(module, validate, "validate inputs")
    table = COST_TABLE if cost_table is None else cost_table
    # the HLO passes and the binding once, one lowering per lowering setting; no value memo: on
    # tune's programs it reuses a few per cent of the values and costs more than it saves (TU7)
    runner = FlagSetRunner(module, args, target, share_values=False)
    with runner.searching():  # the programs kept are not walked by every collection (P30)
        sets, notes = _space(runner)
        progs = _Programs(runner, sets, target, table, progress,
                          parallel=not exhaustive and _workers() > 1)  # fmt: skip
        ref, program = progs.ref, progs.program
        members_of, costs = progs.members, progs.costs  # the first holds --auto-cast none
        reps = [min(m, key=lambda f: len(f.argv)) for m in members_of]  # first of shortest
        scores = [Score(c.total_s, len(r.argv), 0.0 if i == 0 else None)
                  for i, (c, r) in enumerate(zip(costs, reps, strict=True))]  # fmt: skip
        todo = sum(s.cost <= scores[0].cost for s in scores[1:]) if not exhaustive else len(scores) - 1

        def error(k: int) -> float:
            return float(error_of(metric, runner.outputs(program(k)), ref))

        _emulate(scores, budget, exhaustive, error, _workers(),
                 lambda steps: _progress(steps, todo, "emulate", progress))  # fmt: skip
        trials: list[Trial] = []
        skipped: list[NotEmulated] = []
        index: dict[int, int] = {}  # program -> its trial
        for i, (members, rep, cost) in enumerate(zip(members_of, reps, costs, strict=True)):
            others = [f for f in members if f is not rep]
            err = scores[i].error
            if err is None:
                skipped.append(NotEmulated(rep, others, cost))
            else:
                index[i] = len(trials)
                # handed out: verified here too, also when a forked child emulated it (P31)
                trials.append(Trial(rep, others, err, cost, runner.verified(program(i)).compiled))
        baseline, rec = trials[0], trials[index[recommend(scores, budget)]]
        result = TuneResult(float(budget), metric, target, baseline, rec, pareto(trials), trials,
                            len(sets), notes=notes, not_emulated=skipped,
                            exhaustive=exhaustive)  # fmt: skip
        _explain(result)
        if rec is not baseline and attribution > 0:
            result.attribution = attribute(baseline.compiled, rec.compiled, args, attribution)
        if held_out is not None:
            result.validation_error = error_of(metric, run_compiled(rec.compiled, held_out),
                                               run_compiled(baseline.compiled, held_out))
        return result


def _explain(result: TuneResult) -> None:
    """The notes on the programs not emulated and on a recommendation of ``--auto-cast none``."""
    rec, baseline, budget, metric = (result.recommended, result.baseline, result.budget,
                                     result.metric)  # fmt: skip
    if result.not_emulated:
        n = len(result.not_emulated)
        result.notes.append(f"{n} of {result.programs} programs not emulated: each costs more than "
                            "the recommendation, so none could be recommended (--exhaustive "
                            "emulates them for the full frontier)")  # fmt: skip
    if rec is baseline and not result.budget_met:
        same = [a for a in baseline.aliases if a.mode != "none"]
        also = (f" ({len(same)} narrowing flag sets compile to --auto-cast none's program)"
                if same else "")  # fmt: skip
        scope = " and costs no more than --auto-cast none" if result.not_emulated else ""
        result.notes.append(f"no flag set that narrows{scope} meets budget {budget:g} ({metric}); "
                            f"recommending --auto-cast none{also}")  # fmt: skip
    elif rec is baseline:
        result.notes.append(f"the flag sets within budget {budget:g} ({metric}) cost no less "
                            "than --auto-cast none; recommending it")  # fmt: skip


def pareto(trials: Sequence[Trial]) -> list[Trial]:
    """The trials no other trial beats on both cost and error (and ties on neither), cheapest
    first."""
    front: list[Trial] = []
    for t in sorted(trials, key=lambda t: (t.cost.total_s, t.error, len(t.flags.argv))):
        if not front or t.error < front[-1].error:  # equal cost: the first has the lower error
            front.append(t)
    return front
