"""The verify report as text, as JSON and as a PNG (matplotlib, imported only when asked for)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from pyprecision.errors import PyPrecisionError
from pyprecision.verify.cast_check import Report

__all__ = ["mismatch_rows", "plot_report", "report_json", "report_lines"]


def _num(v: float) -> float | str:
    """A JSON-safe float: non-finite values become the strings "nan", "inf", "-inf"."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _hex(code: int, bits: int) -> str:
    return f"0x{int(code):0{bits // 4}x}"


def _input_bits(x: np.ndarray, i: int) -> str | None:
    if x.dtype.kind in "iub":
        return None
    width = x.dtype.itemsize * 8
    return _hex(int(x[i:i + 1].view(np.dtype(f"uint{width}"))[0]), width)


def _input_value(x: np.ndarray, i: int) -> float | int:
    v = x[i]
    if x.dtype.kind in "iu":
        return int(v)
    return float(np.float64(v))


def mismatch_rows(rep: Report, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` mismatches: index, input (value and bits, cast checks only),
    expected/dumped bits and values, ULP distance (None when unbounded)."""
    cmp, space = rep.comparison, rep.space
    idx = cmp.mismatch_indices()[:max(limit, 0)]
    exp_v, dmp_v = space.values(cmp.expected[idx]), space.values(cmp.dumped[idx])
    rows = []
    for k, i in enumerate(idx):
        i = int(i)
        row: dict[str, Any] = {
            "index": [int(j) for j in np.unravel_index(i, rep.shape)] if rep.shape else [],
            "flat_index": i,
        }
        if rep.inputs is not None:
            row["input"] = _num(_input_value(rep.inputs, i))
            row["input_bits"] = _input_bits(rep.inputs, i)
        row.update({
            "expected_bits": space.hex(cmp.expected[i]),
            "dumped_bits": space.hex(cmp.dumped[i]),
            "expected": _num(exp_v[k]) if space.kind == "float" else int(exp_v[k]),
            "dumped": _num(dmp_v[k]) if space.kind == "float" else int(dmp_v[k]),
            "ulp": None if cmp.unbounded[i] else int(cmp.ulp[i]),
        })
        if cmp.unbounded[i]:
            row["nan_vs_number"] = True
        rows.append(row)
    return rows


def report_json(rep: Report, show: int = 10) -> dict[str, Any]:
    """The report as a JSON object (schema in docs/verify.md)."""
    cmp = rep.comparison
    return {
        "kind": rep.kind,
        "format": rep.space.name,
        "policy": rep.policy.to_json() if rep.policy is not None else None,
        "shape": list(rep.shape),
        "elements": cmp.elements,
        "matches": cmp.matches,
        "mismatches": cmp.mismatches,
        "max_ulp": cmp.max_ulp(),
        "max_finite_ulp": cmp.max_finite_ulp(),
        "mean_ulp": cmp.mean_ulp(),
        "unbounded": int(np.count_nonzero(cmp.unbounded)),
        "max_ulp_allowed": rep.max_ulp_allowed,
        "distance": rep.distance().to_json(),
        "tolerance": rep.tolerance.to_json() if rep.tolerance is not None else None,
        "failing": _failing(rep),
        "ok": rep.ok,
        "ulp_histogram": rep.histogram(),
        "first_mismatches": mismatch_rows(rep, show),
        "counts": rep.counts,
        "diagnosis": rep.diagnosis.to_json() if rep.diagnosis else None,
        "notes": list(rep.notes),
    }


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) if c == 0 else cell.rjust(w)
                               for c, (cell, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in rows]


def _show(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return repr(v) if abs(v) >= 1e-4 or v == 0 else f"{v:.6g}"
    return str(v)


def report_lines(rep: Report, show: int = 10, title: str | None = None) -> list[str]:
    """The human-readable report."""
    cmp = rep.comparison
    n = cmp.elements
    pct = f" ({100.0 * cmp.matches / n:.2f}%)" if n else ""
    max_ulp = cmp.max_ulp()
    out = [title or f"verify: {rep.label}"]
    out += [f"elements:    {n}", f"matches:     {cmp.matches}{pct}", f"mismatches:  {cmp.mismatches}",
            "max ULP:     " + (str(max_ulp) if max_ulp is not None else
                               f"unbounded ({int(cmp.unbounded.sum())} NaN against a number; "
                               f"largest finite {cmp.max_finite_ulp()})"),
            f"mean ULP:    {cmp.mean_ulp():.4g}"]
    if rep.kind == "program-output":
        out.append(f"distance:    {rep.distance().describe()}")
        if rep.tolerance is not None:
            out.append(f"tolerance:   {rep.tolerance.describe()}")
    out += [f"note: {note}" for note in rep.notes]
    if cmp.mismatches:
        out.append("ULP histogram (non-empty buckets):")
        out += _table([[str(r["bucket"]), str(r["count"])] for r in rep.histogram() if r["count"]])
    out += _counts_table(rep.counts)
    rows = mismatch_rows(rep, show)
    if rows:
        out.append(f"first {len(rows)} mismatches:")
        with_input = rep.inputs is not None
        table = [["index"] + (["input", "input bits"] if with_input else [])
                 + ["expected", "dumped", "ULP"]]
        for r in rows:
            table.append([str(tuple(r["index"]))]
                         + ([_show(r["input"]), r["input_bits"] or "-"] if with_input else [])
                         + [f"{r['expected_bits']} ({_show(r['expected'])})",
                            f"{r['dumped_bits']} ({_show(r['dumped'])})",
                            "NaN vs number" if r["ulp"] is None else str(r["ulp"])])
        out += _table(table)
    if rep.diagnosis is not None:
        out.append("diagnosis: " + rep.diagnosis.summary())
        for alt in rep.diagnosis.alternatives:
            out.append("  also exact: " + alt.describe())
    out.append(_verdict(rep))
    return out


_COUNT_LABELS = {"nan": "NaN", "inf": "inf", "overflow": "beyond max", "saturated": "saturated"}


def _counts_table(counts: dict[str, dict[str, int]]) -> list[str]:
    cols = list(counts)
    if not cols:
        return []
    rows = [[""] + cols]
    for key, label in _COUNT_LABELS.items():
        if any(key in counts[c] for c in cols):
            rows.append([label] + [str(counts[c][key]) if key in counts[c] else "" for c in cols])
    return ["counts:"] + _table(rows)


def _failing(rep: Report) -> int:
    """Elements outside what the report allows."""
    return int(np.count_nonzero(~rep.passing)) if rep.tolerance is not None else int(
        np.count_nonzero(rep.comparison.unbounded | (rep.comparison.ulp > rep.max_ulp_allowed)))


def _verdict(rep: Report) -> str:
    cmp = rep.comparison
    tol = rep.tolerance
    if tol is not None:
        if rep.ok:
            return "result: OK (" + ("bit-exact" if cmp.mismatches == 0 else
                                    f"within {tol.describe()}") + ")"
        if tol.exact:
            return f"result: FAIL ({_failing(rep)} elements not bit-exact)"
        return f"result: FAIL ({_failing(rep)} elements outside {tol.describe()})"
    if rep.ok:
        what = "bit-exact" if cmp.mismatches == 0 else f"within {rep.max_ulp_allowed} ULP"
        return f"result: OK ({what})"
    beyond = int(np.count_nonzero(cmp.unbounded | (cmp.ulp > rep.max_ulp_allowed)))
    return f"result: FAIL ({beyond} elements beyond --max-ulp {rep.max_ulp_allowed})"


def plot_report(reports: list[tuple[str, Report]], path: str | Path) -> None:
    """Write a PNG: per report, the ULP histogram and the signed ULP error of each mismatch
    against its input value."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PyPrecisionError("--plot needs matplotlib, which is not installed "
                               "(pip install matplotlib)") from None
    fig, axes = plt.subplots(len(reports), 2, figsize=(11, 3.6 * len(reports)), squeeze=False)
    for (name, rep), (ax_h, ax_s) in zip(reports, axes, strict=True):
        hist = rep.histogram()
        ax_h.bar(range(len(hist)), [r["count"] for r in hist], color="tab:blue")
        ax_h.set_xticks(range(len(hist)), [str(r["bucket"]) for r in hist], rotation=45)
        ax_h.set_yscale("log")
        ax_h.set_ylim(bottom=0.5)
        ax_h.set_xlabel("ULP distance")
        ax_h.set_ylabel("elements")
        cmp = rep.comparison
        ax_h.set_title(f"{name}: {cmp.mismatches} of {cmp.elements} mismatch")
        idx = cmp.mismatch_indices()
        if idx.size:
            signed = rep.space.ordered(cmp.dumped[idx]) - rep.space.ordered(cmp.expected[idx])
            xs = (rep.inputs[idx].astype(np.float64) if rep.inputs is not None
                  else idx.astype(np.float64))
            ax_s.scatter(xs, signed, s=8, color="tab:red")
        ax_s.axhline(0, color="grey", linewidth=0.8)
        ax_s.set_xlabel("input value" if rep.inputs is not None else "flat index")
        ax_s.set_ylabel("dumped - expected (ULP)")
        exact = getattr(rep.diagnosis, "exact", None)
        ax_s.set_title(f"explained by: {exact.describe()}" if exact is not None else "mismatches")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=90)
    plt.close(fig)
