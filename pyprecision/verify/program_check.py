"""The program check: run a loop-IR program (through the precision passes) or an HLO module (through
the named HLO passes) on inputs with the emulator, and compare every output with a dump.

When the outputs do not match, the diagnosis re-runs the program under the other precision modes
and hardware generations (IR) or the other subsets of the HLO passes (HLO) and names the setting
that reproduces the dump exactly, if one does.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pyprecision.errors import DumpError, EmulationError
from pyprecision.verify.cast_check import Report, dump_as_codes
from pyprecision.verify.compare import CodeSpace, code_space, compare_codes
from pyprecision.verify.dumps import read_arrays
from pyprecision.verify.ranking import ProgramDiagnosis

__all__ = [
    "FlagSet",
    "ProgramCheck",
    "ProgramDiagnosis",
    "compare_outputs",
    "hlo_outputs",
    "is_hlo_path",
    "read_inputs",
    "total_mismatches",
]


def is_hlo_path(path: str | Path) -> bool:
    """HLO text unless the file is a ``.pir`` loop-IR program."""
    return not str(path).lower().endswith(".pir")


@dataclass(frozen=True)
class FlagSet:
    """A setting the program check can run under: command-line flags, shown as typed."""

    flags: tuple[str, ...]
    note: str = ""

    def describe(self) -> str:
        """The flags as one would type them (``(no passes)`` when empty), then the note."""
        text = " ".join(self.flags) if self.flags else "(no passes)"
        return f"{text} ({self.note})" if self.note else text

    def to_json(self) -> dict[str, Any]:
        """``{"flags": [...]}``."""
        return {"flags": list(self.flags), "note": self.note or None}


@dataclass
class ProgramCheck:
    """The outcome: one Report per output (name, report), a title, extra facts, the diagnosis."""

    reports: list[tuple[str, Report]]
    title: str
    extra: dict[str, Any]
    diagnosis: ProgramDiagnosis | None = None

    @property
    def ok(self) -> bool:
        """Every output within the allowed ULP distance."""
        return all(rep.ok for _, rep in self.reports)


# -- running the program --------------------------------------------------------------------------

def _ir_outputs(text: str, path: str, inputs: dict[str, np.ndarray], flags: list[str],
                target: str) -> tuple[dict[str, tuple[np.ndarray, CodeSpace]], list[str]]:
    from pyprecision import ir
    from pyprecision.emulate import run_ir
    from pyprecision.frontend import parse_flags
    from pyprecision.passes import run_pipeline

    module = ir.parse(text, filename=path)
    stats = run_pipeline(module, parse_flags(flags), target)
    f = module.main
    types = {t.name: np.dtype(t.dtype.np_dtype) for t in f.inputs}
    # other arrays in the .npz (e.g. the expected outputs stored beside the inputs) are ignored
    outs = run_ir(module, {k: as_logical(v, types[k]) for k, v in inputs.items() if k in types})
    spaces = {t.name: _ir_space(t.dtype) for t in f.outputs}
    changed = [n for n, c in stats.changed.items() if c]
    return {name: (np.asarray(arr), spaces[name]) for name, arr in outs.items()}, changed


def _ir_space(dtype: Any) -> CodeSpace:
    if dtype.is_float:
        return code_space(dtype.fmt if dtype.fmt is not None else "float32")
    return code_space(np.dtype(dtype.np_dtype))


def hlo_outputs(text: str, path: str, inputs: dict[str, np.ndarray],
                passes: list[str]) -> dict[str, tuple[np.ndarray, CodeSpace]]:
    """Parse HLO ``text``, run ``passes``, evaluate ENTRY on ``inputs`` (keys arg<n>, in<n> or the
    parameter names; raw bits of bf16/fp8 parameters allowed): ``{"out<i>": (array, code space)}``."""
    from pyprecision import hlo
    from pyprecision.emulate import bind_arguments, run_hlo

    module = hlo.parse(text, filename=path)
    for name in passes:
        hlo.get_pass(name)
    hlo.run_passes(module, passes)
    args = bind_arguments(module, inputs, widen=True).args
    try:
        results = run_hlo(module, args)
    except (ValueError, KeyError, NotImplementedError) as exc:
        if isinstance(exc, EmulationError):
            raise
        raise EmulationError(f"{path}: {exc}") from None
    out = {}
    for i, arr in enumerate(results):
        a = np.asarray(arr)
        out[f"out{i}"] = (a, code_space(a.dtype))
    return out


def as_logical(arr: np.ndarray, want: np.dtype) -> np.ndarray:
    """Raw bits of a bf16/fp8 input viewed as its ml_dtypes type, a narrower float widened exactly
    (``emulate.as_logical``, the binder's rule)."""
    from pyprecision.emulate import as_logical as relabel

    return relabel(arr, want, True)


def read_inputs(path: str) -> dict[str, np.ndarray]:
    """The arrays of an inputs .npz, raw bits relabelled by its ``__dtypes__`` table if present
    (the convention of ``hlo-run`` and tests/data/hlo), the table itself dropped; an untyped
    2-byte void array (numpy's way of saving bf16) is read as bfloat16."""
    arrays = read_arrays(path)
    side = _side_table(arrays)
    out = {}
    for k, v in arrays.items():
        if k == "__dtypes__":
            continue
        v = _typed(k, v, side)
        out[k] = _void_as_float(k, v) if v.dtype.type is np.void and v.dtype.itemsize == 2 else v
    return out


def _codes(arr: np.ndarray, space: CodeSpace) -> np.ndarray:
    a = np.ascontiguousarray(arr)
    if a.dtype.itemsize * 8 != space.bits:
        raise DumpError(f"{a.dtype} values are not {space.name} codes")
    return a.view(space.storage_dtype)


def _typed(name: str, arr: np.ndarray, side: dict[str, str]) -> np.ndarray:
    """A dump array relabelled by the ``__dtypes__`` side table (raw bits of bf16/fp8 outputs)."""
    label = side.get(name)
    if label and arr.dtype.kind in "uiV":
        from pyprecision.io import parse_dtype

        want = parse_dtype(label)
        if want.itemsize == arr.dtype.itemsize and want != arr.dtype:
            return arr.view(want)
    return arr


def _pair(name: str, out: np.ndarray, space: CodeSpace, dump: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, CodeSpace, bool, list[str]]:
    """(expected codes, dumped codes, code space, NaN by class, notes) for one output."""
    shape = out.shape
    if dump.size != out.size:
        raise DumpError(f"dump '{name}' has {dump.size} elements, the output {out.size} "
                        f"(shapes {dump.shape} and {shape})")
    if dump.shape != shape and dump.ndim != 1:
        raise DumpError(f"dump '{name}' has shape {dump.shape}, the output {shape}")
    d = np.ascontiguousarray(dump).reshape(shape)
    if space.kind == "int":
        if d.dtype != out.dtype:
            raise DumpError(f"dump '{name}' is {d.dtype}; the output is {out.dtype}")
        return out, d, space, False, []
    raw_bits = d.dtype.kind in "ui" or d.dtype.type is np.void  # numpy saves ml_dtypes as |V2
    same = d.dtype == out.dtype or (raw_bits and d.dtype.itemsize * 8 == space.bits)
    if same and d.dtype.type is np.void:
        d = d.view(space.storage_dtype)
    if same:
        if space.fmt is not None:
            codes, by_class, notes = dump_as_codes(d, space.fmt)
            return _codes(out, space), codes, space, by_class, notes
        return _codes(out, space), _codes(d, space), space, False, []
    if d.dtype.type is np.void:
        d = _void_as_float(name, d)
    if d.dtype.kind not in "fV":
        raise DumpError(f"dump '{name}' is {d.dtype}; the output is {space.name}")
    # different float types: compare both exactly widened to float32 (NaN encodings by class)
    f32 = code_space("float32")
    note = (f"the output is {out.dtype} but the dump holds {d.dtype}: both compared as float32 "
            "values (a precision setting that changes the output type shows up here)")
    return (_codes(out.astype(np.float32), f32), _codes(d.astype(np.float32), f32), f32, True,
            [note])


def _void_as_float(name: str, d: np.ndarray) -> np.ndarray:
    """numpy saves ml_dtypes arrays as plain void: ``V2`` can only be bfloat16 (the one 16-bit
    ml_dtypes float); a ``V1`` could be any fp8 type and needs the ``__dtypes__`` side table."""
    if d.dtype.itemsize == 2:
        import ml_dtypes

        return d.view(ml_dtypes.bfloat16)
    raise DumpError(f"dump '{name}' holds untyped {d.dtype.itemsize}-byte values (numpy saves "
                    "fp8 arrays as void); name their dtype in a __dtypes__ entry, as hlo-run does")


def compare_outputs(outs: dict[str, tuple[np.ndarray, CodeSpace]], dump: dict[str, np.ndarray],
                    max_ulp: int = 0, tolerances: list[Any] | None = None
                    ) -> list[tuple[str, Report]]:
    """One report per output against the dump (see ``verify_program``); ``tolerances`` (one
    ``Tolerance`` per output, in order) decide what passes, else ``max_ulp``."""
    return _compare(outs, dump, max_ulp, tolerances)


def total_mismatches(outs: dict[str, tuple[np.ndarray, CodeSpace]],
                     dump: dict[str, np.ndarray]) -> int:
    """Mismatching elements over every output (a missing or mis-shaped output counts whole)."""
    return _total_mismatches(outs, dump)


def _compare(outs: dict[str, tuple[np.ndarray, CodeSpace]], dump: dict[str, np.ndarray],
             max_ulp: int, tolerances: list[Any] | None = None) -> list[tuple[str, Report]]:
    missing = [n for n in outs if n not in dump]
    if missing:
        raise DumpError(f"the dump has no array for output(s) {', '.join(missing)}; it holds: "
                        f"{', '.join(k for k in dump if k != '__dtypes__') or '-'}")
    side = _side_table(dump)
    reports = []
    for k, (name, (arr, space)) in enumerate(outs.items()):
        tol = tolerances[k] if tolerances is not None and k < len(tolerances) else None
        exp, got, sp, by_class, notes = _pair(name, arr, space, _typed(name, dump[name], side))
        cmp = compare_codes(exp, got, sp, nan_by_class=by_class)
        counts = {col: {"nan": int(np.count_nonzero(sp.is_nan(c))),
                        "inf": int(np.count_nonzero(np.isinf(sp.values(c))))
                        if sp.kind == "float" else 0}
                  for col, c in (("expected", cmp.expected), ("dumped", cmp.dumped))}
        reports.append((name, Report(label=f"output {name} ({sp.name})", space=sp,
                                     shape=tuple(arr.shape), comparison=cmp,
                                     max_ulp_allowed=max_ulp, counts=counts, notes=notes,
                                     kind="program-output", tolerance=tol)))
    return reports


def _side_table(dump: dict[str, np.ndarray]) -> dict[str, str]:
    raw = dump.get("__dtypes__")
    if raw is None:
        return {}
    import json

    try:
        table = json.loads(str(np.asarray(raw).item()))
    except (ValueError, TypeError):
        raise DumpError("the dump's __dtypes__ entry is not a JSON object of dtype names") from None
    return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}


def _total_mismatches(outs: dict[str, tuple[np.ndarray, CodeSpace]],
                      dump: dict[str, np.ndarray]) -> int:
    try:
        return sum(r.comparison.mismatches for _, r in _compare(outs, dump, 0))
    except DumpError:  # this setting changes an output's dtype so the dump cannot be read as it
        return -1
