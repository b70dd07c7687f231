"""The whole neuronx-cc numeric pipeline on an HLO module: HLO passes → lowering to the loop IR →
the precision passes the flags choose (AutoCast family, DTypeMutator, cast elimination) → loop-IR
emulation on the user's inputs."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision import hlo, lower
from pyprecision.emulate.ir.eval import run_ir
from pyprecision.errors import EmulationError
from pyprecision.frontend import PrecisionConfig
from pyprecision.passes import Statistics, run_pipeline

__all__ = ["DEFAULT_HLO_PASSES", "CompiledHlo", "compile_hlo", "relabelled_inputs", "run_compiled",
           "run_hlo_pipeline"]

#: the HLO passes neuronx-cc runs by default (spec 004); upcast-all-to-fp32 only when asked
DEFAULT_HLO_PASSES = ("batch-norm-training-upcast", "neuron-int-matmul-downcast")


@dataclass
class CompiledHlo:
    """An HLO module taken through the pipeline: the HLO after its passes, the lowering (whose IR
    module the precision passes have rewritten) and what the passes reported."""

    hlo_module: Any
    lowered: lower.Lowered
    statistics: Statistics | None
    config: PrecisionConfig | None
    target: str


def compile_hlo(
    module: Any,
    config: PrecisionConfig | None,
    target: str = "gen2",
    *,
    hlo_passes: tuple[str, ...] | list[str] = DEFAULT_HLO_PASSES,
    filename: str | None = None,
    text: str | None = None,
    provenance: list[Any] | None = None,
) -> CompiledHlo:
    """Run the HLO passes on a copy of ``module``, lower it, and (with a ``config``) run the
    precision passes on the loop IR; ``module`` itself is never changed."""
    m = copy.deepcopy(module)
    if hlo_passes:
        hlo.run_passes(m, list(hlo_passes))
    lowered = lower.lower(m, filename=filename, text=text, config=config)
    stats = None
    if config is not None:
        if config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3:
            lowered.notes.extend(relabelled_constants(lowered))
        stats = run_pipeline(lowered.module, config, target, provenance=provenance)
    return CompiledHlo(m, lowered, stats, config, target)


def relabelled_constants(lowered: lower.Lowered) -> list[str]:
    """What --experimental-unsafe-fp8e4m3fn-as-fp8e4m3 does to the e4m3fn constants: how many of
    their elements change meaning when their bytes are read as fp8e4."""
    from pyprecision import ir
    from pyprecision.kernel import reinterpret

    notes = []
    for t in lowered.function.tensors:
        if t.is_const and t.dtype is ir.float8e4m3fn and t.value is not None:
            codes = np.asarray(t.value).reshape(-1).view(np.uint8)
            _, report = reinterpret(codes, "fp8e4m3fn", "fp8e4")
            notes.append(f"@{t.name} (float8e4m3fn constant) read as fp8e4: {report}")
    return notes


def relabelled_inputs(compiled: CompiledHlo, args: list[Any]) -> list[str]:
    """The same count for the f8e4m3fn arguments of one run (empty without the flag)."""
    from pyprecision.kernel import reinterpret

    cfg = compiled.config
    if cfg is None or not cfg.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3:
        return []
    notes = []
    params = sorted(compiled.hlo_module.entry.parameters, key=lambda p: p.parameter_number or 0)
    for p, a in zip(params, args, strict=False):
        if not p.shape.is_tuple and hlo.type_name(p.shape.element_type) == "f8e4m3fn":
            codes = np.ascontiguousarray(np.asarray(a)).reshape(-1).view(np.uint8)
            _, report = reinterpret(codes, "fp8e4m3fn", "fp8e4")
            notes.append(f"parameter {p.name} (f8e4m3fn) read as fp8e4: {report}")
    return notes


def run_compiled(
    compiled: CompiledHlo, args: list[Any], trace: dict[int, np.ndarray] | None = None
) -> list[np.ndarray]:
    """Emulate the compiled program on ``args`` (the ENTRY parameters in order; tuple parameters
    as tuples); outputs in HLO result order, in the HLO result element types. ``trace``: see
    ``run_ir``. The IR is not verified again: the lowering and every precision pass verified it
    when ``compile_hlo`` made it (so a run costs no verifier pass)."""
    entry = compiled.hlo_module.entry
    params = sorted(entry.parameters, key=lambda p: p.parameter_number or 0)
    if len(args) != len(params):
        raise EmulationError(f"ENTRY {entry.name} takes {len(params)} parameter(s), "
                             f"got {len(args)} input(s)")  # fmt: skip
    flat: list[np.ndarray] = []
    for p, a in zip(params, args, strict=True):
        _flatten_arg(p.shape, a, flat, p.name)
    fn = compiled.lowered.function
    names = compiled.lowered.inputs
    inputs = {}
    for name, a in zip(names, flat, strict=True):
        t = fn.get_tensor(name)
        inputs[name] = a.reshape(t.shape)
    outs = run_ir(compiled.lowered.module, inputs, check=False, trace=trace)
    leaves = _result_leaves(entry.root.shape)
    return [_to_hlo(outs[n], s) for n, s in zip(compiled.lowered.outputs, leaves, strict=True)]


def run_hlo_pipeline(
    module: Any, args: list[Any], config: PrecisionConfig, target: str = "gen2"
) -> list[np.ndarray]:
    """``compile_hlo`` then ``run_compiled``."""
    return run_compiled(compile_hlo(module, config, target), args)


def _flatten_arg(shape: Any, a: Any, out: list[np.ndarray], what: str) -> None:
    if shape.is_tuple:
        if not isinstance(a, (tuple, list)) or len(a) != len(shape.tuple_shapes):
            raise EmulationError(f"parameter {what}: expected a tuple of {len(shape.tuple_shapes)}")
        for i, (s, x) in enumerate(zip(shape.tuple_shapes, a, strict=True)):
            _flatten_arg(s, x, out, f"{what}[{i}]")
        return
    arr = np.asarray(a)
    if tuple(arr.shape) != tuple(shape.dimensions):
        raise EmulationError(f"parameter {what}: expected shape {list(shape.dimensions)}, got "
                             f"{list(arr.shape)}")  # fmt: skip
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    out.append(arr)


def _result_leaves(shape: Any) -> list[Any]:
    if shape.is_tuple:
        return [x for s in shape.tuple_shapes for x in _result_leaves(s)]
    return [shape]


def _to_hlo(x: np.ndarray, shape: Any) -> np.ndarray:
    """An IR output (possibly narrowed at the boundary by AutoCastFP32) in the HLO result type:
    widening is exact; a narrowed output was already rounded by the program."""
    want = hlo.numpy_dtype(shape.element_type)
    y = np.asarray(x).reshape(tuple(shape.dimensions))
    if want == np.bool_:
        return y != 0
    if y.dtype == want:
        return y
    return y.astype(want)
