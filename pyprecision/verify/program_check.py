"""The program check: run a loop-IR program (through the precision passes) or an HLO module (through
the named HLO passes) on inputs with the emulator, and compare every output with a dump.

When the outputs do not match, the diagnosis re-runs the program under the other precision modes
and hardware generations (IR) or the other subsets of the HLO passes (HLO) and names the setting
that reproduces the dump exactly, if one does.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pyprecision.errors import DumpError, EmulationError
from pyprecision.verify.cast_check import Report, dump_as_codes
from pyprecision.verify.compare import CodeSpace, code_space, compare_codes
from pyprecision.verify.dumps import read_arrays

__all__ = [
    "FlagSet",
    "ProgramCheck",
    "ProgramDiagnosis",
    "hlo_outputs",
    "is_hlo_path",
    "read_inputs",
    "verify_program",
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
class ProgramDiagnosis:
    """Which setting reproduces every output exactly (``exact``), or comes closest."""

    requested: FlagSet
    exact: FlagSet | None = None
    alternatives: list[FlagSet] = field(default_factory=list)
    closest: FlagSet | None = None
    closest_mismatches: int | None = None
    tried: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One sentence (then the notes)."""
        tail = "".join(f"; {n}" for n in self.notes)
        return self._summary() + tail

    def _summary(self) -> str:
        if self.exact is not None:
            return f"the dump is reproduced exactly by {self.exact.describe()}"
        if self.closest is not None:
            return (f"no setting among {self.tried} tried reproduces the dump; closest: "
                    f"{self.closest.describe()} with {self.closest_mismatches} mismatches")
        return f"no setting among {self.tried} tried reproduces the dump or comes closer"

    def to_json(self) -> dict[str, Any]:
        """The diagnosis as JSON (``policy`` null when nothing reproduces the dump)."""
        return {
            "policy": self.exact.to_json() if self.exact else None,
            "description": self.exact.describe() if self.exact else None,
            "alternatives": [a.to_json() for a in self.alternatives],
            "closest": None if self.closest is None else {
                "policy": self.closest.to_json(), "mismatches": self.closest_mismatches},
            "candidates_tried": self.tried,
            "summary": self.summary(),
        }


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
    from pyprecision.emulate import run_hlo

    module = hlo.parse(text, filename=path)
    for name in passes:
        hlo.get_pass(name)
    hlo.run_passes(module, passes)
    args = []
    for p in module.entry.parameters:
        n = p.parameter_number
        key = next((k for k in (f"arg{n}", f"in{n}", p.name) if k in inputs), None)
        if key is None:
            raise EmulationError(f"no input for parameter {n} '{p.name}' (expected key arg{n}, "
                                 f"in{n} or {p.name})")
        args.append(as_logical(inputs[key], np.dtype(hlo.numpy_dtype(p.shape.element_type))))
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
    """Raw bits (uint8/uint16, or numpy's untyped void) of a bf16/fp8 input viewed as its ml_dtypes
    type; a float input of a narrower float type widened exactly when the parameter is wider
    (e.g. bf16 data for a parameter that upcast-all-to-fp32 made f32)."""
    raw = arr.dtype.kind in "ui" or arr.dtype.type is np.void
    if arr.dtype != want and want.kind == "V" and raw and arr.dtype.itemsize == want.itemsize:
        return arr.view(want)
    floats = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}

    def is_float(dt: np.dtype) -> bool:
        return dt in floats or (dt.kind == "V" and dt.type is not np.void)

    if arr.dtype != want and is_float(arr.dtype) and is_float(want) \
            and want.itemsize > arr.dtype.itemsize:
        return arr.astype(want)
    return arr


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
                    max_ulp: int = 0) -> list[tuple[str, Report]]:
    """One report per output against the dump (see ``verify_program``)."""
    return _compare(outs, dump, max_ulp)


def total_mismatches(outs: dict[str, tuple[np.ndarray, CodeSpace]],
                     dump: dict[str, np.ndarray]) -> int:
    """Mismatching elements over every output (a missing or mis-shaped output counts whole)."""
    return _total_mismatches(outs, dump)


def _compare(outs: dict[str, tuple[np.ndarray, CodeSpace]], dump: dict[str, np.ndarray],
             max_ulp: int) -> list[tuple[str, Report]]:
    missing = [n for n in outs if n not in dump]
    if missing:
        raise DumpError(f"the dump has no array for output(s) {', '.join(missing)}; it holds: "
                        f"{', '.join(k for k in dump if k != '__dtypes__') or '-'}")
    side = _side_table(dump)
    reports = []
    for name, (arr, space) in outs.items():
        exp, got, sp, by_class, notes = _pair(name, arr, space, _typed(name, dump[name], side))
        cmp = compare_codes(exp, got, sp, nan_by_class=by_class)
        counts = {col: {"nan": int(np.count_nonzero(sp.is_nan(c))),
                        "inf": int(np.count_nonzero(np.isinf(sp.values(c))))
                        if sp.kind == "float" else 0}
                  for col, c in (("expected", cmp.expected), ("dumped", cmp.dumped))}
        reports.append((name, Report(label=f"output {name} ({sp.name})", space=sp,
                                     shape=tuple(arr.shape), comparison=cmp,
                                     max_ulp_allowed=max_ulp, counts=counts, notes=notes,
                                     kind="program-output")))
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


def verify_program(program: str, inputs: str, dump: str, *, flags: list[str] | None = None,
                   target: str | None = None, hlo_passes: list[str] | None = None,
                   max_ulp: int = 0, run_diagnosis: bool = True,
                   as_written: bool = False) -> ProgramCheck:
    """Run ``program`` on the arrays of ``inputs`` (.npz) and compare each output with ``dump``.

    ``flags`` are neuronx-cc precision flags (e.g. ``["--auto-cast", "all"]``) and ``target`` a
    generation (gen2, gen3, gen4; default gen2). Loop IR (``.pir``): outputs are matched by output
    tensor name. HLO text: the whole pipeline runs — ``hlo_passes`` (default neuronx-cc's),
    the lowering to the loop IR, the precision passes, the emulation; outputs are ``out0``,
    ``out1``, ... With ``as_written`` the HLO is evaluated as written after ``hlo_passes`` (no
    lowering, no precision passes).
    """
    from pyprecision.io import read_text
    from pyprecision.verify.module_source import read_module_text

    text = read_module_text(program)[0] if is_hlo_path(program) else read_text(program, "a program")
    ins = read_inputs(inputs)
    dumped = read_arrays(dump)  # __dtypes__ (if any) relabels raw bits of bf16/fp8 outputs
    flags = list(flags or [])
    lowered = is_hlo_path(program) and not as_written
    if is_hlo_path(program) and as_written:
        names = list(hlo_passes or [])
        outs = hlo_outputs(text, program, ins, names)
        requested = FlagSet(("--passes", ",".join(names)) if names else ())
        extra: dict[str, Any] = {"program": program, "hlo_passes": names}
    elif lowered:
        from pyprecision.verify.hlo_check import lowered_outputs

        target = target or "gen2"
        outs, changed = lowered_outputs(text, program, ins, flags, target, hlo_passes)
        requested = FlagSet(tuple(flags) + ("--target", target))
        from pyprecision.emulate import DEFAULT_HLO_PASSES

        extra = {"program": program, "flags": flags, "target": target,
                 "hlo_passes": list(DEFAULT_HLO_PASSES if hlo_passes is None else hlo_passes),
                 "passes_changed": changed}
    else:
        target = target or "gen2"
        outs, changed = _ir_outputs(text, program, ins, flags, target)
        requested = FlagSet(tuple(flags) + ("--target", target))
        extra = {"program": program, "flags": flags, "target": target, "passes_changed": changed}
    reports = _compare(outs, dumped, max_ulp)
    check = ProgramCheck(reports, f"verify: {program} [{requested.describe()}] vs {dump}", extra)
    if run_diagnosis and any(r.comparison.mismatches for _, r in reports):
        base = sum(r.comparison.mismatches for _, r in reports)
        if lowered:
            from pyprecision.verify.hlo_diagnose import diagnose_lowered

            check.diagnosis = diagnose_lowered(text, program, ins, dumped, requested, base,
                                               target or "gen2", hlo_passes)  # fmt: skip
        else:
            check.diagnosis = _diagnose(text, program, ins, dumped, requested, base)
    return check


def _settings(program: str) -> list[FlagSet]:
    if is_hlo_path(program):
        from pyprecision.hlo import REGISTRY

        names = list(REGISTRY)
        subsets = itertools.chain.from_iterable(
            itertools.combinations(names, k) for k in range(len(names) + 1))
        return [FlagSet(("--passes", ",".join(s)) if s else ()) for s in subsets]
    from pyprecision.frontend import MODE_TABLE, USER_SPELLING, mode_to_pair, pair_to_mode
    from pyprecision.passes import GENERATIONS

    def pair(mode: str) -> str:
        """The --auto-cast spelling of the mode, when one exists (``matmult`` has none)."""
        scope, dtype = mode_to_pair(mode)
        if pair_to_mode(scope, dtype) != mode:
            return ""
        return f"--auto-cast {scope} --auto-cast-type {USER_SPELLING[dtype]}"

    return [FlagSet(("--fp32-cast", mode, "--target", gen), pair(mode))
            for gen in GENERATIONS for mode in MODE_TABLE]


def search_settings(diag: ProgramDiagnosis, settings: Iterable[FlagSet],
                    run: Callable[[FlagSet], dict[str, tuple[np.ndarray, CodeSpace]]],
                    dumped: dict[str, np.ndarray], base_mismatches: int,
                    skip: tuple[type[BaseException], ...] = (EmulationError, DumpError)) -> None:
    """Run every setting; record in ``diag`` the ones that reproduce the dump exactly, or the
    closest one (fewer mismatches than ``base_mismatches``). A setting that raises ``skip`` is
    passed over."""
    best = base_mismatches
    for setting in settings:
        diag.tried += 1
        try:
            outs = run(setting)
        except skip:
            continue
        n = _total_mismatches(outs, dumped)
        if n == 0:
            if diag.exact is None:
                diag.exact = setting
            else:
                diag.alternatives.append(setting)
        elif 0 < n < best:
            best, diag.closest, diag.closest_mismatches = n, setting, n
    if diag.exact is not None:
        diag.closest = diag.closest_mismatches = None


def _diagnose(text: str, program: str, ins: dict[str, np.ndarray], dumped: dict[str, np.ndarray],
              requested: FlagSet, base_mismatches: int) -> ProgramDiagnosis:
    diag = ProgramDiagnosis(requested=requested)

    def run(setting: FlagSet) -> dict[str, tuple[np.ndarray, CodeSpace]]:
        if is_hlo_path(program):
            names = setting.flags[1].split(",") if setting.flags else []
            return hlo_outputs(text, program, ins, names)
        return _ir_outputs(text, program, ins, list(setting.flags[:2]), setting.flags[3])[0]

    search_settings(diag, _settings(program), run, dumped, base_mismatches)
    return diag
