"""Print the fuzz tally (inputs per target and outcome) at the end of a run with -s or -rA."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per fuzz target: inputs tried, and how many ended in which documented error."""
    from fuzzlib import TALLY

    if not TALLY:
        return
    terminalreporter.section("fuzz tally (inputs per target; every other exception fails)")
    for target, counts in sorted(TALLY.items()):
        total = sum(counts.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        terminalreporter.write_line(f"{target}: {total} inputs ({detail})")
