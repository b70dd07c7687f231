"""A cast policy: everything that decides the bits of a cast, as one value that can be varied.

``verify`` emulates a dump under the policy the user names; the diagnosis tries the neighbours of
that policy (other rounding, saturation, NaN encoding, the other fp8 e4 variant, double rounding
through a wider format) and reports the one that reproduces the dump.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pyprecision.errors import CastError
from pyprecision.formats import Format, format
from pyprecision.kernel import decode, encode

__all__ = ["E4_PAIR", "INTERMEDIATES", "CastPolicy"]

#: Formats a double rounding may pass through ("fp32" is numpy's float32, round to nearest even).
INTERMEDIATES = ("fp32", "fp32r", "bf16", "fp16", "fp8e4", "fp8e4m3fn")
#: The two fp8 e4 variants whose codes get mixed up (CAST_SEMANTICS.md §7).
E4_PAIR = {"fp8e4": "fp8e4m3fn", "fp8e4m3fn": "fp8e4"}


@dataclass(frozen=True)
class CastPolicy:
    """One way of turning an input array into the codes of ``format``.

    ``saturate`` is always resolved (None in the constructor means the Neuron default of the
    format, §3). ``via``: round first into this intermediate format with the same rounding and NaN
    policy (its own default saturation), then from its values into ``format``. ``computed_as``: the
    device computed the other fp8 e4 variant and the dump holds *its* codes (the dump's bytes read
    as ``format``, §7). ``seed`` only with stochastic rounding.
    """

    format: str
    rounding: str = "rne"
    saturate: bool | None = None
    nan: str = "ml_dtypes"
    via: str | None = None
    computed_as: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        f = format(self.format)
        object.__setattr__(self, "format", f.name)
        if self.saturate is None:
            object.__setattr__(self, "saturate", f.default_saturate)
        if self.via is not None and self.via != "fp32":
            object.__setattr__(self, "via", format(self.via).name)
        if self.computed_as is not None:
            other = format(self.computed_as).name
            if E4_PAIR.get(f.name) != other:
                raise CastError(f"{f.name} codes can only be confused with {E4_PAIR.get(f.name)}")
            object.__setattr__(self, "computed_as", other)

    @property
    def fmt(self) -> Format:
        """The format the dump is read in."""
        return format(self.format)

    @property
    def encoded_format(self) -> Format:
        """The format whose codes the policy produces (``computed_as`` when set)."""
        return format(self.computed_as or self.format)

    def encode(self, x: Any) -> np.ndarray:
        """The codes this policy produces for ``x`` (same shape, the format's storage dtype)."""
        target = self.encoded_format
        src = np.asarray(x)
        if self.via == "fp32":
            src = src.astype(np.float32)
        elif self.via is not None:
            mid = format(self.via)
            src = decode(encode(src, mid, rounding=self._mid_rounding(), nan=self.nan), mid)
        kwargs: dict[str, Any] = {"rounding": self.rounding, "saturate": self.saturate,
                                  "nan": self.nan}
        if self.rounding == "stochastic":
            kwargs["seed"] = self.seed
        return encode(src, target, **kwargs)

    def _mid_rounding(self) -> str:
        if self.rounding == "stochastic":
            raise CastError("double rounding is only modelled with deterministic rounding")
        return self.rounding

    def changes_from(self, base: CastPolicy) -> list[str]:
        """The settings that differ from ``base``, as ``name=value`` strings."""
        out = []
        for name in ("rounding", "saturate", "nan", "via", "computed_as"):
            mine, theirs = getattr(self, name), getattr(base, name)
            if mine != theirs:
                out.append(f"{name}={_show(mine)}")
        return out

    def describe(self) -> str:
        """A one-line human description, e.g. ``fp8e4 rne saturate nan=ml_dtypes via bf16``."""
        parts = [self.format, self.rounding, "saturate" if self.saturate else "no-saturate",
                 f"nan={self.nan}"]
        if self.via:
            parts.append(f"via {self.via}")
        if self.computed_as:
            parts.append(f"computed as {self.computed_as}")
        if self.rounding == "stochastic" and self.seed is not None:
            parts.append(f"seed={self.seed}")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The policy as a JSON object (every field, ``null`` for unset ones)."""
        return {"format": self.format, "rounding": self.rounding, "saturate": self.saturate,
                "nan": self.nan, "via": self.via, "computed_as": self.computed_as,
                "seed": self.seed}

    def with_(self, **changes: Any) -> CastPolicy:
        """A copy with some fields changed."""
        return replace(self, **changes)


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
