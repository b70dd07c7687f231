"""Shared helpers for the pass tests: parse/run/print, and a small Target double."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyprecision import ir
from pyprecision.ir.dtypes import as_dtype

#: the repository's example programs
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def parse(text: str) -> ir.Module:
    """Parse dedented IR text (verified)."""
    return ir.parse(textwrap.dedent(text).strip() + "\n")


def canon(text: str) -> str:
    """The printer's canonical form of ``text``."""
    return ir.to_text(parse(text))


def run(pass_: Any, text: str) -> tuple[bool, str]:
    """Run one pass on ``text``; verify; return (changed, printed IR)."""
    m = parse(text)
    changed = pass_.run(m)
    ir.verify(m)
    return changed, ir.to_text(m)


def assert_unchanged(pass_: Any, text: str) -> None:
    """A pass that reports no change leaves the printed IR byte-identical."""
    before = canon(text)
    changed, after = run(pass_, text)
    assert changed is False
    assert after == before


@dataclass(frozen=True)
class TargetDouble:
    """A small Target double: fixed mode, fixed DMA-cast bit, and a scripted matmul-operand rule
    that records every question asked."""

    fp32_cast_mode: str = "all"
    enable_dma_cast: bool = True
    operand_rule: dict[str, str] = field(default_factory=dict)
    asked: list[tuple[str, bool]] = field(default_factory=list)

    def get_matmult_operand_type(self, dtype: Any, transpose: bool = False) -> ir.DType:
        dt = as_dtype(dtype)
        self.asked.append((dt.name, transpose))
        return as_dtype(self.operand_rule.get(dt.name, dt.name))
