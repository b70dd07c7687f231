"""The protocol every HLO pass follows."""
from __future__ import annotations

from typing import ClassVar, Protocol

from pyprecision.hlo.model import HloModule


class HloPass(Protocol):
    """A frozen dataclass with a kebab-case ``name`` and ``run(module) -> bool`` (changed?)."""

    name: ClassVar[str]

    def run(self, module: HloModule) -> bool:
        """Rewrite ``module`` in place; return whether anything changed."""
        ...
