"""The HLO rewriter: every mutation a pass makes goes through here.

Passes collect their matches first, then rewrite (XLA's OpExpanderPass discipline). A
:class:`Rewrite` batches the edits of one computation — insertions before an anchor and
replacements of an old instruction by a new one — and applies them in a single linear sweep, so a
pass over a module with many matches stays O(instructions). New instructions get fresh ``opcode.N``
names and are placed just before the instruction they replace (def-before-use order is kept).
"""
from __future__ import annotations

from pyprecision.hlo import attrs as A
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule
from pyprecision.hlo.shape import Shape

#: Where XLA prints the common attributes, after the opcode-specific ones.
_COMMON_ORDER = ("sharding", "frontend_attributes", "metadata", "backend_config")


def make(module: HloModule, opcode: str, shape: Shape, operands: list[HloInstruction],
         attributes: list[tuple[str, str]] | None = None) -> HloInstruction:
    """A new instruction (not yet placed) with a fresh name based on its opcode."""
    return HloInstruction(module.fresh_name(opcode), opcode, shape, list(operands),
                          list(attributes or []))


def make_convert(module: HloModule, shape: Shape, operand: HloInstruction) -> HloInstruction:
    """XLA's HloInstruction::CreateConvert(shape, operand)."""
    return make(module, "convert", shape, [operand])


class Rewrite:
    """Batched edits of one computation; nothing changes until :meth:`commit`."""

    def __init__(self, comp: HloComputation):
        self.comp = comp
        self._before: dict[int, list[HloInstruction]] = {}
        self._replaced: dict[int, HloInstruction] = {}

    def insert_before(self, anchor: HloInstruction, new: list[HloInstruction]) -> None:
        """Place ``new`` (in order) just before ``anchor``."""
        self._before.setdefault(id(anchor), []).extend(new)

    def replace_all_uses(self, old: HloInstruction, new: HloInstruction) -> None:
        """XLA's ReplaceAllUsesWith + RemoveInstruction: every use of ``old`` reads ``new``, ROOT
        moves to ``new``, and ``old`` is deleted; nothing is copied."""
        self._replaced[id(old)] = new

    def replace_instruction(self, old: HloInstruction, new: HloInstruction) -> None:
        """XLA's HloComputation::ReplaceInstruction: like :meth:`replace_all_uses`, and ``new``
        inherits ``old``'s metadata, frontend attributes and sharding when it has none."""
        for key in ("metadata", "frontend_attributes", "sharding"):
            value = old.attr(key)
            if value is not None and new.attr(key) is None:
                _insert_canonical(new, key, value)
        self.replace_all_uses(old, new)

    def commit(self) -> None:
        """Apply every edit in one sweep over the computation."""
        if not self._before and not self._replaced:
            return
        out: list[HloInstruction] = []
        for inst in self.comp.instructions:
            out.extend(self._before.get(id(inst), ()))
            if id(inst) in self._replaced:
                if inst.is_root:
                    inst.is_root = False
                    self._final(inst).is_root = True
                continue
            out.append(inst)
        if self._replaced:
            for inst in out:
                if any(id(o) in self._replaced for o in inst.operands):
                    inst.operands = [self._final(o) for o in inst.operands]
        self.comp.instructions = out
        self._before.clear()
        self._replaced.clear()

    def _final(self, inst: HloInstruction) -> HloInstruction:
        while id(inst) in self._replaced:
            inst = self._replaced[id(inst)]
        return inst


def _insert_canonical(inst: HloInstruction, key: str, value: str) -> None:
    rank = _COMMON_ORDER.index(key)
    for i, (k, _) in enumerate(inst.attributes):
        if k in _COMMON_ORDER and _COMMON_ORDER.index(k) > rank:
            inst.attributes.insert(i, (key, value))
            return
    inst.attributes.append((key, value))


def metadata_with_note(source: HloInstruction, note: str) -> str:
    """``source``'s OpMetadata with ``note`` appended to its op_name (docs/decisions/hlo.md)."""
    raw = source.attr("metadata")
    items = A.parse_metadata(raw) if raw is not None else []
    op_name = next((A.unquote(v) for k, v in items if k == "op_name"), "")
    return A.format_metadata(A.metadata_set_string(items, "op_name", op_name + note))
