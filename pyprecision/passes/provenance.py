"""The optional provenance hook: which pass, which rule or gate, decided what about which op.

A pass carries ``provenance: list[Decision] | None`` (None by default: nothing is recorded and
nothing is computed). When it is a list, every decision point of the pass — DTypeMutator's gates and
mutateLoad's sub-gates, staticCastLoadTensor, AutoCastFP32's skip rules and rewrites, insertInputCasts,
castTCOperand, shrinkTensor's guards, the cast-elimination rules — appends one :class:`Decision`, in
the order the pass made them. ``pyprecision explain`` reads them (docs/explain.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Decision", "ProvenanceLog", "Verdict", "note", "record", "subject_name"]

#: what a pass appends to
ProvenanceLog = list["Decision"]


@dataclass(frozen=True)
class Verdict:
    """What a chain of gates or guards decided about one object, before anything is changed: the
    ``state`` (``match``/``mutated``/``mismatch`` for DTypeMutator's gates, ``skip`` or ``apply``
    for the other chains), the ``rule`` that decided (``gate 4``, ``skip rule 1``, ``shrinkTensor
    guard 3``; empty for a plain outcome), a short ``reason``, and the ``action`` the pass applies
    (empty when nothing is to be done)."""

    state: str
    rule: str
    reason: str
    action: str = ""

    @property
    def applies(self) -> bool:
        """The pass has something to do (``action`` is set)."""
        return bool(self.action)


@dataclass(frozen=True)
class Decision:
    """One decision: the op/value/tensor ``op`` (its name), the ``pass_name``, the ``rule`` (e.g.
    ``gate 7``, ``skip rule 1``, ``rule 2``; empty for a plain rewrite), a short ``message``, the
    MutateState name for DTypeMutator's gates (``match``/``mutated``/``mismatch``; else empty), and
    the IR object itself (``subject``, not compared) so a caller can map it to its own keys."""

    op: str
    pass_name: str
    rule: str
    message: str
    state: str = ""
    subject: Any = field(default=None, compare=False, repr=False)

    def text(self) -> str:
        """E.g. ``DTypeMutator gate 7: multi-user`` or ``cast-elimination rule 1: identity cast
        removed``."""
        label = "DTypeMutator" if self.pass_name == "dtype-mutator" else self.pass_name
        if self.state == "mutated" and self.rule == "gate 8":
            return f"{label} (all eight gates passed): {self.message}"
        head = f"{label} {self.rule}" if self.rule else label
        return f"{head}: {self.message}"


def subject_name(obj: Any) -> str:
    """``%v`` for an instruction with a result or a value, ``@t`` for a tensor, ``OP @t`` for a
    memory writer, else the type name."""
    result = getattr(obj, "result", None)
    if result is not None and hasattr(result, "name"):
        return f"%{result.name}"
    if hasattr(obj, "owner") and hasattr(obj, "name"):  # a Value
        return f"%{obj.name}"
    if hasattr(obj, "store_insts") and hasattr(obj, "name"):  # a Tensor
        return f"@{obj.name}"
    dst = getattr(obj, "dst", None)
    tensor = getattr(dst, "tensor", None)
    opname = getattr(obj, "opname", type(obj).__name__)
    if tensor is not None and hasattr(tensor, "name"):
        return f"{opname} @{tensor.name}"
    return str(opname)


def record(log: ProvenanceLog | None, subject: Any, pass_name: str, verdict: Verdict) -> None:
    """Append ``verdict`` about ``subject`` when ``log`` is a list (the log is the verdicts)."""
    if log is not None:
        state = verdict.state if verdict.state in ("match", "mutated", "mismatch") else ""
        log.append(Decision(subject_name(subject), pass_name, verdict.rule, verdict.reason, state,
                            subject))


def note(log: ProvenanceLog | None, subject: Any, pass_name: str, rule: str, message: str,
         state: str = "") -> None:
    """Append a decision when ``log`` is a list; do nothing (and build nothing) when it is None."""
    if log is not None:
        log.append(Decision(subject_name(subject), pass_name, rule, message, state, subject))
