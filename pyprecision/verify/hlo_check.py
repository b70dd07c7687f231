"""HLO programs through neuronx-cc's whole pipeline for ``verify --program``: arguments from an
inputs .npz, the emulated outputs under precision flags, the flag sets the diagnosis searches, and the
XLA:CPU excess-precision check."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from pyprecision.errors import EmulationError
from pyprecision.verify.compare import code_space

__all__ = ["DIAGNOSIS_AXES", "diagnosis_flag_sets", "hlo_arguments", "lowered_outputs",
           "uses_low_precision_floats"]  # fmt: skip

#: what the diagnosis varies for an HLO program: the mode, the relayout token, the accumulation
MODES = ["none", "matmult", "matmult-bf16", "matmult-fp16", "matmult-fp32r", "matmult-fp8e4",
         "all", "experimental-all-fp16", "all-fp32r", "all-fp8e4"]  # fmt: skip
RELAYOUTS: list[str | None] = [None, "no-fast-relayout", "fast-relayout-fp8e4"]
ACCUMULATION = [True, False]
DIAGNOSIS_AXES: dict[str, list[Any]] = {"mode": MODES, "relayout": RELAYOUTS,
                                        "accumulation": ACCUMULATION}  # fmt: skip


def hlo_arguments(module: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """ENTRY arguments in parameter order from arrays keyed ``arg<n>``, ``in<n>`` or the parameter
    name (raw bits of bf16/fp8 parameters allowed)."""
    from pyprecision import hlo
    from pyprecision.verify.program_check import as_logical

    args = []
    for p in sorted(module.entry.parameters, key=lambda q: q.parameter_number or 0):
        n = p.parameter_number
        key = next((k for k in (f"arg{n}", f"in{n}", p.name) if k in inputs), None)
        if key is None:
            raise EmulationError(f"no input for parameter {n} '{p.name}' (expected key arg{n}, "
                                 f"in{n} or {p.name})")  # fmt: skip
        if p.shape.is_tuple:
            raise EmulationError(f"parameter '{p.name}' has a tuple shape; give its leaves")
        args.append(as_logical(inputs[key], np.dtype(hlo.numpy_dtype(p.shape.element_type))))
    return args


def lowered_outputs(
    text: str,
    path: str,
    inputs: dict[str, np.ndarray],
    flags: list[str],
    target: str,
    hlo_passes: list[str] | None = None,
) -> tuple[dict[str, tuple[np.ndarray, Any]], list[str]]:
    """The module through the HLO passes (``hlo_passes``, default neuronx-cc's), the lowering, the
    precision passes ``flags`` choose and the loop-IR emulation: ``({"out<i>": (array, code
    space)}, names of the passes that changed the program)``."""
    from pyprecision import hlo
    from pyprecision.emulate import DEFAULT_HLO_PASSES, compile_hlo, run_compiled
    from pyprecision.frontend import parse_flags

    module = hlo.parse(text, filename=path)
    passes = DEFAULT_HLO_PASSES if hlo_passes is None else tuple(hlo_passes)
    compiled = compile_hlo(module, parse_flags(flags), target, hlo_passes=passes, filename=path,
                           text=text)  # fmt: skip
    results = run_compiled(compiled, hlo_arguments(compiled.hlo_module, inputs))
    changed = [n for n, c in (compiled.statistics.changed.items() if compiled.statistics else [])
               if c]  # fmt: skip
    out = {}
    for i, arr in enumerate(results):
        a = np.asarray(arr)
        out[f"out{i}"] = (a, code_space(a.dtype))
    return out, changed


def diagnosis_flag_sets() -> list[list[str]]:
    """Every flag set the diagnosis tries for an HLO program (modes × relayout × accumulation), in
    spellings the CLI accepts."""
    from pyprecision.frontend import config_to_argv, parse_flags

    sets = []
    for mode, relayout, acc in itertools.product(MODES, RELAYOUTS, ACCUMULATION):
        argv = ["--fp32-cast", mode]
        if relayout:
            argv += ["--fast-math", relayout]
        if not acc:
            argv.append("--disable-mixed-precision-accumulation")
        sets.append(config_to_argv(parse_flags(argv)))
    return sets


def uses_low_precision_floats(text: str, path: str) -> bool:
    """The module computes on bf16 or f16 values (where XLA:CPU's excess precision applies)."""
    from pyprecision import hlo

    m = hlo.parse(text, filename=path)
    low = {"bf16", "f16"}
    return any(
        not i.shape.is_tuple and hlo.type_name(i.shape.element_type) in low
        and i.opcode not in ("parameter", "constant", "convert", "tuple", "get-tuple-element")
        for i in m.all_instructions()
    )  # fmt: skip
