"""The numeric-legalization passes of the loop-level IR (specs 000 and 002), one per file, the
Target policy object, the statistics registry and the pipeline."""
from __future__ import annotations

from pyprecision.passes.auto_cast_fp32 import AutoCastFP32
from pyprecision.passes.auto_cast_inputs import AutoCastInputs
from pyprecision.passes.auto_cast_tc_inputs import AutoCastTCInputs, is_matmult_transpose
from pyprecision.passes.cast_elimination import CastElimination, is_exact_cast
from pyprecision.passes.dtype_mutator import DTypeMutator, MutateState
from pyprecision.passes.fp8e4m3fn_as_fp8e4 import Fp8e4m3fnAsFp8e4
from pyprecision.passes.mutate import mutate_fp32, mutate_result_and_scalar_operands
from pyprecision.passes.pipeline import pipeline_pass_names, run_passes, run_pipeline
from pyprecision.passes.provenance import Decision, ProvenanceLog
from pyprecision.passes.registry import PASSES, make_pass, parse_pass_list
from pyprecision.passes.statistics import REGISTRY, Statistic, Statistics, register_stats, snapshot
from pyprecision.passes.target import GENERATIONS, Generation, Target

__all__ = [
    "GENERATIONS",
    "PASSES",
    "REGISTRY",
    "AutoCastFP32",
    "AutoCastInputs",
    "AutoCastTCInputs",
    "CastElimination",
    "DTypeMutator",
    "Decision",
    "Fp8e4m3fnAsFp8e4",
    "Generation",
    "MutateState",
    "ProvenanceLog",
    "Statistic",
    "Statistics",
    "Target",
    "is_exact_cast",
    "is_matmult_transpose",
    "make_pass",
    "mutate_fp32",
    "mutate_result_and_scalar_operands",
    "parse_pass_list",
    "pipeline_pass_names",
    "register_stats",
    "run_passes",
    "run_pipeline",
    "snapshot",
]
