"""The IR rewriter: every structural change a pass makes — insert, rewire uses, erase — goes through
one :class:`Rewriter` (XLA's and MLIR's rewriter discipline).

A pass creates a rewriter per function run, collects its matches, and applies them with these
methods. The rewriter remembers what it placed (:meth:`Rewriter.created`), so a pass walking a
snapshot of the instructions skips the ops it built itself, and it counts its edits
(:attr:`Rewriter.edits`) so "did anything change" is a fact, not a flag each pass keeps.

Built on the instruction and value API of :mod:`pyprecision.ir` (``insert_before``/``insert_after``,
``Block.push_front``, ``replace_all_uses_with_except``, ``replace_use_of_with``, ``set_operand``,
``erase_from_parent``, ``allocate_id``, ``update_debug_loc``).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyprecision.ir.instructions import Instruction
from pyprecision.ir.values import Value

__all__ = ["Rewriter"]

#: ``dl=`` default: leave the new instruction's debug location alone
_KEEP: Any = object()


class Rewriter:
    """Inserts, rewires and erases instructions of one function run, and remembers what it built."""

    def __init__(self) -> None:
        self._created: set[int] = set()
        self.edits = 0

    # -- what this rewriter did ------------------------------------------------------------------
    def created(self, inst: Instruction) -> bool:
        """Was ``inst`` placed by this rewriter?"""
        return id(inst) in self._created

    def _placed(self, inst: Instruction, dl: Any) -> Instruction:
        inst.allocate_id()
        if dl is not _KEEP:
            inst.update_debug_loc(dl)
        self._created.add(id(inst))
        self.edits += 1
        return inst

    # -- insertion --------------------------------------------------------------------------------
    def insert_before(self, inst: Instruction, anchor: Instruction, dl: Any = _KEEP) -> Instruction:
        """Place the detached ``inst`` just before ``anchor``; give it a fresh id (and ``dl``)."""
        inst.insert_before(anchor)
        return self._placed(inst, dl)

    def insert_after(self, inst: Instruction, anchor: Instruction, dl: Any = _KEEP) -> Instruction:
        """Place the detached ``inst`` just after ``anchor``; give it a fresh id (and ``dl``)."""
        inst.insert_after(anchor)
        return self._placed(inst, dl)

    def insert_after_definition(self, inst: Instruction, value: Value,
                                dl: Any = _KEEP) -> Instruction:
        """Place ``inst`` right after the instruction defining ``value``."""
        if value.owner is None or value.owner.parent is None:
            raise ValueError("cast_to: no insertion point and the value has no placed definition")
        return self.insert_after(inst, value.owner, dl)

    def insert_at_front(self, block: Any, insts: Iterable[Instruction], dl: Any = _KEEP) -> None:
        """Place ``insts`` (in order) at the front of ``block``."""
        anchor: Instruction | None = None
        placed = []
        for inst in insts:
            if anchor is None:
                block.push_front(inst)
            else:
                inst.insert_after(anchor)
            anchor = inst
            placed.append(inst)
        for inst in placed:
            self._placed(inst, dl)

    def insert_all_before(self, insts: Iterable[Instruction], anchor: Instruction,
                          dl: Any = _KEEP) -> None:
        """Place ``insts`` (in order) just before ``anchor``."""
        placed = list(insts)
        for inst in placed:
            inst.insert_before(anchor)
        for inst in placed:
            self._placed(inst, dl)

    # -- rewiring ---------------------------------------------------------------------------------
    def replace_all_uses(self, old: Any, new: Any, except_: Any = None) -> int:
        """Every use of ``old`` (a value, or an instruction meaning its result) reads ``new``,
        except in ``except_`` (an instruction or a collection: spec 000 §2 GOTCHA)."""
        value = old if isinstance(old, Value) else old.result
        assert value is not None, "replace_all_uses: the instruction has no result"
        n = value.replace_all_uses_with_except(new, except_)
        self.edits += n
        return n

    def replace_uses_in(self, user: Instruction, old: Any, new: Any) -> int:
        """Every operand slot of ``user`` reading ``old`` reads ``new`` (replaceUseOfWith)."""
        n = user.replace_use_of_with(old, new)
        self.edits += n
        return n

    def set_operand(self, user: Instruction, index: int, new: Any) -> None:
        """Operand ``index`` of ``user`` becomes ``new``."""
        user.set_operand(index, new)
        self.edits += 1

    # -- removal ----------------------------------------------------------------------------------
    def erase(self, inst: Instruction) -> None:
        """Unlink ``inst`` and drop its references; its result must have no uses left."""
        inst.erase_from_parent()
        self.edits += 1

    def replace_and_erase(self, inst: Instruction, new: Any) -> None:
        """Every use of ``inst``'s result reads ``new``; then ``inst`` is erased."""
        self.replace_all_uses(inst, new)
        self.erase(inst)
