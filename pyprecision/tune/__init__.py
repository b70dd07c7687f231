"""``pyprecision tune``: the cheapest neuronx-cc precision flags that keep an HLO module's outputs
within an error budget of ``--auto-cast none``, with the Pareto frontier of every flag set tried, an
estimated cost per hardware generation (public peak figures: an estimate, not a measurement) and the
ops that add most error under the recommendation."""

from __future__ import annotations

from pyprecision.tune.attribution import OpShare
from pyprecision.tune.cost import COST_TABLE, Cost, estimate_cost, load_cost_table
from pyprecision.tune.errors import TuneError
from pyprecision.tune.metrics import METRICS, error_of
from pyprecision.tune.report import plot_frontier, result_lines
from pyprecision.tune.search import NotEmulated, Trial, TuneResult, check_arguments, pareto, tune
from pyprecision.tune.selection import Score, emulation_order, next_to_emulate, recommend
from pyprecision.tune.space import FlagSet, flag_sets

__all__ = ["COST_TABLE", "METRICS", "Cost", "FlagSet", "NotEmulated", "OpShare", "Score", "Trial",
           "TuneError", "TuneResult", "check_arguments", "emulation_order", "error_of",
           "estimate_cost", "flag_sets", "load_cost_table", "next_to_emulate", "pareto",
           "plot_frontier", "recommend", "result_lines", "tune"]  # fmt: skip
