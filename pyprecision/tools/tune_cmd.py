"""``pyprecision tune`` — the cheapest neuronx-cc precision flags that keep an HLO module's outputs
within an error budget of ``--auto-cast none``'s, on the user's inputs."""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any

from pyprecision.tools._options import MODULE_FORMS, add_target_argument, add_threads_argument

_EPILOG = """\
examples:
  pyprecision tune model.hlo.txt --inputs in.npz --budget 1e-2
  pyprecision tune model.hlo.txt --inputs in.npz --budget 0 --metric ulp --target gen3
  pyprecision tune model.hlo.txt --inputs in.npz --budget 0.01 --validate held_out.npz --plot f.png

The recommendation is printed in CLI spelling, ready for NEURON_CC_FLAGS. Costs are estimates from
AWS's published peak figures (--cost-table FILE overrides them), not measurements."""

_INPUT_KEY = re.compile(r"(in|arg)(\d+)")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tune`` subcommand."""
    p = subparsers.add_parser(
        "tune", help="the cheapest neuronx-cc precision flags within an error budget",
        description="Emulate an HLO module under every numerics-changing neuronx-cc flag set on "
        "the given inputs, measure each set's error against --auto-cast none and estimate its "
        "device time; print the cheapest set within the budget, the Pareto frontier and the ops "
        "that add most error.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("model", metavar="MODEL", help=MODULE_FORMS)
    p.add_argument("--inputs", required=True, metavar="IN.npz",
                   help="the ENTRY parameters (keys in0/arg0... or parameter names)")
    p.add_argument("--budget", required=True, metavar="REL",
                   help="the largest error accepted (0: an exact set)")
    p.add_argument("--metric", default="rel-l2", metavar="M",
                   help="rel-l2 (default), max-abs, ulp or top1; the worst output counts")
    add_target_argument(p, "gen2", "hardware generation the cost is estimated for "
                        "(default: %(default)s)")
    p.add_argument("--cost-table", metavar="FILE", help="a JSON cost table replacing the built-in "
                   "one (docs/tune.md)")
    p.add_argument("--validate", metavar="IN2.npz",
                   help="held-out inputs: re-measure the recommendation, warn above the budget")
    p.add_argument("--top", type=int, default=5, metavar="N",
                   help="ops shown in the attribution (default 5; 0: none)")
    p.add_argument("--exhaustive", action="store_true",
                   help="emulate every distinct program, also those costing more than the "
                   "recommendation (the full frontier; slower)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--plot", metavar="PNG", help="draw the frontier (matplotlib)")
    add_threads_argument(p)
    p.set_defaults(func=run)


def read_module(path: str) -> Any:
    """The module MODEL names (the one place the command reads it)."""
    from pyprecision import hlo
    from pyprecision.verify import read_module_text

    text, name = read_module_text(path)  # text, proto (gzipped too) or StableHLO: hlo.load's forms
    return hlo.parse(text, filename=name)


def _budget(text: str) -> float:
    from pyprecision.tune import TuneError

    try:
        value = float(text)
    except ValueError:
        raise TuneError(f"--budget must be a number ≥ 0, not {text!r}") from None
    if math.isnan(value) or value < 0:
        raise TuneError(f"--budget must be a number ≥ 0, not {text!r}")
    return value


def bind_inputs(module: Any, path: str) -> list[Any]:
    """The ENTRY arguments from an .npz: keys in<n>/arg<n>/parameter names, no more inputs than
    parameters (an .npz may also hold outputs: other keys are ignored)."""
    from pyprecision.tune import TuneError
    from pyprecision.verify import hlo_arguments, read_inputs

    arrays = read_inputs(path)
    params = module.entry.parameters
    given = sorted({int(m.group(2)) for k in arrays if (m := _INPUT_KEY.fullmatch(k))})
    extra = [n for n in given if n >= len(params)]
    if extra:
        raise TuneError(f"{path}: input {extra[0]} given, the module takes {len(params)} "
                        f"parameter(s)")  # fmt: skip
    missing = [p for p in params if not ({f"in{p.parameter_number}", f"arg{p.parameter_number}",
                                          p.name} & set(arrays))]  # fmt: skip
    if missing:
        p = missing[0]
        raise TuneError(f"{path}: no input for parameter {p.parameter_number} '{p.name}' "
                        f"({len(params) - len(missing)} of {len(params)} given)")  # fmt: skip
    return hlo_arguments(module, arrays, source=path)


def run(args: argparse.Namespace) -> int:
    """Search, print, plot."""
    from pyprecision.tune import check_arguments, load_cost_table, plot_frontier, result_lines, tune

    budget = _budget(args.budget)
    if args.top < 0:
        from pyprecision.tune import TuneError

        raise TuneError(f"--top must be ≥ 0, not {args.top}")
    module = read_module(args.model)
    inputs = check_arguments(module, bind_inputs(module, args.inputs), args.inputs)
    held = None
    if args.validate:
        held = check_arguments(module, bind_inputs(module, args.validate), args.validate)
    table = load_cost_table(args.cost_table) if args.cost_table else None
    result = tune(module, inputs, budget, args.metric, args.target, cost_table=table,
                  validate=held, attribution=args.top, progress=None,
                  exhaustive=args.exhaustive)  # fmt: skip
    if args.plot:
        plot_frontier(result, args.plot)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print("\n".join(result_lines(result)))
    if result.validation_exceeds:
        print(f"pyprecision tune: warning: on {args.validate} the recommendation's error "
              f"{result.validation_error:.3g} exceeds the budget {budget:g}", file=sys.stderr)
    return 0
