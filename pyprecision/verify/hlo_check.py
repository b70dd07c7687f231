"""HLO programs through neuronx-cc's whole pipeline for ``verify --program``: arguments from an
inputs .npz (the one binder, ``emulate.bind_arguments``), the emulated outputs under precision
flags, the flag sets the diagnosis searches (spelled as the user spells flags), and the XLA:CPU
excess-precision check."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from pyprecision.verify.compare import code_space

__all__ = ["DIAGNOSIS_AXES", "diagnosis_flag_sets", "hlo_arguments", "lowered_outputs",
           "mode_argv", "uses_low_precision_floats"]  # fmt: skip

#: what the diagnosis varies for an HLO program: the mode, the relayout token, the accumulation
MODES = ["none", "matmult", "matmult-bf16", "matmult-fp16", "matmult-fp32r", "matmult-fp8e4",
         "all", "experimental-all-fp16", "all-fp32r", "all-fp8e4"]  # fmt: skip
RELAYOUTS: list[str | None] = [None, "no-fast-relayout", "fast-relayout-fp8e4"]
ACCUMULATION = [True, False]
DIAGNOSIS_AXES: dict[str, list[Any]] = {"mode": MODES, "relayout": RELAYOUTS,
                                        "accumulation": ACCUMULATION}  # fmt: skip
#: flags the diagnosis does not vary: a set keeps the ones the user gave
_KEPT = (("enable_saturate_infinity", "--enable-saturate-infinity"),
         ("enable_internal_native_int64", "--enable-internal-native-int64"),
         ("internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3",
          "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"))  # fmt: skip


def hlo_arguments(module: Any, inputs: dict[str, np.ndarray], source: str = "inputs"
                  ) -> list[np.ndarray]:
    """ENTRY arguments in parameter order from arrays keyed ``arg<n>``, ``in<n>`` or the parameter
    name (raw bits of bf16/fp8 parameters allowed; narrower floats widened exactly), checked by
    ``emulate.bind_arguments``; an error starts with ``source`` (the file the arrays came from)."""
    from pyprecision.emulate import bind_arguments

    return bind_arguments(module, inputs, source=source, widen=True).args


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
    return as_outputs(results), changed


def as_outputs(results: list[Any]) -> dict[str, tuple[np.ndarray, Any]]:
    """``{"out<i>": (array, code space)}`` of a module's results."""
    out = {}
    for i, arr in enumerate(results):
        a = np.asarray(arr)
        out[f"out{i}"] = (a, code_space(a.dtype))
    return out


def mode_argv(mode: str, family: str) -> list[str]:
    """The flags that select ``--fp32-cast`` ``mode`` in the user's ``family`` (a config's
    ``source``: ``auto-cast``, ``fp32-cast`` or ``fast-math``): ``--auto-cast matmult`` for
    matmult-bf16 (``--auto-cast-type bf16``, the default, left out), ``--fast-math
    fp32-cast-<mode>`` where that token exists; a mode the family cannot reach (e.g. the bare
    ``matmult`` from ``--auto-cast``) in ``--fp32-cast``."""
    from pyprecision.frontend import (
        FAST_MATH_CHOICES,
        USER_SPELLING,
        mode_to_pair,
        pair_to_mode,
    )

    scope, dtype = mode_to_pair(mode)
    if family == "fast-math" and f"fp32-cast-{mode}" in FAST_MATH_CHOICES:
        return ["--fast-math", f"fp32-cast-{mode}"]
    if family in ("auto-cast", "fast-math") and pair_to_mode(scope, dtype) == mode:
        argv = ["--auto-cast", scope]
        if scope != "none" and dtype != "bf16":
            argv += ["--auto-cast-type", USER_SPELLING[dtype]]
        return argv
    return ["--fp32-cast", mode]


def _join_fast_math(argv: list[str]) -> list[str]:
    """One ``--fast-math`` with every token (argparse keeps only the last of several)."""
    tokens: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--fast-math":
            i += 1
            while i < len(argv) and not argv[i].startswith("--"):
                tokens.append(argv[i])
                i += 1
            continue
        out.append(argv[i])
        i += 1
    return out + (["--fast-math", *tokens] if tokens else [])


def diagnosis_flag_sets(requested: Any = None) -> list[tuple[list[str], Any]]:
    """Every flag set the diagnosis tries for an HLO program (modes × relayout × accumulation) as
    ``(argv, config)`` with ``config == parse_flags(argv)``: spelled in the family of
    ``requested`` (a PrecisionConfig; ``--auto-cast`` by default), keeping the flags it does not
    vary; sets that parse to the same config are tried once."""
    from pyprecision.frontend import parse_flags

    family = getattr(requested, "source", "auto-cast")
    kept = [flag for attr, flag in _KEPT if requested is not None and getattr(requested, attr)]
    sets: list[tuple[list[str], Any]] = []
    seen = set()
    for mode, relayout, acc in itertools.product(MODES, RELAYOUTS, ACCUMULATION):
        argv = mode_argv(mode, family) + kept
        if relayout:
            argv += ["--fast-math", relayout]
        if not acc:
            argv.append("--disable-mixed-precision-accumulation")
        argv = _join_fast_math(argv)
        config = parse_flags(argv)
        if config in seen:
            continue
        seen.add(config)
        sets.append((argv, config))
    if family != "fp32-cast":  # ties go to the spelling the user typed: those sets first
        sets.sort(key=lambda s: s[0][:1] == ["--fp32-cast"])
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
