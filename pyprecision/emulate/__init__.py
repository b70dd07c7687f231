"""Execute loop-level IR functions and HLO modules on NumPy data, rounding every result to its dtype
through the cast core."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names __getattr__ provides, for type checkers
    from pyprecision.emulate.hlo.limits import Limits
    from pyprecision.emulate.ir.eval import SparseTrace, TraceComplete, run_ir
    from pyprecision.emulate.pipeline.bind import Bound, as_logical, bind_arguments
    from pyprecision.emulate.pipeline.driver import (
        DEFAULT_HLO_PASSES,
        CompiledHlo,
        compile_hlo,
        relabelled_inputs,
        run_compiled,
    )
    from pyprecision.emulate.pipeline.forked import Forked, can_fork, forked
    from pyprecision.emulate.pipeline.many import (
        SET_ERRORS,
        FlagSetRun,
        FlagSetRunner,
        Program,
        SharedRuns,
        run_flag_sets,
    )

__all__ = ["DEFAULT_HLO_PASSES", "SET_ERRORS", "Bound", "CompiledHlo", "FlagSetRun", "FlagSetRunner",
           "Forked", "Limits", "Program", "SharedRuns", "SparseTrace", "TraceComplete", "as_logical",
           "bind_arguments", "can_fork", "compile_hlo", "forked", "relabelled_inputs",
           "run_compiled", "run_flag_sets", "run_hlo", "run_ir"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the IR evaluator must not pull in the HLO layer and vice versa.
    if name in ("run_ir", "SparseTrace", "TraceComplete"):
        from pyprecision.emulate.ir import eval as ir_eval

        return getattr(ir_eval, name)
    if name in ("compile_hlo", "run_compiled", "DEFAULT_HLO_PASSES", "CompiledHlo",
                "relabelled_inputs"):
        from pyprecision.emulate.pipeline import driver as hlo_pipeline

        return getattr(hlo_pipeline, name)
    if name in ("Bound", "as_logical", "bind_arguments"):
        from pyprecision.emulate.pipeline import bind

        return getattr(bind, name)
    if name in ("FlagSetRun", "FlagSetRunner", "Program", "SET_ERRORS", "SharedRuns",
                "run_flag_sets"):
        from pyprecision.emulate.pipeline import many

        return getattr(many, name)
    if name in ("Forked", "can_fork", "forked"):
        from pyprecision.emulate.pipeline import forked as fork

        return getattr(fork, name)
    if name == "Limits":
        from pyprecision.emulate.hlo.limits import Limits

        return Limits
    raise AttributeError(name)


def run_hlo(
    module: Any, args: list[Any], config: Any = None, target: str = "gen2", limits: Any = None,
    threads: int | None = None,
) -> list[Any]:
    """Evaluate an HLO module on ``args`` (its ENTRY parameters in order); outputs in HLO result order.

    ``config=None`` evaluates the HLO as written (every op rounded to its element type), within
    ``limits`` (an ``emulate.Limits``: while iterations, wall time, call depth, result bytes). With a
    ``PrecisionConfig`` (``pyprecision.frontend.parse_flags(argv)``) the whole neuronx-cc pipeline
    runs: HLO passes → lowering to the loop IR → AutoCast family → DTypeMutator → cast elimination
    → loop-IR emulation, for ``target`` (gen2/gen3/gen4). ``threads`` caps the C core's worker
    threads for the whole run (None: ``PYPRECISION_THREADS``, else the cores this process may run
    on; ``pyprecision.kernel.thread_limit``); results never depend on it."""
    from pyprecision.kernel import thread_limit

    with thread_limit(threads):
        if config is None:
            from pyprecision.emulate.hlo.eval import run_hlo as plain

            return plain(module, args, limits)
        from pyprecision.emulate.pipeline.driver import run_hlo_pipeline

        return run_hlo_pipeline(module, args, config, target)
