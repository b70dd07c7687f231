"""The HLO module model: modules, computations, instructions.

Everything a pass may change is structured (opcode, shape, operands, called computations, the
root flag); everything else is kept as the verbatim text it was parsed from (attribute values,
constant literals, the stack-frame tables, computation signatures) so that an unchanged module
prints back byte for byte. See docs/hlo.md for the API the evaluator uses.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from pyprecision.errors import VerifyError
from pyprecision.hlo import attrs as A
from pyprecision.hlo.shape import ProgramShape, Shape

_SUFFIX = re.compile(r"\.(\d+)$")
_TABLE_ROW = re.compile(r"(\d+) (.*)$")
_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


@dataclass
class TextStyle:
    """How a module's text was spelt, so new instructions print the same way."""

    percent: bool = False            # names printed as %name
    operand_shapes: bool = False     # operands printed as "f32[2]{0} %x"
    index_comments: bool = True      # /*index=N*/ before every fifth operand


@dataclass(eq=False)
class HloInstruction:
    """One instruction: ``[ROOT] name = shape opcode(operands), key=value, ...``.

    ``operands`` are the producing instructions (same computation). ``attributes`` are
    (key, verbatim value) pairs in text order. A parameter's number is in ``parameter_number``;
    a constant's literal text (what sits between the parentheses) in ``literal_text``.
    """

    name: str
    opcode: str
    shape: Shape
    operands: list[HloInstruction] = field(default_factory=list)
    attributes: list[tuple[str, str]] = field(default_factory=list)
    parameter_number: int | None = None
    literal_text: str | None = None
    is_root: bool = False
    called_computations: list[HloComputation] = field(default_factory=list)
    index_comments: bool | None = None  # None: follow the module style
    #: (line, column) of the instruction in the text it was parsed from (None when built)
    location: tuple[int, int] | None = field(default=None, repr=False)

    # -- attributes -------------------------------------------------------------------------
    def attr(self, key: str) -> str | None:
        """Verbatim value of attribute ``key`` or None."""
        for k, v in self.attributes:
            if k == key:
                return v
        return None

    def set_attr(self, key: str, value: str) -> None:
        """Replace attribute ``key`` (or append it)."""
        for i, (k, _) in enumerate(self.attributes):
            if k == key:
                self.attributes[i] = (key, value)
                return
        self.attributes.append((key, value))

    def attr_ints(self, key: str) -> list[int] | None:
        """``dimensions={1,0}`` → [1, 0]; a bare integer → [n]; None when absent."""
        v = self.attr(key)
        return None if v is None else A.parse_int_list(v)

    def attr_str(self, key: str) -> str | None:
        """String value of an attribute (quotes removed and escapes decoded)."""
        v = self.attr(key)
        return None if v is None else A.unquote(v)

    @property
    def metadata(self) -> dict[str, str]:
        """OpMetadata fields (string values unquoted)."""
        v = self.attr("metadata")
        return {} if v is None else {k: A.unquote(x) for k, x in A.parse_metadata(v)}

    @property
    def frontend_attributes(self) -> dict[str, str]:
        """The frontend-attribute map (string values unquoted)."""
        v = self.attr("frontend_attributes")
        return {} if v is None else {k: A.unquote(x) for k, x in A.parse_frontend_attributes(v)}

    def called(self, key: str) -> HloComputation | None:
        """The computation named by attribute ``key`` (``to_apply``, ``body``, ``condition``...)."""
        v = self.attr(key)
        if v is None:
            return None
        target = v.lstrip("%")
        for c in self.called_computations:
            if c.name == target:
                return c
        return None

    def literal(self) -> np.ndarray:
        """The constant's values as a NumPy array of the shape's element type. ValueError for
        tuple constants (use :meth:`literal_value`) and ``{...}`` elided ones (see literal.py)."""
        from pyprecision.hlo.literal import literal_to_array

        if self.literal_text is None:
            raise ValueError(f"{self.name} is not a constant")
        return literal_to_array(self.literal_text, self.shape)

    @property
    def elided(self) -> bool:
        """True for a constant whose values XLA elided from the text (``{...}``)."""
        from pyprecision.hlo.literal import is_elided

        return self.literal_text is not None and is_elided(self.literal_text)

    def literal_value(self) -> np.ndarray | tuple:
        """Like :meth:`literal`, and a tuple constant gives a (nested) tuple of arrays."""
        from pyprecision.hlo.literal import literal_to_value

        if self.literal_text is None:
            raise ValueError(f"{self.name} is not a constant")
        return literal_to_value(self.literal_text, self.shape)

    def __repr__(self) -> str:
        return f"<HloInstruction {self.name} = {self.shape} {self.opcode}>"


@dataclass(eq=False)
class HloComputation:
    """A computation: instructions in text order, one of them ROOT.

    ``signature_text`` is the verbatim `` (p: f32[2]) -> f32[2]`` part of the header (old dump
    style) or "" when the header has none; it is regenerated only when the shapes it shows change.
    """

    name: str
    instructions: list[HloInstruction] = field(default_factory=list)
    is_entry: bool = False
    signature_text: str = ""
    signature_snapshot: str = ""
    header_attributes: str = ""  # verbatim ", ..." text before " {"
    footer_attributes: str = ""  # verbatim ", execution_thread=..." text after the closing brace
    separator: str = "\n\n"      # text printed after the closing brace
    #: (line, column) of the computation's header in the parsed text (None when built)
    location: tuple[int, int] | None = field(default=None, repr=False)

    @property
    def root(self) -> HloInstruction:
        """The ROOT instruction (the last one when none is marked)."""
        for inst in self.instructions:
            if inst.is_root:
                return inst
        return self.instructions[-1]

    @property
    def parameters(self) -> list[HloInstruction]:
        """Parameter instructions ordered by parameter number."""
        ps = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(ps, key=lambda i: i.parameter_number or 0)

    def instruction(self, name: str) -> HloInstruction:
        """The instruction called ``name``."""
        for inst in self.instructions:
            if inst.name == name:
                return inst
        raise KeyError(name)

    def users(self, inst: HloInstruction) -> list[HloInstruction]:
        """Instructions of this computation that use ``inst``."""
        return [u for u in self.instructions if any(o is inst for o in u.operands)]

    def post_order(self, roots: Iterable[HloInstruction] | None = None) -> list[HloInstruction]:
        """Instructions in a def-before-use order (ties kept in text order); with ``roots``, only
        those and what they depend on (e.g. ``[comp.root]``: what evaluating the root needs).
        VerifyError on an operand cycle (possible only in a module that skipped the verifier)."""
        seen: set[int] = set()
        visiting: set[int] = set()  # on the current path: meeting one again is a cycle
        order: list[HloInstruction] = []
        for start in self.instructions if roots is None else roots:
            if id(start) in seen:
                continue
            stack: list[tuple[HloInstruction, int]] = [(start, 0)]
            while stack:
                inst, k = stack.pop()
                if k == 0:
                    if id(inst) in seen:
                        continue
                    visiting.add(id(inst))
                if k < len(inst.operands):
                    stack.append((inst, k + 1))
                    op = inst.operands[k]
                    if id(op) in visiting:
                        raise VerifyError(f"{self.name}: {inst.name} is in an operand cycle "
                                          f"through {op.name}")
                    if id(op) not in seen:
                        stack.append((op, 0))
                    continue
                visiting.discard(id(inst))
                if id(inst) not in seen:
                    seen.add(id(inst))
                    order.append(inst)
        return order

    def current_signature(self) -> str:
        """`` (p: f32[2]) -> f32[2]`` for the current shapes (layouts omitted, as XLA prints)."""
        params = [f"{p.name}: {p.shape.to_text(with_layout=False)}" for p in self.parameters]
        parts = []
        for i, p in enumerate(params):
            parts.append((f"/*index={i}*/" if i and i % 5 == 0 else "") + p)
        return f" ({', '.join(parts)}) -> {self.root.shape.to_text(with_layout=False)}"

    def __repr__(self) -> str:
        return f"<HloComputation {self.name} ({len(self.instructions)} instructions)>"


@dataclass(eq=False)
class HloModule:
    """A module: header attributes, optional stack-frame tables, computations in text order."""

    name: str
    attributes: list[tuple[str, str]] = field(default_factory=list)
    computations: list[HloComputation] = field(default_factory=list)
    preamble: str = "\n\n"   # verbatim text between the header line and the first computation
    header_end: str = ""     # verbatim text ending the header line (before its newline)
    style: TextStyle = field(default_factory=TextStyle)
    #: the file name the module was parsed from (error locations name it)
    filename: str = "<string>"
    _next_id: int | None = None

    @property
    def entry(self) -> HloComputation:
        """The ENTRY computation (the last one when none is marked)."""
        for c in self.computations:
            if c.is_entry:
                return c
        return self.computations[-1]

    def computation(self, name: str) -> HloComputation:
        """The computation called ``name``."""
        for c in self.computations:
            if c.name == name:
                return c
        raise KeyError(name)

    def attr(self, key: str) -> str | None:
        """Verbatim value of a module header attribute."""
        for k, v in self.attributes:
            if k == key:
                return v
        return None

    def set_attr(self, key: str, value: str) -> None:
        """Replace (or append) a module header attribute."""
        for i, (k, _) in enumerate(self.attributes):
            if k == key:
                self.attributes[i] = (key, value)
                return
        self.attributes.append((key, value))

    def all_instructions(self) -> Iterator[HloInstruction]:
        """Every instruction of every computation."""
        for c in self.computations:
            yield from c.instructions

    def instruction_count(self) -> int:
        """Total number of instructions."""
        return sum(len(c.instructions) for c in self.computations)

    def entry_computation_layout(self) -> ProgramShape | None:
        """The parsed ``entry_computation_layout`` header attribute, if any."""
        from pyprecision.hlo.shape_text import parse_program_shape

        raw = self.attr("entry_computation_layout")
        return None if raw is None else parse_program_shape(raw)

    def stack_frame_tables(self) -> dict[str, dict[int, str]]:
        """The ``FileNames`` / ``FunctionNames`` / ``FileLocations`` / ``StackFrames`` sections as
        {section: {id: verbatim entry}} (e.g. ``'"f.py"'`` or ``'{file_location_id=1 ...}'``)."""
        tables: dict[str, dict[int, str]] = {}
        current: dict[int, str] | None = None
        for line in self.preamble.splitlines():
            m = _TABLE_ROW.match(line)
            if line.strip() in _SECTIONS:
                current = tables.setdefault(line.strip(), {})
            elif m and current is not None:
                current[int(m.group(1))] = m.group(2)
            elif not line.strip():
                current = None
        return tables

    def fresh_name(self, base: str) -> str:
        """A new instruction name ``base.N`` unused anywhere in the module."""
        if self._next_id is None:
            top = 0
            names = [c.name for c in self.computations]
            names.extend(i.name for i in self.all_instructions())
            for n in names:
                m = _SUFFIX.search(n)
                if m:
                    top = max(top, int(m.group(1)))
            self._next_id = top + 1
        name = f"{base}.{self._next_id}"
        self._next_id += 1
        return name

    def __repr__(self) -> str:
        return f"<HloModule {self.name} ({len(self.computations)} computations)>"
