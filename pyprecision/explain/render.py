"""The explanation as a table (one or two flag sets side by side) and as JSON."""
from __future__ import annotations

from typing import Any

from pyprecision.explain.core import Explanation

__all__ = ["comparison_json", "comparison_lines", "explanation_lines"]


def _g(v: float) -> str:
    return f"{v:.3g}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _err_cells(e: Any) -> list[str]:
    if e is None:
        return ["-", "-", "-"]
    ulp = str(e.max_ulp) + (f" (+{e.nonfinite} non-finite)" if e.nonfinite else "")
    return [_g(e.max_abs), _g(e.max_rel), ulp]


def explanation_lines(ex: Explanation) -> list[str]:
    """Header, then one row per op: name, op, dtype before → after, errors, decided by."""
    head = f"explain: {ex.program}"
    if ex.mode != "hlo":
        head += f" [{' '.join(ex.flags) or '--auto-cast none'}] target {ex.target}, mode {ex.mode}"
    out = [head, f"passes: {', '.join(ex.passes) or '-'}"]
    with_err = ex.errors is not None
    header = ["op", "kind", "before", "after"]
    if with_err:
        header += ["max abs", "max rel", "ULPs"]
    rows = [header + ["decided by"]]
    for r in ex.sorted_rows():
        cells = [r.key, r.op, r.before, r.after]
        if with_err:
            cells += _err_cells(ex.error(r.key))
        rows.append(cells + [r.decided_by + (" (derived)" if r.derived else "")])
    out += _table(rows)
    if with_err:
        out.append("errors: each op's output after the passes against an all-fp32 run on the same "
                   "inputs; ULPs in the output's dtype; worst first")
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
            return max((e.max_rel for e in (a.error(k), b.error(k)) if e is not None), default=-1.0)
        keys.sort(key=lambda k: -worst(k))
    header = ["op", "kind", "before", "A after", "B after"]
    if with_err:
        header += ["A max rel", "A ULPs", "B max rel", "B ULPs"]
    rows = [header]
    for k in keys:
        r1, r2 = ra.get(k), rb.get(k)
        ref = r1 or r2
        assert ref is not None
        cells = [k, ref.op, ref.before, r1.after if r1 else "(absent)", r2.after if r2 else "(absent)"]
        if with_err:
            ea, eb = a.error(k), b.error(k)
            cells += [_g(ea.max_rel) if ea else "-", str(ea.max_ulp) if ea else "-",
                      _g(eb.max_rel) if eb else "-", str(eb.max_ulp) if eb else "-"]
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
