"""The statistics registry (neuronxcc.starfish.penguin.Statistics.register_stats in the seeds).

Counters are CLASS attributes of the pass that owns them (spec 000 §6 NOTE, spec 002 :124/:75/:79),
so they accumulate across every instance; :func:`snapshot` reads them all and
:class:`Statistics` reports what one pipeline run added.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Statistic:
    """One registered counter: ``owner.attr`` with its description string."""

    owner: type
    attr: str
    description: str

    @property
    def key(self) -> str:
        """``ClassName.attr``."""
        return f"{self.owner.__name__}.{self.attr}"

    @property
    def value(self) -> int:
        """The current (cumulative) value of the class attribute."""
        return int(getattr(self.owner, self.attr))


#: every registered statistic, by key, in registration order
STATISTICS: dict[str, Statistic] = {}


def register_stats(owner: type, descriptions: Mapping[str, str]) -> type:
    """Register class-level counters of ``owner`` (each must already be an int class attribute)."""
    for attr, desc in descriptions.items():
        if not isinstance(getattr(owner, attr, None), int):
            raise TypeError(f"{owner.__name__}.{attr} must be an int class attribute")
        stat = Statistic(owner, attr, desc)
        STATISTICS[stat.key] = stat
    return owner


def snapshot() -> dict[str, int]:
    """Current cumulative value of every registered counter."""
    return {key: stat.value for key, stat in STATISTICS.items()}


class Statistics(Mapping[str, int]):
    """What one pipeline run added to each registered counter (every statistic is reported, zero
    or not), plus which passes ran and which changed the module."""

    def __init__(self, before: Mapping[str, int], after: Mapping[str, int],
                 changed: Mapping[str, bool] | None = None) -> None:
        self._values = {k: after[k] - before.get(k, 0) for k in after}
        self.changed: dict[str, bool] = dict(changed or {})

    def __getitem__(self, key: str) -> int:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def description(self, key: str) -> str:
        """The registered description of ``key``."""
        return STATISTICS[key].description

    def to_text(self) -> str:
        """One line per statistic: ``value key  # description``, then one line per pass run."""
        lines = [f"{self[k]:>10} {k}  # {self.description(k)}" for k in self]
        lines += [f"pass {name}: {'changed' if c else 'unchanged'}" for name, c in self.changed.items()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Statistics({self._values!r}, changed={self.changed!r})"
