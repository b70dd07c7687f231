"""The numeric-legalization pipeline: AutoCast → DTypeMutator → cast elimination, verified after the
passes (between them with ``PYPRECISION_VERIFY_EACH_PASS=1``; decision P20), reporting every
statistic."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyprecision.frontend import MODE_TABLE, PrecisionConfig
from pyprecision.ir import Function, Module, paused_gc, to_text, verify
from pyprecision.pass_manager import run_pass_sequence, verify_after_passes
from pyprecision.passes.statistics import Statistics, snapshot
from pyprecision.passes.target import Target, relayout_token

#: every PrecisionConfig field the precision passes read (through :func:`pipeline_pass_names` and
#: ``Target.from_config``); :func:`pipeline_key` is made of these and the target alone (decision
#: P22; ``tests/passes/test_pipeline_key.py`` fails when a pass run reads any other field)
PIPELINE_FIELDS = ("fp32_cast_mode", "fast_math", "internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3")


def pipeline_pass_names(config: PrecisionConfig | str) -> list[str]:
    """The passes the pipeline runs for a mode: none for scope ``none``; AutoCastFP32 for the all-*
    modes and AutoCastTCInputs for the matmult-* modes, each followed by DTypeMutator and cast
    elimination. With ``--experimental-unsafe-fp8e4m3fn-as-fp8e4m3`` the fp8e4m3fn relabelling runs
    first, whatever the mode (decision P16)."""
    mode = config if isinstance(config, str) else config.fp32_cast_mode
    unsafe_fp8 = not isinstance(config, str) and config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3
    names = ["fp8e4m3fn-as-fp8e4"] if unsafe_fp8 else []
    scope = MODE_TABLE[mode].scope if mode in MODE_TABLE else "none"
    if scope == "none":
        return names
    first = "auto-cast-fp32" if scope == "all" else "auto-cast-tc-inputs"
    return [*names, first, "dtype-mutator", "cast-elimination"]


def pipeline_key(config: PrecisionConfig, target: str = "gen2") -> tuple[Any, ...]:
    """What of ``config`` and ``target`` the precision passes read (decision P22): the passes that
    run (:func:`pipeline_pass_names`), the generation (DTypeMutator's DMA cast, the PE's operand
    dtypes), and of the mode what those passes ask: nothing for scope ``none`` (no pass reads
    it), the mode for scope ``all`` (AutoCastFP32's cascade; no pass there asks for a transpose
    dtype), the mode's matmul dtype and the transpose dtype (the relayout token's, else the
    mode's) for scope ``matmult`` (AutoCastTCInputs' ``get_matmult_operand_type``, decision
    P32). An unknown mode is its own key (``Target.from_config`` refuses it). Equal keys on equal
    IR: the same program, statistics and errors."""
    mode = config.fp32_cast_mode
    names = tuple(pipeline_pass_names(config))
    if mode not in MODE_TABLE:
        return (target, names, "unknown", mode)
    row = MODE_TABLE[mode]
    if row.scope == "none":
        return (target, names)
    if row.scope == "all":
        return (target, names, mode)
    # AutoCastTCInputs reads the mode's row only (P32): ``matmult`` and ``matmult-bf16`` with one
    # relayout token are one program
    return (target, names, row.scope, row.dtype, relayout_token(config) or row.transpose_dtype)


def run_passes(unit: Module | Function, passes: Sequence[Any], *, each: bool | None = None,
               final: bool = True) -> dict[str, bool]:
    """Run ``passes`` in order, verifying after the last (before the first and after each with
    ``each``; None: ``PYPRECISION_VERIFY_EACH_PASS``); returns name → changed.

    A broken IR raises VerifyError naming the passes (with ``each``: the pass), with the printed
    IR attached as a note; an unexpected exception inside a pass becomes a PassError with the IR
    as the pass left it (the shared manager, :func:`pyprecision.pass_manager.run_pass_sequence`).
    """
    return run_pass_sequence(unit, passes, verify=verify, to_text=to_text, label="IR", each=each,
                             final=final)  # fmt: skip


def verify_pipeline_result(unit: Module | Function, config: PrecisionConfig | str) -> None:
    """The verification :func:`run_pipeline` with ``verify_after=False`` left out, with its error
    (``VerifyError("after passes ...")``, the IR as a note); nothing when ``config`` runs no pass
    (decision P31)."""
    names = pipeline_pass_names(config)
    if names:
        verify_after_passes(unit, names, verify=verify, to_text=to_text, label="IR")


def run_pipeline(
    module: Module | Function,
    config: PrecisionConfig | str,
    target: str | Target = "gen2",
    passes: Sequence[Any] | None = None,
    provenance: list[Any] | None = None,
    verify_each: bool | None = None,
    verify_after: bool = True,
) -> Statistics:
    """Run the pipeline for ``config`` (a PrecisionConfig or a bare fp32-cast mode) on ``module`` in
    place and return what every registered statistic gained, plus which passes changed it.
    With ``provenance`` (a list), the passes built here append their decisions to it.
    ``verify_each``: see :func:`run_passes` (``each``). ``verify_after`` False leaves out the
    verification after the last pass: the caller runs :func:`verify_pipeline_result` before it
    uses the module (decision P31: a search verifies only the programs it emulates)."""
    from pyprecision.passes.registry import make_pass

    tgt = target if isinstance(target, Target) else Target.from_config(config, target)
    if passes is None:
        passes = [make_pass(name, tgt, provenance) for name in pipeline_pass_names(config)]
    before = snapshot()
    with paused_gc(keep=True):  # decisions P24, P34
        changed = run_passes(module, passes, each=verify_each, final=verify_after)
    return Statistics(before, snapshot(), changed)
