"""The function-pass base: ``run(unit) -> bool`` written once for every loop-IR pass."""
from __future__ import annotations

from typing import ClassVar

from pyprecision.ir import Function, Module

__all__ = ["FunctionPass", "functions_of"]


def functions_of(unit: Module | Function) -> list[Function]:
    """The functions a pass runs over."""
    return [unit] if isinstance(unit, Function) else unit.functions


class FunctionPass:
    """A pass that rewrites each function on its own (xDSL ``ModulePass``, XLA ``HloModulePass``).

    Subclasses are frozen dataclasses with a kebab-case ``name`` and their options as fields; they
    implement :meth:`run_on_function`. Whatever one run needs to remember (memos, the ops it built,
    call edges) lives in a local object made per run, never on the pass.
    """

    name: ClassVar[str]

    def run(self, unit: Module | Function) -> bool:
        """Run on every function of ``unit``; True when anything changed."""
        changed = False
        for f in functions_of(unit):
            changed |= self.run_on_function(f)
        return changed

    def run_on_function(self, f: Function) -> bool:
        """Rewrite ``f`` in place; return whether anything changed."""
        raise NotImplementedError(type(self).__name__)
