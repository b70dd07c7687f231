"""Printer for the HLO model: XLA's canonical text, in the style the module was parsed in.

Verbatim pieces (attribute values, literals, stack-frame tables, separators) print as parsed;
structure (names, shapes, opcodes, operand lists) prints canonically, so XLA's own text comes back
byte for byte and new instructions look like XLA would print them.
"""
from __future__ import annotations

from pyprecision.hlo._gc import paused_gc
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule, TextStyle


def _operand_text(inst: HloInstruction, style: TextStyle) -> str:
    if inst.opcode == "parameter":
        return str(inst.parameter_number)
    if inst.opcode == "constant":
        return inst.literal_text or ""
    pct = "%" if style.percent else ""
    comments = style.index_comments if inst.index_comments is None else inst.index_comments
    parts = []
    for i, op in enumerate(inst.operands):
        prefix = f"/*index={i}*/" if (i and i % 5 == 0 and comments) else ""
        if style.operand_shapes:
            parts.append(f"{prefix}{op.shape.to_text()} {pct}{op.name}")
        else:
            parts.append(f"{prefix}{pct}{op.name}")
    return ", ".join(parts)


def instruction_to_text(inst: HloInstruction, style: TextStyle | None = None) -> str:
    """One instruction line without indentation or newline."""
    st = style or TextStyle()
    pct = "%" if st.percent else ""
    head = "ROOT " if inst.is_root else ""
    text = f"{head}{pct}{inst.name} = {inst.shape.to_text()} {inst.opcode}({_operand_text(inst, st)})"
    if inst.attributes:
        text += "".join(f", {k}={v}" for k, v in inst.attributes)
    return text


def computation_to_text(comp: HloComputation, style: TextStyle | None = None) -> str:
    """A computation from its header line to its closing brace (no trailing newline)."""
    st = style or TextStyle()
    pct = "%" if st.percent else ""
    head = "ENTRY " if comp.is_entry else ""
    sig = ""
    if comp.signature_text:
        current = comp.current_signature()
        sig = comp.signature_text if current == comp.signature_snapshot else current
    lines = [f"{head}{pct}{comp.name}{sig}{comp.header_attributes} {{"]
    lines.extend("  " + instruction_to_text(i, st) for i in comp.instructions)
    lines.append("}" + comp.footer_attributes)
    return "\n".join(lines)


def to_text(module: HloModule) -> str:
    """The whole module as HLO text."""
    with paused_gc():
        return _module_text(module)


def _module_text(module: HloModule) -> str:
    header = f"HloModule {module.name}"
    header += "".join(f", {k}={v}" for k, v in module.attributes)
    out = [header, module.header_end, module.preamble]
    for comp in module.computations:
        out.append(computation_to_text(comp, module.style))
        out.append(comp.separator)
    return "".join(out)
