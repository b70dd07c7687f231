"""The explanation as a table (one or two flag sets side by side) and as JSON."""
from __future__ import annotations

from typing import Any

from pyprecision.explain.core import Explanation

__all__ = ["comparison_json", "comparison_lines", "explanation_lines", "select_rows"]


def _g(v: float) -> str:
    return f"{v:.3g}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _err_cells(e: Any) -> list[str]:
    if e is None:
        return ["-", "-", "-", "-"]
    if e.reached == 0:
        return ["-", "-", "-", "(reaches no output)"]
    ulp = str(e.max_ulp) + (f" (+{e.nonfinite} non-finite)" if e.nonfinite else "")
    return [_g(e.scaled), _g(e.max_abs), _g(e.max_rel), ulp]


def select_rows(ex: Explanation, top: int | None = None, sort: str = "error",
                op: str | None = None) -> list[Any]:
    """The rows ``explain`` prints: sorted by ``sort``, only kind ``op`` (HLO opcode or IR op,
    e.g. ``dot``), the first ``top``."""
    rows = ex.sorted_rows(sort)
    if op is not None:
        rows = [r for r in rows if r.op == op]
    return rows if top is None else rows[:top]


def explanation_lines(ex: Explanation, top: int | None = None, sort: str = "error",
                      op: str | None = None, verbose: bool = False) -> list[str]:
    """Header, then one row per op: name, kind, location and PE operand dtypes (HLO), dtype
    before → after, errors, and why (the passes' own texts with ``verbose``)."""
    head = f"explain: {ex.program}"
    if ex.mode != "hlo":
        head += f" [{' '.join(ex.flags) or '--auto-cast none'}] target {ex.target}, mode {ex.mode}"
    out = [head, f"passes: {', '.join(ex.passes) or '-'}"]
    with_err = ex.errors is not None
    hlo_rows = hasattr(ex, "hlo_rows")
    header = ["op", "kind"] + (["location", "operands"] if hlo_rows else []) + ["before", "after"]
    if with_err:
        header += ["scaled", "max abs", "max rel", "ULPs"]
    rows = [header + ["why" if hlo_rows else "decided by"]]
    for r in select_rows(ex, top, sort, op):
        cells = [r.key, r.op]
        if hlo_rows:
            pe = getattr(r, "operand_dtypes", None)
            cells += [getattr(r, "location", "") or "-", " × ".join(pe) if pe else "-"]
        cells += [r.before, r.after]
        if with_err:
            cells += _err_cells(ex.error(r.key))
        why = r.decided_by if verbose or not hasattr(r, "plain") else r.plain
        rows.append(cells + [why + (" (derived)" if r.derived else "")])
    out += _table(rows)
    if with_err:
        out.append("errors: each op's output after the passes against an all-fp32 run on the same "
                   "inputs, over the elements that reach an output; scaled = max abs error / "
                   "the tensor's max |fp32 value|; ULPs in the output's dtype; "
                   + ("in program order" if sort == "order" else f"sorted by {sort}, worst first"))
    out += [f"note: {n}" for n in ex.notes]
    return out


def comparison_lines(a: Explanation, b: Explanation, label_a: str, label_b: str) -> list[str]:
    """The two explanations side by side: dtype and error under A and under B, then why."""
    out = [f"explain: {a.program}", f"A: {label_a} (mode {a.mode}; passes: {', '.join(a.passes) or '-'})",
           f"B: {label_b} (mode {b.mode}; passes: {', '.join(b.passes) or '-'})"]
    with_err = a.errors is not None and b.errors is not None
    ra = {r.key: r for r in a.rows}
    rb = {r.key: r for r in b.rows}
    keys = list(ra) + [k for k in rb if k not in ra]
    if with_err:
        def worst(k: str) -> float:
            return max((e.scaled for e in (a.error(k), b.error(k)) if e is not None), default=-1.0)
        keys.sort(key=lambda k: -worst(k))
    header = ["op", "kind", "before", "A after", "B after"]
    if with_err:
        header += ["A scaled", "A ULPs", "B scaled", "B ULPs"]
    rows = [header]
    for k in keys:
        r1, r2 = ra.get(k), rb.get(k)
        ref = r1 or r2
        assert ref is not None
        cells = [k, ref.op, ref.before, r1.after if r1 else "(absent)", r2.after if r2 else "(absent)"]
        if with_err:
            ea, eb = a.error(k), b.error(k)
            cells += [_g(ea.scaled) if ea else "-", str(ea.max_ulp) if ea else "-",
                      _g(eb.scaled) if eb else "-", str(eb.max_ulp) if eb else "-"]
        rows.append(cells)
    out += _table(rows)
    out.append("why:")
    for k in keys:
        r1, r2 = ra.get(k), rb.get(k)
        why_a = r1.decided_by if r1 else "(absent)"
        why_b = r2.decided_by if r2 else "(absent)"
        out.append(f"  {k}")
        if why_a == why_b:
            out.append(f"    A, B: {why_a}")
        else:
            out += [f"    A: {why_a}", f"    B: {why_b}"]
    out += [f"note: {n}" for n in dict.fromkeys(a.notes + b.notes)]
    return out


def comparison_json(a: Explanation, b: Explanation, label_a: str, label_b: str) -> dict[str, Any]:
    """``{"a": {...}, "b": {...}}`` with the labels."""
    return {"a": {"label": label_a, **a.to_json()}, "b": {"label": label_b, **b.to_json()}}
