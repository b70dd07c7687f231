"""Source locations of HLO instructions from the module's stack-frame tables (decision X3).

JAX writes ``FileNames`` / ``FunctionNames`` / ``FileLocations`` / ``StackFrames`` tables and gives
each instruction a ``stack_frame_id``: its innermost frame, whose ``parent_frame_id`` is the
caller's frame id plus one (0: none). The location shown for an op is the *user's own frame*: the
innermost frame outside site-packages and the framework whose source line is called from one place
only; a line reached from several callers (an ``mm`` helper, a ``proj`` closure) is a helper, and
its caller is shown instead. The whole stack, innermost first, goes to ``--json``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["FrameTable", "Frame"]

_FRAMEWORK = re.compile(r"(^|/)(site-packages|dist-packages|jax|jaxlib|flax|torch|torch_xla|"
                        r"transformers|haiku|optax|equinox)/|^<frozen |^<string>$|/lib/python3")


@dataclass(frozen=True)
class Frame:
    """One frame: file, line, column, function."""

    file: str
    line: int
    column: int
    function: str

    def text(self) -> str:
        """``file:line (function)``."""
        return f"{self.file}:{self.line}" + (f" ({self.function})" if self.function else "")

    @property
    def site(self) -> tuple[str, int, int]:
        """Where in the source: file, line, column."""
        return (self.file, self.line, self.column)


def _field(entry: str, key: str) -> int:
    m = re.search(rf"\b{key}=(\d+)", entry)
    return int(m.group(1)) if m else 0


class FrameTable:
    """The stack-frame tables of one module."""

    def __init__(self, module: Any):
        t = module.stack_frame_tables()
        files = {k: v.strip().strip('"') for k, v in t.get("FileNames", {}).items()}
        funcs = {k: v.strip().strip('"') for k, v in t.get("FunctionNames", {}).items()}
        locs = {k: Frame(files.get(_field(v, "file_name_id"), ""), _field(v, "line"),
                         _field(v, "column"), funcs.get(_field(v, "function_name_id"), ""))
                for k, v in t.get("FileLocations", {}).items()}
        self.frames: dict[int, Frame] = {}
        self.parent: dict[int, int] = {}
        for k, v in t.get("StackFrames", {}).items():
            self.frames[k] = locs.get(_field(v, "file_location_id"), Frame("", 0, 0, ""))
            parent = _field(v, "parent_frame_id") - 1
            if parent >= 1 and parent != k:
                self.parent[k] = parent
        callers: dict[tuple[str, int, int], set[tuple[tuple[str, int, int], ...]]] = {}
        for k, f in self.frames.items():
            p = self.parent.get(k)
            chain = tuple(c.site for c in self.stack(p)) if p is not None else ()
            callers.setdefault(f.site, set()).add(chain)
        self._helper = {site for site, c in callers.items() if len(c) > 1}

    def stack(self, frame_id: int) -> list[Frame]:
        """Innermost first."""
        out, seen = [], set()
        k: int | None = frame_id
        while k is not None and k in self.frames and k not in seen:
            seen.add(k)
            out.append(self.frames[k])
            k = self.parent.get(k)
        return out

    def user_frame(self, stack: list[Frame]) -> Frame | None:
        """The innermost frame of the user's own code that is not a helper (see the module doc);
        the outermost user frame when every one is a helper; None when there is none."""
        mine = [f for f in stack if f.file and not _FRAMEWORK.search(f.file)]
        for f in mine:
            if f.site not in self._helper:
                return f
        return mine[-1] if mine else None


def instruction_stack(table: FrameTable | None, inst: Any) -> list[Frame]:
    """The stack of ``inst`` (its ``stack_frame_id``), or its ``source_file``/``source_line`` as
    one frame, or nothing."""
    md = inst.metadata
    if table is not None and md.get("stack_frame_id"):
        return table.stack(int(md["stack_frame_id"]))
    if md.get("source_file"):
        return [Frame(md["source_file"], int(md.get("source_line", "0") or 0), 0, "")]
    return []
