"""The typed attributes of HLO instructions, one parser each (decision OP2).

The model keeps every attribute's raw text (so unchanged text prints back byte for byte); these
read the ones whose meaning the shape rules, the evaluator and the lowering all need, in one
place: ``slice=``, ``padding=``, ``direction=`` and ``type=`` of a compare. Each parser works on
the raw text and is cached on it, so a value is parsed once however many readers ask; a malformed
value raises ``ValueError`` with one sentence naming the attribute. ``window=``, ``dim_labels=``
and the dot / gather / scatter dimension numbers have their parsers in :mod:`pyprecision.hlo.window`.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["COMPARISON_TYPES", "DIRECTIONS", "comparison", "padding", "padding_of", "slice_of",
           "slices"]

#: XLA's ComparisonDirection spellings
DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
#: XLA's Comparison::Type spellings (``type=`` of compare; absent means the element type's default)
COMPARISON_TYPES = ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED")

_SLICE_DIM = re.compile(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\]")
_INT = re.compile(r"-?\d+")


@lru_cache(maxsize=4096)
def slices(raw: str) -> tuple[tuple[int, int, int], ...]:
    """``{[0:2], [1:5:2]}`` → ((0, 2, 1), (1, 5, 2)): start, limit, stride per dimension."""
    body = raw.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"slice={raw} is not {{[start:limit(:stride)], ...}}")
    items = _SLICE_DIM.findall(body)
    if len(items) != body.count("["):
        raise ValueError(f"slice={raw}: a dimension is not [start:limit(:stride)]")
    return tuple((int(a), int(b), int(c) if c else 1) for a, b, c in items)


def slice_of(inst: Any) -> tuple[tuple[int, int, int], ...]:
    """The ``slice=`` of ``inst`` (ValueError when absent or malformed)."""
    raw = inst.attr("slice")
    if raw is None:
        raise ValueError(f"{inst.opcode} needs a slice= attribute")
    return slices(raw)


@lru_cache(maxsize=4096)
def padding(raw: str) -> tuple[tuple[int, int, int], ...]:
    """``0_0x1_1_0`` → ((0, 0, 0), (1, 1, 0)): low, high, interior per dimension (``""``: rank 0)."""
    text = raw.strip()
    out = []
    for part in text.split("x") if text else []:
        nums = part.split("_")
        if len(nums) not in (2, 3) or not all(_INT.fullmatch(n) for n in nums):
            raise ValueError(f"padding '{part}' is not lo_hi or lo_hi_interior")
        lo, hi, interior = int(nums[0]), int(nums[1]), int(nums[2]) if len(nums) == 3 else 0
        if interior < 0:
            raise ValueError(f"padding '{part}' has a negative interior")
        out.append((lo, hi, interior))
    return tuple(out)


def padding_of(inst: Any) -> tuple[tuple[int, int, int], ...]:
    """The ``padding=`` of a pad (absent: rank 0)."""
    return padding(inst.attr("padding") or "")


def comparison(inst: Any) -> tuple[str, str | None]:
    """``(direction, type)`` of a compare: ``type`` is None when absent (the element type's
    default order: FLOAT for floats, SIGNED / UNSIGNED for integers)."""
    d, t = inst.attr("direction"), inst.attr("type")
    if d not in DIRECTIONS:
        raise ValueError(f"compare needs direction={'|'.join(DIRECTIONS)}, got {d!r}")
    if t is not None and t not in COMPARISON_TYPES:
        raise ValueError(f"compare type={t} is not one of {', '.join(COMPARISON_TYPES)}")
    return d, t
