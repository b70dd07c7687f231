"""The compiler's HLO → loop-IR step (the tensorizer's front): lower a user's HLO module — after the
HLO passes neuronx-cc runs — into the loop IR, so that AutoCastFP32, DTypeMutator and cast elimination
run on real models.

    >>> from pyprecision import hlo, lower
    >>> lowered = lower.lower(hlo.parse(text), filename="mlp.hlo.txt", text=text)
    >>> lowered.module        # an ir.Module: input/output tensors, loads, matmuls, stores

A room above ``hlo`` and ``ir``; neither imports it. Decisions: docs/decisions/lower.md.
"""

from __future__ import annotations

from pyprecision.lower.context import HloLoc
from pyprecision.lower.lowering import MAX_UNROLL, Lowered, lower, lowering_key, supported_opcodes

__all__ = ["MAX_UNROLL", "HloLoc", "Lowered", "lower", "lowering_key", "supported_opcodes"]
