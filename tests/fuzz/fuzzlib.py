"""Shared pieces of the fuzz tests: the budget, byte mutations of valid seeds, the error contract.

The budget is deterministic (``derandomize=True``: the same inputs on every run, no database
needed) and small by default; ``PYPRECISION_FUZZ_EXAMPLES=N`` runs N inputs per target instead
(the long run of docs/io.md, "Fuzzing"). ``DEADLINE_MS`` is the stated time bound per input.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from pyprecision.errors import ParseError, PyPrecisionError

#: Inputs per target in CI, unless PYPRECISION_FUZZ_EXAMPLES says otherwise.
DEFAULT_EXAMPLES = 150
EXAMPLES = int(os.environ.get("PYPRECISION_FUZZ_EXAMPLES", "0")) or DEFAULT_EXAMPLES
#: No single input may take longer than this (milliseconds), parsing or reading.
DEADLINE_MS = 2000

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # the bound is checked by within_budget (hypothesis' deadline is per example
    # including shrinking; ours is per call, and the same on a loaded machine)
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)

#: Tally of inputs tried and errors seen per target, printed by the long run (conftest).
TALLY: dict[str, dict[str, int]] = {}


def mutations(seed: bytes, max_edits: int = 6) -> st.SearchStrategy[bytes]:
    """``seed`` with a few random edits: byte flips, insertions, deletions, truncation, splices
    of interesting values (0, 0xff, digits, JSON punctuation, huge numbers)."""
    interesting = [b"\0", b"\xff", b"9" * 30, b"-1", b"[", b"]", b"{", b"}", b'"', b",",
                   b"true", b"null", b"1e999", b"\n", b"%", b"@", b"(", b")", b"\x93NUMPY"]

    @st.composite
    def edit(draw: Any) -> bytes:
        data = bytearray(seed)
        for _ in range(draw(st.integers(0, max_edits))):
            kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "splice"]))
            at = draw(st.integers(0, max(len(data) - 1, 0)))
            if kind == "flip" and data:
                data[at] ^= 1 << draw(st.integers(0, 7))
            elif kind == "insert":
                data[at:at] = draw(st.binary(min_size=1, max_size=8))
            elif kind == "delete" and data:
                del data[at : at + draw(st.integers(1, 16))]
            elif kind == "truncate":
                del data[at:]
            else:
                data[at:at] = draw(st.sampled_from(interesting))
        return bytes(data)

    return edit()


def within_budget(target: str, call: Callable[[], Any], *, located: bool = False) -> str:
    """Run ``call``: it may return or raise a pyprecision error (with ``located``, a ParseError
    must carry a line and column ≥ 1); anything else propagates and fails the test. It must take
    at most DEADLINE_MS (an input over it is run again, and fails only if slow both times). Returns "ok" (or the string ``call`` returned) or the error's class name,
    and counts it in TALLY."""
    outcome, elapsed = _timed(call, located)
    if elapsed > DEADLINE_MS:  # once more: a slow input is slow twice, a load spike is not
        outcome, elapsed = _timed(call, located)
    assert elapsed <= DEADLINE_MS, f"{target}: one input took {elapsed:.0f} ms (twice)"
    counts = TALLY.setdefault(target, {})
    counts[outcome] = counts.get(outcome, 0) + 1
    return outcome


def _timed(call: Callable[[], Any], located: bool) -> tuple[str, float]:
    t0 = time.perf_counter()
    outcome = "ok"
    try:
        r = call()
        outcome = r if isinstance(r, str) else "ok"
    except PyPrecisionError as exc:
        outcome = type(exc).__name__
        if located and isinstance(exc, ParseError):
            assert exc.line >= 1 and exc.col >= 1, f"ParseError without a location: {exc}"
    return outcome, (time.perf_counter() - t0) * 1000
