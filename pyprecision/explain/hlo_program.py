"""``explain`` of an HLO module through the whole pipeline: one row per HLO instruction (fusion bodies
inline as ``fusion.3/dot.1``) with its source location, the dtype it runs in before and after the
precision passes, for dot and convolution rows the two dtypes the PE reads, and the deciding pass
and rule; with inputs, each op's error against an all-fp32 run of the same lowering."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision import hlo, ir
from pyprecision.emulate import compile_hlo, run_compiled
from pyprecision.explain.core import Explanation
from pyprecision.explain.frames import FrameTable, instruction_stack
from pyprecision.explain.numerics import OpError, output_error
from pyprecision.explain.provenance import OpRow
from pyprecision.explain.reach import reach_masks
from pyprecision.frontend import parse_flags
from pyprecision.passes import pipeline_pass_names

__all__ = ["HloRow", "explain_hlo_program"]

_PE_OPS = hlo.opcodes.names_with(pe=True)


@dataclass
class HloRow(OpRow):
    """An explanation row of one HLO instruction."""

    location: str = ""
    operand_dtypes: tuple[str, str] | None = None
    operand_dtypes_before: tuple[str, str] | None = None
    stack: list[str] = field(default_factory=list)
    why: str = ""

    @property
    def plain(self) -> str:
        """The reason in the user's words (X4); the passes' own texts are under --verbose."""
        return self.why or self.decided_by


@dataclass
class HloExplanation(Explanation):
    """An Explanation whose rows carry locations and PE operand dtypes."""

    hlo_rows: list[HloRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """As Explanation.to_json, each row with ``location`` and (dot/convolution)
        ``operand_dtypes``."""
        doc = super().to_json()
        by_key = {r.key: r for r in self.hlo_rows}
        for row in doc["rows"]:
            r = by_key[row["name"]]
            row["location"] = r.location
            row["stack"] = list(r.stack)
            row["why"] = r.plain
            if r.operand_dtypes is not None:
                row["operand_dtypes"] = list(r.operand_dtypes)
                row["operand_dtypes_before"] = list(r.operand_dtypes_before or ())
        return doc


def explain_hlo_program(
    module_path: str,
    flags: list[str],
    target: str | None = None,
    inputs: dict[str, np.ndarray] | None = None,
    hlo_passes: list[str] | None = None,
) -> HloExplanation:
    """Explain ``module_path`` under the precision ``flags`` on ``target`` (gen2 default);
    ``inputs`` (arrays keyed arg<n>/in<n>/parameter name) add per-op errors, worst first."""
    from pyprecision.emulate import DEFAULT_HLO_PASSES
    from pyprecision.verify import hlo_arguments, read_module_text

    text = read_module_text(module_path)[0]  # any form: text, .hlo.pb, gzip, StableHLO
    module = hlo.parse(text, filename=module_path)
    config = parse_flags(flags)
    tgt = target or "gen2"
    passes = DEFAULT_HLO_PASSES if hlo_passes is None else tuple(hlo_passes)
    log: list[Any] = []
    kw: dict[str, Any] = {"hlo_passes": passes, "filename": module_path, "text": text}
    before = compile_hlo(module, None, tgt, **kw)
    after = compile_hlo(module, config, tgt, provenance=log, **kw)
    rows = _rows(before, after, log, module_path, config.fp32_cast_mode)
    result = HloExplanation(module_path, list(flags), tgt, config.fp32_cast_mode,
                            pipeline_pass_names(config), list(rows), hlo_rows=rows)  # fmt: skip
    result.notes.extend(after.lowered.notes)
    if inputs is not None:
        args = hlo_arguments(before.hlo_module, inputs)
        ta: dict[int, np.ndarray] = {}
        tb: dict[int, np.ndarray] = {}
        run_compiled(after, args, ta)
        run_compiled(before, args, tb)
        masks = reach_masks(before.hlo_module, _values(before, tb))
        result.errors = _errors(before, after, tb, ta, masks)
    return result


def _groups(fn: ir.Function) -> dict[str, list[ir.Instruction]]:
    out: dict[str, list[ir.Instruction]] = {}
    for inst in fn.instructions():
        path = getattr(inst.dl, "path", None)
        if path is not None and getattr(inst.dl, "role", "") != "store":
            out.setdefault(path, []).append(inst)
    return out


def _value_inst(group: list[ir.Instruction]) -> ir.Instruction | None:
    vals = [i for i in group if i.result is not None and i.dl.role in ("value", "pe-matmul")]
    return vals[-1] if vals else next((i for i in reversed(group) if i.result is not None), None)


def _pe_dtypes(group: list[ir.Instruction]) -> tuple[str, str] | None:
    mm = next((i for i in group if i.dl.role == "pe-matmul"), None)
    if mm is None:
        return None
    s, m = mm.operands
    return (s.dtype.name, m.dtype.name)


def _dtype(inst: ir.Instruction | None) -> str:
    return "-" if inst is None or inst.dtype is None else inst.dtype.name


def _subject_path(subject: Any) -> str | None:
    for obj in (subject, getattr(subject, "owner", None)):
        path = getattr(getattr(obj, "dl", None), "path", None)
        if path is not None:
            return str(path)
    for attr in ("load_insts", "store_insts"):  # a tensor: the op that reads or writes it
        for inst in getattr(subject, attr, None) or ():
            path = getattr(inst.dl, "path", None)
            if path is not None:
                return str(path)
    return None


def _values(compiled: Any, values: dict[int, np.ndarray]) -> Any:
    """Row path → that instruction's values in the run ``values`` came from, or None."""
    groups = _groups(compiled.lowered.function)

    def get(path: str) -> np.ndarray | None:
        inst = _value_inst(groups.get(path, []))
        return None if inst is None or id(inst) not in values else np.asarray(values[id(inst)])
    return get


def _plain_reason(row: HloRow, mode: str) -> str:
    """Why the op runs in its dtype, in the words of the flags the user typed (X4)."""
    if row.operand_dtypes is not None:
        a, b = row.operand_dtypes
        if row.operand_dtypes != row.operand_dtypes_before:
            was = " × ".join(row.operand_dtypes_before or ())
            return f"operands cast to {a} × {b} (were {was}); the sum stays {row.after}"
        return f"operands read as written ({a} × {b})"
    if row.before != row.after and "-" not in (row.before, row.after):
        if mode.startswith("matmult") and any("absorbed" in d.text() for d in row.decisions):
            return (f"runs in {row.after} instead of {row.before}: it feeds a matmul operand "
                    f"cast to {row.after}, and the cast was folded into it")
        return f"runs in {row.after} instead of {row.before} (--auto-cast {mode.split('-')[0]})"
    if not row.decisions:
        return "not changed by the passes"
    if mode.startswith("matmult"):
        return "unchanged: --auto-cast matmult casts only matmul operands"
    return "unchanged"


def _rows(before: Any, after: Any, log: list[Any], filename: str, mode: str) -> list[HloRow]:
    gb, ga = _groups(before.lowered.function), _groups(after.lowered.function)
    decided: dict[str, list[Any]] = {}
    for d in log:
        path = _subject_path(d.subject)
        if path is not None:
            decided.setdefault(path, []).append(d)
    rows = []
    frames = FrameTable(before.hlo_module)
    stacks: dict[str, list[Any]] = {}
    for path, inst in before.lowered.rows:
        b, a = gb.get(path, []), ga.get(path, [])
        loc = b[0].dl if b else None
        stack = instruction_stack(frames, inst)
        if not stack and "/" in path:  # a callee's body: where it was called from
            stack = stacks.get(path.rsplit("/", 1)[0], [])
        stacks[path] = stack
        user = frames.user_frame(stack) if frames is not None else None
        where = user.text() if user is not None else (
            loc.source if loc is not None and loc.source else (
                f"{filename}:{loc.hlo_line}" if loc is not None and loc.hlo_line else ""))
        row = HloRow(path, inst.opcode, _dtype(_value_inst(b)), _dtype(_value_inst(a)),
                     location=where, stack=[f.text() for f in stack])  # fmt: skip
        if inst.opcode in _PE_OPS:
            row.operand_dtypes, row.operand_dtypes_before = _pe_dtypes(a), _pe_dtypes(b)
        row.decisions = decided.get(path, [])
        row.reasons = _counted([d.text() for d in row.decisions]) or (
            ["no IR instructions (a tuple or a pass-through)"] if not b else ["unchanged"])
        row.why = _plain_reason(row, mode)
        rows.append(row)
    return rows


def _counted(texts: list[str]) -> list[str]:
    """Each distinct reason once, in first-seen order, with ``(×n)`` when it repeats (one HLO op
    lowers to several IR instructions)."""
    counts: dict[str, int] = {}
    for t in texts:
        counts[t] = counts.get(t, 0) + 1
    return [t if n == 1 else f"{t} (×{n})" for t, n in counts.items()]


def _errors(before: Any, after: Any, tb: dict[int, np.ndarray], ta: dict[int, np.ndarray],
            masks: dict[str, np.ndarray]) -> dict[str, OpError]:  # fmt: skip
    """Each row's error over the elements that reach an output (X1), on its fp32 scale (X2)."""
    gb, ga = _groups(before.lowered.function), _groups(after.lowered.function)
    out = {}
    for path, group in ga.items():
        ia, ib = _value_inst(group), _value_inst(gb.get(path, []))
        if ia is None or ib is None or id(ia) not in ta or id(ib) not in tb:
            continue
        dt = ia.dtype
        x, r = np.asarray(ta[id(ia)]), np.asarray(tb[id(ib)])
        if x.shape != r.shape or dt is None:
            continue
        mask = masks.get(path)
        if mask is not None and mask.shape != x.shape:
            mask = None if mask.any() else np.zeros(x.shape, dtype=bool)
        if dt.is_float:
            out[path] = output_error(x.astype(np.float64), r.astype(np.float64), dt, mask)
        else:
            out[path] = output_error(x.astype(np.int64), r.astype(np.int64), dt, mask)
    return out
