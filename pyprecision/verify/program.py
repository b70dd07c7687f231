"""``verify_program``: run a loop-IR program (through the precision passes) or an HLO module
(through neuronx-cc's pipeline) on inputs, compare every output with a dump within its op-class
tolerance, and diagnose a mismatching dump by ranking flag sets by distance.

The orchestrator of the program check; the pieces it uses (reading, comparing, running, ranking)
are leaves that never import it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.errors import DumpError, EmulationError
from pyprecision.verify.distance import (
    TRANSCENDENTAL_RTOL,
    class_tolerance,
    output_classes,
    upstream_transcendentals,
)
from pyprecision.verify.dumps import read_arrays
from pyprecision.verify.hlo_check import as_outputs, mode_argv
from pyprecision.verify.program_check import (
    FlagSet,
    ProgramCheck,
    _ir_outputs,
    compare_outputs,
    hlo_outputs,
    is_hlo_path,
    read_inputs,
)
from pyprecision.verify.ranking import ProgramDiagnosis, rank_outputs

__all__ = ["verify_program"]


def verify_program(program: str, inputs: str, dump: str, *, flags: list[str] | None = None,
                   target: str | None = None, hlo_passes: list[str] | None = None,
                   max_ulp: int = 0, run_diagnosis: bool = True, as_written: bool = False,
                   rtol: float = 0.0, atol: float = 0.0, exact: bool = False,
                   transcendental_rtol: float = TRANSCENDENTAL_RTOL,
                   intermediates: str | None = None) -> ProgramCheck:
    """Run ``program`` on the arrays of ``inputs`` (.npz) and compare each output with ``dump``.

    ``flags`` are neuronx-cc precision flags (e.g. ``["--auto-cast", "all"]``) and ``target`` a
    generation (gen2, gen3, gen4; default gen2). Loop IR (``.pir``): outputs are matched by output
    tensor name. HLO text: the whole pipeline runs — ``hlo_passes`` (default neuronx-cc's),
    the lowering to the loop IR, the precision passes, the emulation; outputs are ``out0``,
    ``out1``, ... With ``as_written`` the HLO is evaluated as written after ``hlo_passes``.

    What passes (decision V21): an HLO output with no transcendental op upstream must be within
    ``max_ulp`` / ``rtol`` / ``atol`` (default: bit-exact); one with a transcendental upstream
    also passes within ``transcendental_rtol`` x max(|expected|, RMS of the output); ``exact``
    makes every output bit-exact. ``intermediates``: an .npz of dumped HLO values by instruction
    name; the check names the first where device and emulation part (HLO through the pipeline).
    """
    from pyprecision.io import read_text
    from pyprecision.verify.module_source import read_module_text

    text = read_module_text(program)[0] if is_hlo_path(program) else read_text(program, "a program")
    ins = read_inputs(inputs)
    dumped = read_arrays(dump)  # __dtypes__ (if any) relabels raw bits of bf16/fp8 outputs
    flags = list(flags or [])
    policy = {"max_ulp": max_ulp, "rtol": rtol, "atol": atol, "exact": exact,
              "transcendental_rtol": transcendental_rtol}
    hlo_program = is_hlo_path(program)
    if intermediates is not None and (not hlo_program or as_written):
        raise DumpError("intermediate dumps are compared for HLO modules through the pipeline "
                        "(not .pir programs, not --as-written)")
    if hlo_program and not as_written:
        return _lowered_check(text, program, ins, dumped, dump, flags, target or "gen2",
                              hlo_passes, policy, run_diagnosis, intermediates,
                              inputs)  # fmt: skip
    if hlo_program:
        from pyprecision import hlo

        names = list(hlo_passes or [])
        outs = hlo_outputs(text, program, ins, names)
        module = hlo.parse(text, filename=program)
        hlo.run_passes(module, names)
        classes: list[list[str]] | None = output_classes(module)
        requested = FlagSet(("--passes", ",".join(names)) if names else ())
        extra: dict[str, Any] = {"program": program, "hlo_passes": names}
        from pyprecision.emulate import bind_arguments

        extra["unused_inputs"] = bind_arguments(module, ins, widen=True).unused
    else:
        target = target or "gen2"
        outs, changed = _ir_outputs(text, program, ins, flags, target)
        classes = None  # the op classes are read from HLO; a .pir program gets the given policy
        requested = FlagSet(tuple(flags) + ("--target", target))
        extra = {"program": program, "flags": flags, "target": target, "passes_changed": changed,
                 "unused_inputs": _ir_unused(text, program, ins)}
    check = _check(outs, dumped, classes, policy, f"verify: {program} [{requested.describe()}] "
                   f"vs {dump}", extra)  # fmt: skip
    if run_diagnosis and not check.ok:
        check.diagnosis = _diagnose_ir_or_passes(text, program, ins, dumped, requested)
    return check


def _tolerances(classes: list[list[str]] | None, n: int, policy: dict[str, Any]) -> list[Any]:
    if classes is None:
        return [class_tolerance([], **policy)] * n
    return [class_tolerance(classes[i] if i < len(classes) else [], **policy) for i in range(n)]


def _check(outs: dict[str, Any], dumped: dict[str, np.ndarray], classes: list[list[str]] | None,
           policy: dict[str, Any], title: str, extra: dict[str, Any]) -> ProgramCheck:
    reports = compare_outputs(outs, dumped, policy["max_ulp"],
                              _tolerances(classes, len(outs), policy))  # fmt: skip
    return ProgramCheck(reports, title, extra)


def _lowered_check(text: str, program: str, ins: dict[str, np.ndarray],
                   dumped: dict[str, np.ndarray], dump: str, flags: list[str], target: str,
                   hlo_passes: list[str] | None, policy: dict[str, Any], run_diagnosis: bool,
                   intermediates: str | None, source: str) -> ProgramCheck:
    from pyprecision import hlo
    from pyprecision.emulate import DEFAULT_HLO_PASSES, FlagSetRunner
    from pyprecision.frontend import parse_flags

    passes = list(DEFAULT_HLO_PASSES if hlo_passes is None else hlo_passes)
    config = parse_flags(flags)
    module = hlo.parse(text, filename=program)  # parsed once: the check and every flag set
    # no value memo: on every model measured it costs more than it reuses (decision V27)
    runner = FlagSetRunner(module, ins, target, hlo_passes=passes, filename=program, text=text,
                           source=source, share_values=False)  # fmt: skip
    run, _ = runner.run_one(config, strict=True)
    assert run.outputs is not None
    outs = as_outputs(run.outputs)
    requested = FlagSet(tuple(flags) + ("--target", target))
    extra: dict[str, Any] = {"program": program, "flags": flags, "target": target,
                             "hlo_passes": passes, "passes_changed": run.changed,
                             "unused_inputs": runner.bound.unused}
    classes = output_classes(runner.module)
    check = _check(outs, dumped, classes, policy,
                   f"verify: {program} [{requested.describe()}] vs {dump}", extra)
    if intermediates is not None:
        check.extra["divergence"] = _divergence(runner, config, target, intermediates, policy)
    if run_diagnosis and not check.ok:
        from pyprecision.verify.hlo_diagnose import diagnose_lowered

        check.diagnosis = diagnose_lowered(runner, text, program, ins, dumped, requested, config)
    return check


def _divergence(runner: Any, config: Any, target: str, path: str, policy: dict[str, Any]) -> Any:
    from pyprecision.verify.divergence import first_divergence

    compiled = runner.compile(config)
    memo: dict[int, frozenset[str]] = {}

    def tolerance_of(inst: Any) -> Any:
        return class_tolerance(upstream_transcendentals(inst, memo), **policy)

    return first_divergence(compiled, runner.bound.args, read_arrays(path), tolerance_of)


def _ir_unused(text: str, path: str, ins: dict[str, np.ndarray]) -> list[str]:
    from pyprecision import ir

    names = {t.name for t in ir.parse(text, filename=path).main.inputs}
    return [k for k in ins if k not in names]


def _ir_settings(program: str, family: str) -> list[FlagSet]:
    if is_hlo_path(program):
        import itertools

        from pyprecision.hlo import REGISTRY

        names = list(REGISTRY)
        subsets = itertools.chain.from_iterable(
            itertools.combinations(names, k) for k in range(len(names) + 1))
        return [FlagSet(("--passes", ",".join(s)) if s else ()) for s in subsets]
    from pyprecision.frontend import MODE_TABLE
    from pyprecision.passes import GENERATIONS

    sets = []
    for gen in GENERATIONS:
        for mode in MODE_TABLE:
            argv = mode_argv(mode, family)
            note = "" if argv[:1] == ["--fp32-cast"] else f"--fp32-cast {mode}"
            sets.append(FlagSet(tuple(argv) + ("--target", gen), note))
    return sets


def _diagnose_ir_or_passes(text: str, program: str, ins: dict[str, np.ndarray],
                           dumped: dict[str, np.ndarray], requested: FlagSet) -> ProgramDiagnosis:
    """The diagnosis of a .pir program (modes × generations) or of an HLO module as written (HLO
    pass subsets): parsed once, each setting on a copy, identical programs emulated once."""
    from pyprecision.frontend import parse_flags

    diag = ProgramDiagnosis(requested=requested)
    hlo_program = is_hlo_path(program)
    family = "auto-cast"
    if not hlo_program and requested.flags[:-2]:
        family = parse_flags(list(requested.flags[:-2])).source
    seen: dict[str, tuple[Any, FlagSet]] = {}
    rows = []
    for setting in _ir_settings(program, family):
        try:
            if hlo_program:
                names = setting.flags[1].split(",") if setting.flags else []
                outs, same = hlo_outputs(text, program, ins, names), None
            else:
                outs, same = _run_ir_setting(text, program, setting, ins, seen)
        except (EmulationError, DumpError) as exc:
            rows.append(rank_outputs(setting, None, dumped, compare_outputs, str(exc)))
            continue
        rows.append(rank_outputs(setting, outs, dumped, compare_outputs, same_as=same))
    diag.add(rows)
    diag.emulations = len(seen) if not hlo_program else diag.tried
    return diag


def _run_ir_setting(text: str, program: str, setting: FlagSet, ins: dict[str, np.ndarray],
                    seen: dict[str, tuple[Any, FlagSet]]) -> tuple[Any, FlagSet | None]:
    """One setting of a .pir program (parsed afresh: a deep copy of an IR module would copy its
    dtype singletons, which the passes compare by identity); an identical program after the
    passes is not emulated again."""
    from pyprecision import ir
    from pyprecision.emulate import run_ir
    from pyprecision.frontend import parse_flags
    from pyprecision.passes import run_pipeline
    from pyprecision.verify.program_check import _ir_space, as_logical

    module = ir.parse(text, filename=program)
    run_pipeline(module, parse_flags(list(setting.flags[:-2])), setting.flags[-1])
    key = ir.to_text(module)
    if key in seen:
        return seen[key][0], seen[key][1]
    f = module.main
    types = {t.name: np.dtype(t.dtype.np_dtype) for t in f.inputs}
    raw = run_ir(module, {k: as_logical(v, types[k]) for k, v in ins.items() if k in types})
    spaces = {t.name: _ir_space(t.dtype) for t in f.outputs}
    outs = {name: (np.asarray(arr), spaces[name]) for name, arr in raw.items()}
    seen[key] = (outs, setting)
    return outs, None
