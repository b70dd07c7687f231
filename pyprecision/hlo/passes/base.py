"""The protocol every HLO pass follows, and the expander base two of them share."""
from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol

from pyprecision.hlo import rewrite as R
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule


class HloPass(Protocol):
    """A frozen dataclass with a kebab-case ``name`` and ``run(module) -> bool`` (changed?)."""

    name: ClassVar[str]

    def run(self, module: HloModule) -> bool:
        """Rewrite ``module`` in place; return whether anything changed."""
        ...


class OpExpanderPass:
    """XLA's OpExpanderPass: in each computation collect every instruction that :meth:`matches`,
    then :meth:`expand` each through one batched :class:`~pyprecision.hlo.rewrite.Rewrite`
    (collect first, then rewrite). Subclasses are frozen dataclasses with a ``name``."""

    name: ClassVar[str]

    def matches(self, inst: HloInstruction) -> bool:
        """Does ``inst`` need expanding?"""
        raise NotImplementedError(type(self).__name__)

    def candidates(self, comp: HloComputation) -> Iterable[HloInstruction]:
        """The instructions to test, in the order the pass visits them (program order here)."""
        return comp.instructions

    def expand(self, module: HloModule, rw: R.Rewrite, inst: HloInstruction) -> None:
        """Queue the replacement of ``inst`` on ``rw``."""
        raise NotImplementedError(type(self).__name__)

    def run(self, module: HloModule) -> bool:
        """Expand every match, computation by computation; return whether any was found."""
        changed = False
        for comp in module.computations:
            matches = [i for i in self.candidates(comp) if self.matches(i)]
            rw = R.Rewrite(comp)
            for inst in matches:
                self.expand(module, rw, inst)
            rw.commit()
            changed |= bool(matches)
        return changed
