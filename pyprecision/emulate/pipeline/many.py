"""Many flag sets on one HLO module and one set of inputs, sharing the work (issue 27): the module
is parsed (by the caller), taken through the HLO passes and bound to the inputs once; flag sets whose
precision passes produce the same loop IR are emulated once (decision V22).

This is the engine of ``verify``'s diagnosis and of anything else that searches over flags: give
it the configs, get one :class:`FlagSetRun` per config, in order.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision import hlo, ir, lower
from pyprecision.emulate.pipeline.bind import bind_arguments
from pyprecision.emulate.pipeline.driver import DEFAULT_HLO_PASSES, CompiledHlo, run_compiled
from pyprecision.errors import EmulationError, LoweringError, PassError, VerifyError
from pyprecision.frontend import PrecisionConfig
from pyprecision.passes import run_pipeline

__all__ = ["FlagSetRun", "FlagSetRunner", "SharedRuns", "run_flag_sets"]

#: what one flag set may fail with without stopping the others
SET_ERRORS: tuple[type[Exception], ...] = (EmulationError, LoweringError, PassError,
                                               VerifyError)  # fmt: skip


@dataclass
class FlagSetRun:
    """One config's result: the outputs in HLO result order (None with ``error``), the index of
    the earlier config whose identical IR was emulated for it (``same_as``), and the precision
    passes that changed the program."""

    config: PrecisionConfig
    outputs: list[np.ndarray] | None
    error: str | None = None
    same_as: int | None = None
    changed: list[str] = field(default_factory=list)


@dataclass
class SharedRuns:
    """Every config's run, the input arrays no parameter took, and what was shared: how many
    lowerings and emulations were done for ``len(runs)`` configs."""

    runs: list[FlagSetRun]
    unused_inputs: list[str]
    lowerings: int
    emulations: int


def _ir_key(module: ir.Module) -> bytes:
    """A digest of the printed IR (constants' bytes included) with the ``narrow_acc`` flags that
    change nothing left out: equal digests, equal programs (decision V22)."""
    inert = [i for f in module.functions for i in f.instructions()
             if getattr(i, "narrow_acc", False) and narrow_acc_is_inert(i)]
    for inst in inert:
        inst.narrow_acc = False  # type: ignore[attr-defined]
    try:
        text = ir.to_text(module)
    finally:
        for inst in inert:
            inst.narrow_acc = True  # type: ignore[attr-defined]
    return hashlib.blake2b(text.encode("utf-8"), digest_size=32).digest()


def narrow_acc_is_inert(inst: Any) -> bool:
    """Whether an instruction's ``narrow_acc`` flag leaves its accumulation dtype as it is: the
    accumulation is float32 either way (reduce: the operand's dtype when narrow, else float32 for
    floats; select-and-scatter and scatter: the result dtype when narrow, else float32 for floats,
    scatter only for add/mul)."""
    if isinstance(inst, ir.ReduceOp):
        dt = inst.data.dtype
    elif isinstance(inst, ir.ScatterOp):
        if inst.kind not in ("add", "mul"):
            return True
        dt = inst.result.dtype  # type: ignore[union-attr]
    elif isinstance(inst, ir.SelectAndScatterOp):
        dt = inst.result.dtype  # type: ignore[union-attr]
    else:
        return False
    return dt is ir.float32 or not dt.is_float


class FlagSetRunner:
    """One HLO module and one set of inputs, ready to run under many configs: the HLO passes and
    the binding are done once here; lowerings and emulated outputs are kept across ``run`` calls
    (so a second call with an already-run program emulates nothing). ``module`` is not changed."""

    def __init__(
        self,
        module: Any,
        inputs: Mapping[str, Any] | Sequence[Any],
        target: str = "gen2",
        *,
        hlo_passes: tuple[str, ...] | list[str] = DEFAULT_HLO_PASSES,
        filename: str | None = None,
        text: str | None = None,
        source: str = "inputs",
    ) -> None:
        self.module = copy.deepcopy(module)
        if hlo_passes:
            hlo.run_passes(self.module, list(hlo_passes))
        self.bound = bind_arguments(self.module, inputs, source=source, widen=True)
        self.target, self.filename, self.text = target, filename, text
        self.lowered = 0
        self._emulated: dict[bytes, tuple[list[np.ndarray] | None, Exception | None]] = {}
        self.emulations = 0

    def _lower(self, config: PrecisionConfig) -> lower.Lowered | Exception:
        """A fresh lowering (an IR module has no copy, and printing and re-parsing one costs more
        than lowering again: decision V22)."""
        self.lowered += 1
        try:
            return lower.lower(self.module, filename=self.filename, text=self.text, config=config)
        except SET_ERRORS as exc:
            return exc

    def compile(self, config: PrecisionConfig) -> CompiledHlo:
        """The module lowered and through the precision passes of ``config`` (errors raise), for
        a run of one's own (e.g. with a trace)."""
        base = self._lower(config)
        if isinstance(base, Exception):
            raise base
        stats = run_pipeline(base.module, config, self.target)
        return CompiledHlo(self.module, base, stats, config, self.target)

    def run_one(self, config: PrecisionConfig, strict: bool = False
                ) -> tuple[FlagSetRun, bytes | None]:
        """One config: its run, and the digest of its program (None when it did not compile).
        With ``strict`` a failure raises instead of being recorded in the run."""
        base = self._lower(config)
        if isinstance(base, Exception):
            if strict:
                raise base
            return FlagSetRun(config, None, error=str(base)), None
        mine = base
        try:
            stats = run_pipeline(mine.module, config, self.target)
        except SET_ERRORS as exc:
            if strict:
                raise
            return FlagSetRun(config, None, error=str(exc)), None
        changed = [n for n, c in stats.changed.items() if c]
        digest = _ir_key(mine.module)
        same_as = -1 if digest in self._emulated else None
        if same_as is None:
            self.emulations += 1
            try:
                result = run_compiled(CompiledHlo(self.module, mine, stats, config, self.target),
                                      self.bound.args)  # fmt: skip
                self._emulated[digest] = (result, None)
            except SET_ERRORS as exc:
                self._emulated[digest] = (None, exc)
        outs, err = self._emulated[digest]
        if err is not None and strict:
            raise err
        return FlagSetRun(config, outs, None if err is None else str(err), same_as,
                          changed), digest

    def run(self, configs: Sequence[PrecisionConfig]) -> SharedRuns:
        """Every config, in order; ``same_as`` names the earlier config of this call whose
        program was the same (-1: one emulated by an earlier call)."""
        runs: list[FlagSetRun] = []
        first: dict[bytes, int] = {}
        before = self.emulations
        for i, config in enumerate(configs):
            run, digest = self.run_one(config)
            if digest is not None:
                if digest in first:
                    run.same_as = first[digest]
                else:
                    first[digest] = i
            runs.append(run)
        return SharedRuns(runs, self.bound.unused, self.lowered, self.emulations - before)


def run_flag_sets(
    module: Any,
    configs: Sequence[PrecisionConfig],
    inputs: Mapping[str, Any] | Sequence[Any],
    target: str = "gen2",
    *,
    hlo_passes: tuple[str, ...] | list[str] = DEFAULT_HLO_PASSES,
    filename: str | None = None,
    text: str | None = None,
    source: str = "inputs",
) -> SharedRuns:
    """Run every config of ``configs`` on ``inputs`` (bound by ``bind_arguments`` against the
    module after ``hlo_passes``), sharing the HLO passes, the lowerings and identical emulations
    (see :class:`FlagSetRunner`); ``module`` is not changed. A config that fails (lowering,
    passes, emulation) gets its ``error``; the others still run. Bad inputs raise at once (they
    are bad for every config)."""
    runner = FlagSetRunner(module, inputs, target, hlo_passes=hlo_passes, filename=filename,
                           text=text, source=source)  # fmt: skip
    return runner.run(configs)
