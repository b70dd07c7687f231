"""The state of one lowering: the IR function being built, HLO value → IR value, names, locations,
and the two located errors: a refusal of a well-formed construct (:meth:`LoweringContext.refuse`,
its reason from a record of ``hlo.opcodes.REFUSALS``, decision OP15) and a malformed module
(:meth:`LoweringContext.error`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision import ir
from pyprecision.errors import LoweringError
from pyprecision.formats import formats
from pyprecision.hlo import HloInstruction, HloModule, PrimitiveType, opcodes, type_name

__all__ = ["HloLoc", "IR_DTYPE_NAMES", "LoweringContext", "LV", "ir_shape"]

#: a lowered HLO value: an IR value, or a tuple of lowered values (HLO tuple shapes)
LV = Any

def _ir_dtype_names() -> dict[str, str]:
    """HLO element type → IR dtype name: the narrow floats from the format table, f32, the
    integers by width, and pred as a 0/1 uint8 (decision L2)."""
    names = {f.hlo_name: f.ir_name for f in formats() if f.hlo_name}
    names["f32"] = "float32"
    names["pred"] = "uint8"
    for bits in (8, 16, 32, 64):
        names[f"s{bits}"], names[f"u{bits}"] = f"int{bits}", f"uint{bits}"
    return names


#: HLO element type name → IR dtype name (the ``element-type`` refusal lists these keys)
IR_DTYPE_NAMES: dict[str, str] = _ir_dtype_names()
_NAME_BAD = re.compile(r"[^A-Za-z0-9_.$]")


def ir_shape(dims: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """HLO dimensions as an IR shape: a rank-0 value is a [1] (decision L3)."""
    return tuple(dims) if dims else (1,)


@dataclass(frozen=True)
class HloLoc:
    """The origin of an IR instruction: the HLO instruction (``path``: ``fusion.3/dot.1`` for a
    fusion body), its opcode, its source location, and the role of the IR instruction in that
    op's lowering (``value``: it produces the HLO value; ``pe-transpose``; ``pe-matmul``;
    ``aux``)."""

    path: str
    opcode: str
    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    role: str = "value"
    hlo_line: int = 0

    @property
    def source(self) -> str:
        """``file:line`` of the model's source, or the op_name, or empty."""
        if self.source_file:
            return f"{self.source_file}:{self.source_line}" if self.source_line else self.source_file
        return self.op_name

    def with_role(self, role: str) -> HloLoc:
        """The same origin with another role."""
        return HloLoc(self.path, self.opcode, self.op_name, self.source_file, self.source_line,
                      role, self.hlo_line)  # fmt: skip

    def __str__(self) -> str:
        return self.path


@dataclass
class LoweringContext:
    """One lowering in progress."""

    module: HloModule
    function: ir.Function
    filename: str = "<hlo>"
    text: str | None = None
    values: dict[int, LV] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rows: list[tuple[str, HloInstruction]] = field(default_factory=list)
    _block: ir.Block | None = None
    _frames: dict[int, tuple[str, int]] | None = None
    _identities: dict[tuple[int, str], ir.Tensor] = field(default_factory=dict)
    statics: dict[int, np.ndarray] = field(default_factory=dict)
    path: str = ""
    loc: HloLoc | None = None
    config: Any = None

    # -- building ----------------------------------------------------------------------------------
    @property
    def block(self) -> ir.Block:
        """The one block everything is appended to."""
        if self._block is None:
            self._block = self.function.add_block("bb0")
        return self._block

    def name(self, base: str) -> str:
        """A fresh IR value name from ``base`` (HLO names sanitised)."""
        return self.function.unique_name(_NAME_BAD.sub("_", base) or "v")

    def tensor_name(self, base: str) -> str:
        """A fresh tensor name from ``base``."""
        return self.function.unique_tensor_name(_NAME_BAD.sub("_", base) or "t")

    def emit(self, inst: ir.Instruction, role: str = "value") -> ir.Instruction:
        """Append ``inst`` and tag it with the current HLO origin."""
        self.block.append(inst)
        if self.loc is not None:
            inst.update_debug_loc(self.loc if role == "value" else self.loc.with_role(role))
        return inst

    def value(self, base: str, dtype: ir.DType, shape: tuple[int, ...]) -> ir.Value:
        """A fresh result value."""
        return ir.Value(self.name(base), dtype, ir_shape(shape))

    def identity(self, n: int, dtype: ir.DType) -> ir.Value:
        """A fresh ``sb_atom_load`` of the const n×n identity (the moving operand of a
        matmult-based transpose): one tensor per size and dtype, one load per transpose, so that
        each transpose's operands are cast on their own (decision L4)."""
        key = (n, dtype.name)
        if key not in self._identities:
            eye = np.eye(n, dtype=dtype.np_dtype)
            eye.flags.writeable = False  # never written: the passes' identity test remembers it
            t = ir.Tensor(self.tensor_name(f"ident{n}"), (n, n), dtype, "const", eye)
            self.function.add_tensor(t)
            self._identities[key] = t
        v = ir.Value(self.name(f"ident{n}"), dtype, (n, n))
        self.emit(ir.SBAtomLoad(self._identities[key], v), role="aux")
        return v

    # -- HLO values ----------------------------------------------------------------------------------
    def get(self, inst: HloInstruction) -> LV:
        """The lowered value of an already lowered HLO instruction."""
        return self.values[id(inst)]

    def array(self, inst: HloInstruction) -> ir.Value:
        """The lowered value of an array-shaped HLO instruction."""
        v = self.values[id(inst)]
        if not isinstance(v, ir.Value):
            raise self.error(inst, f"operand {inst.name} is not an array value")
        return v

    # -- locations and errors -----------------------------------------------------------------------
    def hlo_line(self, inst: HloInstruction) -> int:
        """The 1-based line of ``inst``'s definition in the module text (the parser records it;
        0 for an instruction an HLO pass made)."""
        return inst.location[0] if inst.location is not None else 0

    def location(self, inst: HloInstruction, path: str) -> HloLoc:
        """The origin record of ``inst`` (metadata's op_name and source, or its stack frame)."""
        md = inst.metadata
        src, line = md.get("source_file", ""), int(md.get("source_line", "0") or 0)
        if not src and md.get("stack_frame_id"):
            src, line = self._frame(int(md["stack_frame_id"]))
        return HloLoc(path, inst.opcode, md.get("op_name", ""), src, line, "value",
                      self.hlo_line(inst))  # fmt: skip

    def _frame(self, frame_id: int) -> tuple[str, int]:
        if self._frames is None:
            self._frames = _stack_frames(self.module)
        return self._frames.get(frame_id, ("", 0))

    def error(self, inst: HloInstruction, message: str, refusal: str | None = None) -> LoweringError:
        """A LoweringError located at ``inst``'s line in the module text: a malformed module (a
        refusal goes through :meth:`refuse`)."""
        line = self.hlo_line(inst)
        if line:
            col = inst.location[1] if inst.location is not None else 1
            return LoweringError(
                f"{self.filename}:{line}:{col}: {inst.name} ({inst.opcode}): {message}", refusal
            )
        return LoweringError(
            f"{self.filename}: {inst.name} ({inst.opcode}, made by an HLO pass): {message}",
            refusal,
        )

    def refuse(self, inst: HloInstruction, key: str, detail: str = "") -> LoweringError:
        """The located LoweringError of refusal record ``key`` at ``inst`` (decision OP15):
        ``file:line:col: NAME (OPCODE): DETAIL REASON``, DETAIL naming the construct (default:
        the opcode), REASON the record's; ``.refusal`` is ``key``. KeyError for a key no record
        has (the coverage test keeps every raise site on a record)."""
        return self.error(inst, f"{detail or inst.opcode} {opcodes.refusal(key).reason}", key)

    def ir_dtype(self, inst: HloInstruction, t: PrimitiveType, what: str = "") -> ir.DType:
        """The IR dtype of element type ``t`` of ``inst`` (``what``: which of its values, for a
        tuple); the ``element-type`` refusal for a type the loop IR has not (f64, complex,
        sub-byte, the fnuz fp8s)."""
        name = type_name(t)
        if name not in IR_DTYPE_NAMES:
            raise self.refuse(inst, "element-type", f"{what}element type {name}")
        return ir.as_dtype(IR_DTYPE_NAMES[name])


def _stack_frames(module: HloModule) -> dict[int, tuple[str, int]]:
    """stack_frame_id → (file, line) from the module's FileNames/FileLocations/StackFrames tables."""
    t = module.stack_frame_tables()
    files = {k: v.strip().strip('"') for k, v in t.get("FileNames", {}).items()}

    def field_of(entry: str, key: str) -> int:
        m = re.search(rf"{key}=(\d+)", entry)
        return int(m.group(1)) if m else 0

    locs = {
        k: (files.get(field_of(v, "file_name_id"), ""), field_of(v, "line"))
        for k, v in t.get("FileLocations", {}).items()
    }
    return {
        k: locs.get(field_of(v, "file_location_id"), ("", 0))
        for k, v in t.get("StackFrames", {}).items()
    }
