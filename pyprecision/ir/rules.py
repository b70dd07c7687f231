"""Helpers of the instruction rules (each rule lives in its instruction's ``check``).

A rule raises ``RuleViolation`` with the message; the verifier adds the location. Messages are formatted
only when a rule fails (``if not ok: raise RuleViolation(f"...")``): formatting on every passing check cost
more than the checks themselves on large functions.
"""

from __future__ import annotations

from typing import Any

from pyprecision.ir.dtypes import DType
from pyprecision.ir.values import ScalarValue, Value

__all__ = ["RuleViolation", "check_elementwise", "check_index", "need", "same_class", "shape_text"]


class RuleViolation(Exception):
    """A broken rule; ``str`` is the message without a location."""


def same_class(a: DType, b: DType) -> bool:
    """Both float or both integer (every dtype is one or the other)."""
    return a.is_float == b.is_float


def need(cond: bool, msg: str) -> None:
    """Raise RuleViolation(msg) unless ``cond`` (constant messages only; a formatted one is raised
    directly so that it is built only on failure)."""
    if not cond:
        raise RuleViolation(msg)


def shape_text(x: object) -> str:
    """``[4,8]``."""
    return "[" + ",".join(str(s) for s in x.shape) + "]"  # type: ignore[attr-defined]


def check_index(idx: object) -> int:
    """A 1-D integer index value; returns its length."""
    need(
        isinstance(idx, Value) and idx.dtype.is_integer and len(idx.shape) == 1,
        "the index must be a 1-D integer value",
    )
    return idx.shape[0]  # type: ignore[attr-defined]


def check_elementwise(result: Value | None, ops: list[Any]) -> None:
    """At least one operand is a value, and every value operand has the result's shape."""
    assert result is not None
    need(any(isinstance(o, Value) for o in ops), "at least one operand must be a value")
    for o in ops:
        if not (isinstance(o, ScalarValue) or o.shape == result.shape):
            raise RuleViolation(
                f"operand %{getattr(o, 'name', '?')} shape {shape_text(o)} != result shape "
                f"{shape_text(result)}"
            )
