"""The dtype and shape rule of each instruction kind, checked by the verifier: each rule is declared
with its instruction (``Instruction.check``); this module is the verifier's entry point."""

from __future__ import annotations

from pyprecision.ir.core import Function
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.rules import RuleViolation, same_class

__all__ = ["RuleViolation", "check_types", "same_class"]


def check_types(f: Function, inst: Instruction) -> None:
    """Raise RuleViolation when ``inst``'s dtypes or shapes break the rules of its kind."""
    inst.check(f)
