"""Per-op attribution under the recommendation: both programs run once more with a trace, and each
HLO op is charged the error its own output adds, measured (decision TU4): the rel-l2 of its output
against the same op's under ``--auto-cast none``, less the worst of its operands' errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.emulate import CompiledHlo, run_compiled

__all__ = ["OpShare", "attribute"]


@dataclass(frozen=True)
class OpShare:
    """One HLO op: its path (``fusion.3/dot.1`` inside a fusion), opcode, the dtype it runs in
    under the recommendation, its output's error and the part of it the op adds."""

    path: str
    opcode: str
    dtype: str
    error: float
    added: float

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {"op": self.path, "opcode": self.opcode, "dtype": self.dtype,
                "error": self.error, "added": self.added}  # fmt: skip


def _values(compiled: CompiledHlo, trace: dict[int, np.ndarray]) -> dict[str, tuple[Any, Any]]:
    """HLO path → (the IR instruction that produces the op's value, its traced values)."""
    groups: dict[str, list[Any]] = {}
    for inst in compiled.lowered.function.instructions():
        path = getattr(inst.dl, "path", None)
        if path is not None and getattr(inst.dl, "role", "") != "store" and inst.result is not None:
            groups.setdefault(path, []).append(inst)
    out = {}
    for path, insts in groups.items():
        vals = [i for i in insts if i.dl.role in ("value", "pe-matmul")] or insts
        inst = vals[-1]
        if id(inst) in trace:
            out[path] = (inst, trace[id(inst)])
    return out


def _rel(x: np.ndarray, r: np.ndarray) -> float | None:
    x, r = np.asarray(x, np.float64), np.asarray(r, np.float64)
    if x.shape != r.shape or not (np.all(np.isfinite(x)) and np.all(np.isfinite(r))):
        return None
    den = float(np.linalg.norm(r))
    num = float(np.linalg.norm(x - r))
    return 0.0 if num == 0 else (num / den if den > 0 else None)


def _operand_paths(path: str, inst: Any, by_path: dict[str, Any]) -> list[str]:
    """The paths of the ops whose values ``inst`` reads: a parameter of a called computation
    (``call.2/x``) stands for the caller's operand it binds (followed up through nested calls)."""
    head = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    return [_source(head + op.name, op, by_path) for op in inst.operands]


def _source(path: str, op: Any, by_path: dict[str, Any]) -> str:
    while op.opcode == "parameter" and "/" in path:
        caller_path = path.rsplit("/", 1)[0]
        caller = by_path.get(caller_path)
        n = op.parameter_number
        if caller is None or n is None or n >= len(caller.operands):
            break
        op = caller.operands[n]
        head = caller_path.rsplit("/", 1)[0] + "/" if "/" in caller_path else ""
        path = head + op.name
    return path


def attribute(baseline: CompiledHlo, rec: CompiledHlo, args: list[np.ndarray],
              top: int = 5) -> list[OpShare]:  # fmt: skip
    """The ``top`` float ops that add most error under ``rec``, largest first."""
    tb: dict[int, np.ndarray] = {}
    ta: dict[int, np.ndarray] = {}
    run_compiled(baseline, args, tb)
    run_compiled(rec, args, ta)
    vb, va = _values(baseline, tb), _values(rec, ta)
    errors: dict[str, float] = {}
    by_path = dict(rec.lowered.rows)
    rows = []
    for path, hinst in rec.lowered.rows:
        if path not in va or path not in vb or not va[path][0].dtype.is_float:
            continue
        e = _rel(va[path][1], vb[path][1])
        if e is None:
            continue
        errors[path] = e
        before = max((errors.get(p, 0.0) for p in _operand_paths(path, hinst, by_path)), default=0.0)
        rows.append(OpShare(path, hinst.opcode, va[path][0].dtype.name, e, max(0.0, e - before)))
    rows.sort(key=lambda r: (-r.added, -r.error, r.path))
    return [r for r in rows[:top] if r.added > 0]
