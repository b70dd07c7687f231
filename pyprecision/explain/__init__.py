"""Which dtype does each op run in after the precision passes, who decided it, and where does the
accuracy go? One row per op for a loop-IR program (or an HLO module), with the emulated error of
each op's output against an all-fp32 run when inputs are given.

Imports ``ir``, ``passes``, ``frontend``, ``emulate``, ``hlo``, ``kernel`` and ``verify`` (for the
code-space ULP distance and the HLO runner); nothing but ``tools`` imports ``explain``.
"""
from pyprecision.explain.core import Explanation, explain, explain_hlo, split_flags
from pyprecision.explain.hlo_program import HloRow, explain_hlo_program
from pyprecision.explain.numerics import OpError, all_fp32_reference, op_errors, probe_values
from pyprecision.explain.plot import plot_explanation
from pyprecision.explain.provenance import OpRow, Trace, skip_reason, trace_pipeline
from pyprecision.explain.render import (
    comparison_json,
    comparison_lines,
    explanation_lines,
    select_rows,
)

__all__ = [
    "Explanation",
    "OpError",
    "OpRow",
    "Trace",
    "all_fp32_reference",
    "comparison_json",
    "comparison_lines",
    "explain",
    "explain_hlo",
    "explain_hlo_program",
    "plot_explanation",
    "HloRow",
    "explanation_lines",
    "op_errors",
    "probe_values",
    "select_rows",
    "skip_reason",
    "split_flags",
    "trace_pipeline",
]
