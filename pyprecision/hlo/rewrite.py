"""The HLO rewriter: every mutation a pass makes goes through these few functions.

Passes collect their matches first, then rewrite (XLA's OpExpanderPass discipline). New
instructions get fresh ``opcode.N`` names and are placed just before the instruction they replace,
so the printed order stays def-before-use.
"""
from __future__ import annotations

from pyprecision.hlo import attrs as A
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule
from pyprecision.hlo.shape import Shape


def make(module: HloModule, opcode: str, shape: Shape, operands: list[HloInstruction],
         attributes: list[tuple[str, str]] | None = None) -> HloInstruction:
    """A new instruction (not yet placed) with a fresh name based on its opcode."""
    return HloInstruction(module.fresh_name(opcode), opcode, shape, list(operands),
                          list(attributes or []))


def make_convert(module: HloModule, shape: Shape, operand: HloInstruction) -> HloInstruction:
    """XLA's HloInstruction::CreateConvert(shape, operand)."""
    return make(module, "convert", shape, [operand])


def insert_before(comp: HloComputation, anchor: HloInstruction,
                  new: list[HloInstruction]) -> None:
    """Place ``new`` (in order) just before ``anchor`` in ``comp``."""
    at = next(i for i, x in enumerate(comp.instructions) if x is anchor)
    comp.instructions[at:at] = new


def replace_all_uses(comp: HloComputation, old: HloInstruction, new: HloInstruction) -> None:
    """Every use of ``old`` in ``comp`` now reads ``new``; ROOT moves to ``new`` if ``old`` was ROOT."""
    for user in comp.instructions:
        if user is new:
            continue
        if any(o is old for o in user.operands):
            user.operands = [new if o is old else o for o in user.operands]
    if old.is_root:
        old.is_root = False
        new.is_root = True


def remove(comp: HloComputation, inst: HloInstruction) -> None:
    """Delete ``inst`` from ``comp`` (it must have no users left)."""
    comp.instructions = [x for x in comp.instructions if x is not inst]


def replace_instruction(comp: HloComputation, old: HloInstruction, new: HloInstruction) -> None:
    """XLA's HloComputation::ReplaceInstruction: ``new`` inherits ``old``'s metadata, frontend
    attributes and sharding when it has none of its own, takes over every use, and ``old`` goes."""
    for key in ("metadata", "frontend_attributes", "sharding"):
        value = old.attr(key)
        if value is not None and new.attr(key) is None:
            _insert_canonical(new, key, value)
    replace_all_uses(comp, old, new)
    remove(comp, old)


#: Where XLA prints the common attributes, after the opcode-specific ones.
_COMMON_ORDER = ("sharding", "frontend_attributes", "metadata", "backend_config")


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
