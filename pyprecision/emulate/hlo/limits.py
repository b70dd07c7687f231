"""Bounds on one HLO evaluation: while iterations, wall time, call depth, result size.

An HLO program can loop forever (a ``while`` whose condition never turns false), call deeper than
Python can recurse (a module built without the verifier), or ask for more memory than the machine
has (``broadcast`` to ``f32[100000,100000,100000]``). The evaluator checks these limits and raises
:class:`EmulationError` naming the limit, the instruction and how to raise it, before the work (or
the allocation) happens. The defaults never refuse a module that fits: the iteration cap stops a
runaway loop within seconds, the wall-time budget is off unless asked for, and the memory budget
(half the RAM) is checked against what the module will hold at its peak, before it runs
(:func:`check_module_memory`; docs/decisions/hlo-eval.md HE17).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from pyprecision.errors import EmulationError

#: Default cap on the iterations of one ``while`` loop.
MAX_WHILE_ITERATIONS = 100_000
#: Default wall-time budget of one evaluation, in seconds (None: unbounded; a real model may take
#: minutes, and the iteration cap already stops a runaway loop).
TIME_BUDGET: float | None = None
#: Default bound on nested computation calls (call, while, conditional, fusion, reduce...).
MAX_CALL_DEPTH = 64
#: Default memory budget as a fraction of the machine's physical memory.
MEMORY_FRACTION = 0.5


def physical_memory() -> int:
    """Bytes of physical memory (8 GiB when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 8 << 30


def default_memory_budget() -> int:
    """:data:`MEMORY_FRACTION` of :func:`physical_memory`."""
    return int(physical_memory() * MEMORY_FRACTION)


class TimeBudgetExceeded(EmulationError):
    """The wall-time budget ran out (``while_reported``: a while loop has named itself)."""

    while_reported = False


@dataclass(frozen=True)
class Limits:
    """Options of :func:`pyprecision.emulate.run_hlo` (and ``hlo-run``).

    ``max_while_iterations``: iterations of any one while loop; ``time_budget``: seconds of wall
    time for the whole evaluation (None, the default: unbounded); ``max_call_depth``: nesting of
    called computations; ``memory_budget``: bytes the evaluation may hold at once, checked before
    it runs against the module's peak of live values and each result (None: half the RAM).
    """

    max_while_iterations: int = MAX_WHILE_ITERATIONS
    time_budget: float | None = TIME_BUDGET
    max_call_depth: int = MAX_CALL_DEPTH
    memory_budget: int | None = None

    def __post_init__(self) -> None:
        if self.max_while_iterations < 0 or self.max_call_depth < 1:
            raise EmulationError("max_while_iterations must be >= 0 and max_call_depth >= 1")
        if self.time_budget is not None and not self.time_budget > 0:
            raise EmulationError(f"time_budget must be > 0 seconds, got {self.time_budget}")
        if self.memory_budget is not None and self.memory_budget < 0:
            raise EmulationError(f"memory_budget must be >= 0 bytes, got {self.memory_budget}")


@dataclass
class Budget:
    """The running state of one evaluation against its :class:`Limits`."""

    limits: Limits = field(default_factory=Limits)
    start: float = field(default_factory=time.monotonic)
    depth: int = 0

    def __post_init__(self) -> None:
        self.memory = (default_memory_budget() if self.limits.memory_budget is None
                       else self.limits.memory_budget)
        tb = self.limits.time_budget
        self.deadline = None if tb is None else self.start + tb

    def check_time(self, where: str) -> None:
        """EmulationError when the wall-time budget is spent."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeBudgetExceeded(f"{where}: evaluation exceeded its time budget of "
                                 f"{self.limits.time_budget:g} s (time_budget= / hlo-run "
                                 "--time-budget)")

    def check_bytes(self, nbytes: int, where: str, what: str) -> None:
        """EmulationError when one result of ``nbytes`` exceeds the memory budget."""
        if nbytes > self.memory:
            raise EmulationError(f"{where}: {what} needs {nbytes:,} bytes, more than the memory "
                                 f"budget of {self.memory:,} bytes (memory_budget= / hlo-run "
                                 "--memory-budget); refused before allocating")

    def enter(self, where: str) -> None:
        """One more level of called computations."""
        self.depth += 1
        if self.depth > self.limits.max_call_depth:
            self.depth -= 1
            raise EmulationError(f"{where}: computations nested deeper than "
                                 f"{self.limits.max_call_depth} calls (max_call_depth=)")

    def leave(self) -> None:
        """Back out of one level."""
        self.depth -= 1


def schedule(comp: Any) -> list[tuple[Any, list[int]]]:
    """``comp``'s instructions in evaluation order (post order from the root), each with the ids of
    the instructions whose values may be dropped after it: those it reads last, and itself when
    nothing reads it (never the root)."""
    order = comp.post_order([comp.root])
    last: dict[int, int] = {}
    for i, inst in enumerate(order):
        last[id(inst)] = i
        for o in inst.operands:
            last[id(o)] = i
    last.pop(id(comp.root), None)
    drops: list[list[int]] = [[] for _ in order]
    for key, i in last.items():
        drops[i].append(key)
    return [(inst, drops[i]) for i, inst in enumerate(order)]


#: opcodes whose result shares its operands' arrays (nothing new is allocated)
_ALIASING = frozenset({"tuple", "get-tuple-element", "parameter"})


def check_module_memory(module: Any, budget: Budget) -> None:
    """EmulationError, before anything is allocated, when one result of ``module`` or the live
    values of its evaluation at their peak (each value held from its instruction to its last
    reader, as the evaluator does; called computations add their own peak) exceed the memory
    budget. The message names the instruction and the bytes."""
    peak, at = _peak(module.entry, budget, {}, set())
    if peak > budget.memory and at is not None:
        raise EmulationError(f"{at.name}: the evaluation would hold {peak:,} bytes of live values "
                             f"here, more than the memory budget of {budget.memory:,} bytes "
                             "(memory_budget= / hlo-run --memory-budget); refused before running")


def _peak(comp: Any, budget: Budget, memo: dict[int, tuple[int, Any]],
          visiting: set[int]) -> tuple[int, Any]:
    """(peak bytes beyond ``comp``'s parameters, the instruction where it is reached)."""
    if id(comp) in memo:
        return memo[id(comp)]
    if id(comp) in visiting:  # recursion: the call-depth limit reports it at run time
        return 0, None
    visiting.add(id(comp))
    sizes: dict[int, int] = {}
    live = peak = 0
    at = None
    for inst, drop in schedule(comp):
        size = 0
        if inst.opcode not in _ALIASING:
            size = shape_bytes(inst.shape)
            budget.check_bytes(size, inst.name, f"the result {inst.shape.to_text(with_layout=False)}")
        inner = 0
        for c in inst.called_computations:
            p, _ = _peak(c, budget, memo, visiting)
            inner = max(inner, p)
        sizes[id(inst)] = size
        live += size
        if live + inner > peak:
            peak, at = live + inner, inst
        for key in drop:
            live -= sizes.pop(key, 0)
    visiting.discard(id(comp))
    memo[id(comp)] = (peak, at)
    return peak, at


def shape_bytes(shape: object) -> int:
    """Bytes of a value of ``shape`` (tuples summed; sub-byte types one byte per element)."""
    from pyprecision.emulate.shared.numeric import dtype_of

    total = 0
    stack = [shape]
    while stack:
        s = stack.pop()
        if s.is_tuple:  # type: ignore[attr-defined]
            stack.extend(s.tuple_shapes)  # type: ignore[attr-defined]
            continue
        n = 1
        for d in s.dimensions:  # type: ignore[attr-defined]
            n *= max(int(d), 0)
        try:
            item = dtype_of(s.element_type).itemsize  # type: ignore[attr-defined]
        except EmulationError:  # token / opaque: nothing to allocate
            item = 0
        total += n * item
    return total
