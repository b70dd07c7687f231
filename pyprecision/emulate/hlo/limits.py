"""Bounds on one HLO evaluation: while iterations, wall time, call depth, result size.

An HLO program can loop forever (a ``while`` whose condition never turns false), call deeper than
Python can recurse (a module built without the verifier), or ask for a result that does not fit
in memory (``broadcast`` to ``f32[100000,100000,100000]``). The evaluator checks these limits and
raises :class:`EmulationError` naming the limit, the instruction and how to raise it, before the
work (or the allocation) happens. Defaults stop a runaway loop within seconds.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from pyprecision.errors import EmulationError

#: Default cap on the iterations of one ``while`` loop.
MAX_WHILE_ITERATIONS = 100_000
#: Default wall-time budget of one evaluation, in seconds.
TIME_BUDGET = 30.0
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
    time for the whole evaluation (None: unbounded); ``max_call_depth``: nesting of called
    computations; ``memory_budget``: the largest single result in bytes (None: half the RAM).
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
