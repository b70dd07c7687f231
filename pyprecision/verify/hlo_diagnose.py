"""The diagnosis of an HLO dump: which neuronx-cc flag set (mode × relayout × accumulation)
reproduces it, and whether it is an XLA:CPU dump made with excess precision."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from pyprecision.errors import DumpError, EmulationError
from pyprecision.verify.compare import code_space
from pyprecision.verify.hlo_check import as_outputs, diagnosis_flag_sets, uses_low_precision_floats
from pyprecision.verify.program_check import (
    FlagSet,
    compare_outputs,
    hlo_outputs,
    total_mismatches,
)
from pyprecision.verify.ranking import ProgramDiagnosis, rank_outputs

__all__ = ["EXCESS_PRECISION_NOTE", "diagnose_lowered", "excess_precision_outputs"]

EXCESS_PRECISION_NOTE = (
    "the dump matches XLA:CPU's excess precision (bf16/f16 ops computed in f32, rounded only at the "
    "end): it was made by XLA:CPU, not by a Neuron device; for a comparable dump set "
    "XLA_FLAGS=--xla_allow_excess_precision=false or dump the compiled module"
)


def diagnose_lowered(
    runner: Any,
    text: str,
    program: str,
    ins: dict[str, np.ndarray],
    dumped: dict[str, np.ndarray],
    requested: FlagSet,
    requested_config: Any,
) -> ProgramDiagnosis:
    """Try every flag set of ``diagnosis_flag_sets`` with ``runner`` (an
    ``emulate.FlagSetRunner``: parsed, bound and lowered once, identical programs emulated once),
    rank them by distance to the dump, name them in the spelling of ``requested_config``, and
    say when the dump is XLA:CPU's excess-precision result."""
    diag = ProgramDiagnosis(requested=requested)
    sets = diagnosis_flag_sets(requested_config)
    shared = runner.run([config for _, config in sets])
    rows = []
    for (argv, _), run in zip(sets, shared.runs, strict=True):
        same = None
        if run.same_as is not None and run.same_as >= 0:
            same = FlagSet(tuple(sets[run.same_as][0]))
        outs = as_outputs(run.outputs) if run.outputs is not None else None
        rows.append(rank_outputs(FlagSet(tuple(argv)), outs, dumped, compare_outputs, run.error,
                                 same))  # fmt: skip
    diag.add(rows)
    diag.emulations = shared.emulations
    diag.given = next((row for (_, config), row in zip(sets, rows, strict=True)
                       if config == requested_config), None)
    if diag.exact is None and uses_low_precision_floats(text, program):
        try:
            excess = excess_precision_outputs(text, program, ins, dumped)
        except (EmulationError, DumpError):
            excess = None
        if excess is not None and total_mismatches(excess, dumped) == 0:
            diag.notes.append(EXCESS_PRECISION_NOTE)
    return diag


def excess_precision_outputs(
    text: str, program: str, ins: dict[str, np.ndarray], dumped: dict[str, np.ndarray]
) -> dict[str, tuple[np.ndarray, Any]]:
    """What XLA:CPU computes with excess precision: the module with every float op in f32
    (upcast-all-to-fp32), each output rounded once (RNE) to the dump's dtype."""
    outs = hlo_outputs(text, program, ins, ["upcast-all-to-fp32"])
    result = {}
    for name, (arr, space) in outs.items():
        want = dumped.get(name)
        a = np.asarray(arr)
        if want is not None and a.dtype == np.float32 and want.dtype != a.dtype:
            dt = np.asarray(want).dtype
            if dt.kind == "u" and dt.itemsize == 2:  # raw bf16 bits without a side table
                dt = np.dtype(ml_dtypes.bfloat16)
            with np.errstate(over="ignore"):  # past the range RNE gives ±inf, as XLA
                a = a.astype(dt)
            space = code_space(a.dtype)
        result[name] = (a, space)
    return result
