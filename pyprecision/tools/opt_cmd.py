"""``pyprecision opt PROG`` — run the numeric-legalization passes on a loop-IR program, or on an HLO
module lowered to the loop IR.

The mode comes from ``--auto-cast/--auto-cast-type`` or ``--fp32-cast`` (canonicalized exactly like
neuronx-cc); ``--passes`` overrides the pipeline (``a,b{option=true},c``). Prints the transformed
program (and, with ``--stats``, every statistic as ``//`` comment lines, so the output still parses).
An HLO module (text starting ``HloModule``) first goes through ``--hlo-passes`` (default neuronx-cc's)
and the lowering; ``--emit-lowered`` prints the loop IR before the precision passes.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from pyprecision.errors import CastError
from pyprecision.frontend import add_precision_arguments, config_from_namespace
from pyprecision.ir import parse, to_text
from pyprecision.passes import (
    Statistics,
    Target,
    make_pass,
    parse_pass_list,
    pipeline_pass_names,
    run_passes,
    snapshot,
)
from pyprecision.tools._options import add_target_argument, check_ir_text, read_program
from pyprecision.tools.flags_cmd import one_line_errors


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``opt`` subcommand."""
    parser = subparsers.add_parser(
        "opt",
        help="run AutoCast → DTypeMutator → cast elimination on a loop-IR program",
        description="Run the numeric-legalization passes on a loop-IR program (text form).",
        allow_abbrev=False,
    )
    parser.add_argument("prog", metavar="PROG", help="program file ('-' reads stdin)")
    add_precision_arguments(parser)
    add_target_argument(parser, "gen2")
    parser.add_argument("--passes", metavar="A,B,C", default=None,
                        help="comma-separated passes to run instead of the mode's pipeline; "
                        "options as name{option=true}")
    parser.add_argument("--stats", action="store_true", help="print every statistic")
    parser.add_argument("--hlo-passes", metavar="A,B", default=None,
                        help="HLO modules: HLO passes before lowering (default: "
                        "batch-norm-training-upcast,neuron-int-matmul-downcast)")
    parser.add_argument("--emit-lowered", action="store_true",
                        help="HLO modules: print the lowered loop IR before the precision passes")
    parser.add_argument("-o", "--output", metavar="OUT", default=None,
                        help="write the program here instead of stdout")
    one_line_errors(parser)
    parser.set_defaults(func=run)


def _lowered(text: str, filename: str, args: argparse.Namespace, config: Any) -> Any:
    from pyprecision import hlo
    from pyprecision.emulate import DEFAULT_HLO_PASSES, compile_hlo

    names = DEFAULT_HLO_PASSES if args.hlo_passes is None else tuple(
        n.strip() for n in args.hlo_passes.split(",") if n.strip())  # fmt: skip
    compiled = compile_hlo(hlo.parse(text, filename=filename), None, args.target,
                           hlo_passes=names, filename=filename, text=text)  # fmt: skip
    return compiled.lowered.module


def run(args: argparse.Namespace) -> int:
    """Parse, transform, print. User errors raise pyprecision errors (one line, exit 2 via cli)."""
    config = config_from_namespace(args)
    target = Target.from_config(config, args.target)
    if args.passes is not None:
        passes = parse_pass_list(args.passes, target)
    else:
        passes = [make_pass(name, target) for name in pipeline_pass_names(config)]
    # a .pir is read as a program; anything else as a module in any form (hlo.load), whose
    # text is then HLO, or passed through unchanged when it is loop-IR text under another name
    text, filename = read_program(args.prog, ir=args.prog.lower().endswith(".pir"))
    if text.lstrip().startswith("HloModule"):
        module = _lowered(text, filename, args, config)
        if args.emit_lowered:
            passes = []
    elif args.hlo_passes is not None or args.emit_lowered:
        raise CastError("--hlo-passes and --emit-lowered apply to HLO modules")
    else:
        check_ir_text(text, filename)  # a .pir: refuses an empty program
        module = parse(text, filename=filename)
    before = snapshot()
    changed = run_passes(module, passes)
    stats = Statistics(before, snapshot(), changed)
    if args.passes is None and not args.emit_lowered:
        from pyprecision.tools._flag_effects import warn_inert_flags

        warn_inert_flags("opt", text, filename, config, args.target)
    out = to_text(module)
    if args.stats:
        out += "".join(f"// {line}\n" for line in stats.to_text().splitlines())
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(out)
    else:
        sys.stdout.write(out)
    return 0
