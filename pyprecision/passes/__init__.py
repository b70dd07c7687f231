"""The numeric-legalization passes of the loop-level IR (specs 000 and 002), one per file: their
decisions as pure verdict functions (``mutator_gates``, ``autocast_rules``), the Target policy
object, the pass registry ``PASSES``, the statistics registry ``STATISTICS`` and the pipeline."""
from __future__ import annotations

from pyprecision.passes.auto_cast_fp32 import AutoCastFP32, AutoCastRun, cascade_dtype
from pyprecision.passes.auto_cast_inputs import AutoCastInputs
from pyprecision.passes.auto_cast_tc_inputs import AutoCastTCInputs, is_matmult_transpose
from pyprecision.passes.autocast_rules import instruction_verdict, shrink_verdict
from pyprecision.passes.base import FunctionPass, functions_of
from pyprecision.passes.cast_elimination import CastElimination, is_exact_cast
from pyprecision.passes.dtype_mutator import DTypeMutator, MutateState, MutatorRun
from pyprecision.passes.fp8e4m3fn_as_fp8e4 import Fp8e4m3fnAsFp8e4
from pyprecision.passes.mutate import mutate_fp32, mutate_result_and_scalar_operands
from pyprecision.passes.mutator_gates import (
    absorb_verdict,
    match_or_mutate_verdict,
    mutate_load_verdict,
)
from pyprecision.passes.pipeline import (
    PIPELINE_FIELDS,
    pipeline_key,
    pipeline_pass_names,
    run_passes,
    run_pipeline,
    verify_pipeline_result,
)
from pyprecision.passes.provenance import Decision, ProvenanceLog, Verdict
from pyprecision.passes.registry import PASSES, make_pass, parse_pass_list
from pyprecision.passes.statistics import (
    STATISTICS,
    Statistic,
    Statistics,
    register_stats,
    snapshot,
)
from pyprecision.passes.target import GENERATIONS, Generation, Target

__all__ = [
    "GENERATIONS",
    "PIPELINE_FIELDS",
    "PASSES",
    "STATISTICS",
    "AutoCastFP32",
    "AutoCastInputs",
    "AutoCastRun",
    "AutoCastTCInputs",
    "CastElimination",
    "DTypeMutator",
    "Decision",
    "Fp8e4m3fnAsFp8e4",
    "FunctionPass",
    "Generation",
    "MutateState",
    "MutatorRun",
    "ProvenanceLog",
    "Statistic",
    "Statistics",
    "Target",
    "Verdict",
    "absorb_verdict",
    "cascade_dtype",
    "functions_of",
    "instruction_verdict",
    "is_exact_cast",
    "is_matmult_transpose",
    "make_pass",
    "pipeline_key",
    "match_or_mutate_verdict",
    "mutate_fp32",
    "mutate_load_verdict",
    "mutate_result_and_scalar_operands",
    "parse_pass_list",
    "pipeline_pass_names",
    "register_stats",
    "run_passes",
    "run_pipeline",
    "shrink_verdict",
    "snapshot",
    "verify_pipeline_result",
]
