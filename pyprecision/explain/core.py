"""``explain``: one row per op — its dtype before and after the passes, the pass and rule or gate
that decided it, and (with inputs) the emulated error of its output against an all-fp32 run."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pyprecision.errors import DumpError, PyPrecisionError
from pyprecision.explain.numerics import (
    OpError,
    all_fp32_reference,
    op_errors,
    output_error,
    probe_values,
)
from pyprecision.explain.provenance import OpRow, trace_pipeline

__all__ = ["SORT_KEYS", "Explanation", "explain", "explain_hlo", "split_flags"]

#: ``--sort`` keys.
SORT_KEYS = ("error", "abs", "rel", "ulp", "order")


@dataclass
class Explanation:
    """The rows (sorted worst first when errors are known), what ran, and notes."""

    program: str
    flags: list[str]
    target: str | None
    mode: str
    passes: list[str]
    rows: list[OpRow]
    errors: dict[str, OpError] | None = None
    notes: list[str] = field(default_factory=list)

    def error(self, key: str) -> OpError | None:
        """The error of an op's output, if measured."""
        return None if self.errors is None else self.errors.get(key)

    def sorted_rows(self, sort: str = "error") -> list[OpRow]:
        """Rows by ``sort`` (one of :data:`SORT_KEYS`): ``error`` (default) worst scaled error
        first (X2; ties: max rel, ULPs), then rows whose elements reach no output, then unmeasured
        rows; ``abs``/``rel``/``ulp`` by that column; ``order``: program order."""
        if sort not in SORT_KEYS:
            raise PyPrecisionError(f"--sort must be one of {', '.join(SORT_KEYS)}, not {sort!r}")
        if self.errors is None or sort == "order":
            return list(self.rows)
        errs = self.errors
        measured = [r for r in self.rows if r.key in errs and errs[r.key].reached != 0]
        dead = [r for r in self.rows if r.key in errs and errs[r.key].reached == 0]
        rest = [r for r in self.rows if r.key not in errs]

        def key(r: OpRow) -> tuple[float, ...]:
            e = errs[r.key]
            first = {"error": e.scaled, "abs": e.max_abs, "rel": e.max_rel,
                     "ulp": float(e.max_ulp)}[sort]
            return (-first, -e.scaled, -e.max_rel, -float(e.max_ulp))
        measured.sort(key=key)
        return measured + dead + rest

    def to_json(self) -> dict[str, Any]:
        """The explanation as a JSON object (rows in :meth:`sorted_rows` order)."""
        return {
            "program": self.program, "flags": self.flags, "target": self.target,
            "mode": self.mode, "passes": self.passes, "notes": self.notes,
            "rows": [{"name": r.key, "op": r.op, "before": r.before, "after": r.after,
                      "decided_by": r.decided_by, "reasons": list(r.reasons),
                      "derived": r.derived,
                      "decisions": [{"pass": d.pass_name, "rule": d.rule, "message": d.message,
                                     "state": d.state} for d in r.decisions],
                      "error": (e.to_json() if (e := self.error(r.key)) is not None else None)}
                     for r in self.sorted_rows()],
        }


def split_flags(text: str) -> list[str]:
    """``"--auto-cast all --target gen3"`` → the argument list (shell quoting rules)."""
    return shlex.split(text)


def _read_inputs(path: str | None) -> dict[str, np.ndarray] | None:
    if path is None:
        return None
    from pyprecision.verify import read_inputs

    return read_inputs(path)


def explain(program: str, flags: list[str] | None = None, target: str | None = None,
            inputs: str | None = None) -> Explanation:
    """Explain a ``.pir`` program under ``flags`` (precision flags) on ``target`` (gen2 default);
    with ``inputs`` (.npz keyed by input tensor name) measure every op's error."""
    p = Path(program)
    if not p.is_file():
        raise DumpError(f"{program}: no such file")
    text = p.read_text(encoding="utf-8")
    flags = list(flags or [])
    tgt = target or "gen2"
    trace = trace_pipeline(text, flags, tgt, filename=program)
    result = Explanation(program, flags, tgt, trace.mode, trace.passes, trace.rows)
    if any(r.derived for r in trace.rows):
        result.notes.append("rows marked (derived) were not covered by the passes' provenance "
                            "log; their reason is re-derived from snapshots of the IR")
    data = _read_inputs(inputs)
    if data is not None:
        after = probe_values(trace.module, data)
        ref_module, note = all_fp32_reference(text, filename=program)
        if note:
            result.notes.append(note)
        result.errors = op_errors(after, probe_values(ref_module, data))
    return result


def explain_hlo(module_path: str, passes: list[str], inputs: str | None = None) -> Explanation:
    """Explain an HLO module under ``passes``: every ENTRY instruction's element type before and
    after, and the pass that changed it. With ``inputs``, the outputs' error against the module
    under ``upcast-all-to-fp32`` (per-op errors are measured for .pir programs only)."""
    from pyprecision import hlo
    from pyprecision.verify import read_module_text

    text = read_module_text(module_path)[0]  # any form: text, .hlo.pb, gzip, StableHLO
    module = hlo.parse(text, filename=module_path)
    for name in passes:
        hlo.get_pass(name)
    snaps = [_hlo_snapshot(module)]
    for name in passes:
        hlo.run_passes(module, [name])
        snaps.append(_hlo_snapshot(module))
    rows = _hlo_rows(snaps, passes)
    result = Explanation(module_path, ["--passes", ",".join(passes)] if passes else [], None,
                         "hlo", list(passes), rows)
    data = _read_inputs(inputs)
    if data is not None:
        result.errors = _hlo_output_errors(text, module_path, module, data)
        result.notes.append("HLO: errors are measured on the ENTRY outputs only, against the "
                            "module under upcast-all-to-fp32")
    return result


def _hlo_snapshot(module: Any) -> dict[str, tuple[str, str]]:
    return {i.name: (i.opcode, "tuple" if i.shape.is_tuple
                     else i.shape.to_text(with_layout=False).split("[")[0])
            for i in module.entry.instructions}


def _hlo_rows(snaps: list[dict[str, tuple[str, str]]], passes: list[str]) -> list[OpRow]:
    first, last = snaps[0], snaps[-1]
    order = list(last) + [k for k in first if k not in last]
    rows = []
    for key in order:
        op = (last.get(key) or first[key])[0]
        row = OpRow(key, op, first[key][1] if key in first else "-",
                    last[key][1] if key in last else "-")
        for i, name in enumerate(passes):
            pre, post = snaps[i], snaps[i + 1]
            if key not in pre and key in post:
                row.reasons.append(f"{name}: inserted ({post[key][1]})")
            elif key in pre and key not in post:
                row.reasons.append(f"{name}: removed")
            elif key in pre and pre[key][1] != post[key][1]:
                row.reasons.append(f"{name}: {pre[key][1]} → {post[key][1]}")
        if not row.reasons:
            row.reasons.append("unchanged by every pass" if passes else "no passes run")
        rows.append(row)
    return rows


def _hlo_output_errors(text: str, path: str, module: Any,
                       data: dict[str, np.ndarray]) -> dict[str, OpError]:
    """Each ENTRY output's error, keyed by the instruction producing it (the root, or the root
    tuple's operands)."""
    from pyprecision import hlo
    from pyprecision.verify import hlo_outputs

    after = hlo_outputs(hlo.to_text(module), path, data, [])
    ref = hlo_outputs(text, path, data, ["upcast-all-to-fp32"])
    root = module.entry.root
    producers = [o.name for o in root.operands] if root.opcode == "tuple" else [root.name]
    out: dict[str, OpError] = {}
    for (name, (arr, _space)), key in zip(after.items(), producers, strict=False):
        dt = _ir_dtype(arr.dtype)
        if dt is None:  # an HLO-only type (s4, pred, ...): no error measure
            continue
        a = np.asarray(arr)
        r = np.asarray(ref[name][0])
        out[key] = output_error(a.astype(np.float64) if dt.is_float else a.astype(np.int64),
                                r.astype(np.float64) if dt.is_float else r.astype(np.int64), dt)
    return out


def _ir_dtype(dt: np.dtype) -> Any:
    """The IR dtype of a numpy dtype, or None when the IR has none (bool, int4, ...)."""
    from pyprecision.ir import as_dtype

    try:
        return as_dtype(dt)
    except (KeyError, ValueError, TypeError, PyPrecisionError):
        return None
