"""``pyprecision explain`` — which dtype each op runs in after the passes, who decided it, and (with
inputs) how much error each op's output carries against an all-fp32 run."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pyprecision.errors import CastError
from pyprecision.tools._options import (
    MODULE_FORMS,
    add_target_argument,
    add_threads_argument,
    check_emulation_memory,
    read_program,
)

_EPILOG = """\
examples:
  pyprecision explain examples/mlp.pir --auto-cast all
  pyprecision explain examples/mlp.pir --auto-cast matmult --target gen3 --inputs in.npz
  pyprecision explain examples/mlp.pir --inputs in.npz --compare "--auto-cast all" "--auto-cast matmult"
  pyprecision explain module.hlo.txt --passes upcast-all-to-fp32 --inputs in.npz

--compare takes two flag sets, each one quoted string (it may include --target)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``explain`` subcommand."""
    from pyprecision.frontend import add_precision_arguments

    p = subparsers.add_parser(
        "explain", help="per op: dtype before/after the passes, which rule decided it, its error",
        description="Run the precision passes on a loop-IR program (or the named HLO passes on an "
        "HLO module) and print one row per op: its dtype before and after, the pass and rule or "
        "gate that decided it, and with --inputs the emulated error of its output against an "
        "all-fp32 run, worst first.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("program", metavar="PROG", help=f"a .pir program or {MODULE_FORMS}")
    add_precision_arguments(p)
    from pyprecision.tools._neuron_flags import add_neuron_flag_arguments

    add_neuron_flag_arguments(p)
    add_target_argument(p, None, "hardware generation (default gen2)")
    p.add_argument("--passes", default=None,
                   help="HLO modules: the HLO passes to run before lowering (default: "
                   "batch-norm-training-upcast,neuron-int-matmul-downcast)")
    p.add_argument("--as-written", action="store_true",
                   help="HLO modules: explain only the HLO passes (--passes), without the lowering")
    p.add_argument("--inputs", help=".npz of the program inputs (by input name; HLO: arg0/in0...)")
    p.add_argument("--compare", nargs=2, metavar=("FLAGS_A", "FLAGS_B"),
                   help="two quoted flag sets to show side by side")
    p.add_argument("--top", type=_positive, metavar="N", help="print only the first N rows")
    p.add_argument("--sort", default="error", choices=("error", "abs", "rel", "ulp", "order"),
                   help="row order: error (default: worst error on the tensor's scale first), "
                   "abs, rel, ulp, or order (program order)")
    p.add_argument("--op", metavar="KIND", help="only ops of this kind (e.g. dot, multiply)")
    p.add_argument("--verbose", action="store_true",
                   help="why: every pass decision in the passes' own words")
    p.add_argument("--json", action="store_true", help="print JSON (each row's whole stack)")
    p.add_argument("--plot", metavar="PNG", help="with --inputs: draw each op's error in program "
                   "order, coloured by its dtype (matplotlib)")
    add_threads_argument(p)
    p.set_defaults(func=run)


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text!r}")
    return n


def _flags(args: argparse.Namespace) -> list[str]:
    from pyprecision.tools._verify_common import program_flags

    return program_flags(args)


def run(args: argparse.Namespace) -> int:
    """Explain one flag set, or compare two."""
    from pyprecision import explain as ex
    from pyprecision.verify import is_hlo_path

    hlo = is_hlo_path(args.program)
    text, name = read_program(args.program, ir=not hlo)  # UTF-8, a .pir with a function in it
    if args.inputs and not hlo:
        check_emulation_memory(text, name)
    if not hlo and (args.passes or args.as_written):
        raise CastError("--passes and --as-written apply to HLO modules; .pir programs take "
                        "precision flags")
    if hlo and args.as_written:
        from pyprecision.tools._verify_common import precision_flags_given

        if args.target or args.compare or precision_flags_given(args):
            raise CastError("--as-written explains the HLO passes only: precision flags, --target "
                            "and --compare need the lowering; drop them or drop --as-written")
        passes = [n.strip() for n in (args.passes or "").split(",") if n.strip()]
        result = ex.explain_hlo(args.program, passes, args.inputs)
        _print_one(args, ex, result)
        return 0

    def one(flags: list[str], target: str | None) -> Any:
        if hlo:
            from pyprecision.verify import read_inputs

            passes = None if args.passes is None else \
                [n.strip() for n in args.passes.split(",") if n.strip()]
            data = read_inputs(args.inputs) if args.inputs else None
            return ex.explain_hlo_program(args.program, flags, target, data, passes)
        return ex.explain(args.program, flags, target, args.inputs)

    if args.compare:
        runs = []
        for text in args.compare:
            flags, target = _split_target(ex.split_flags(text))
            _check_flags(flags)
            runs.append(one(flags, target or args.target))
        a, b = runs
        _print(args, ex.comparison_lines(a, b, *args.compare),
               ex.comparison_json(a, b, *args.compare))
        return 0
    result = one(_flags(args), args.target)
    from pyprecision.tools._flag_effects import warn_inert

    warn_inert("explain", args)
    if args.plot:
        ex.plot_explanation(result, args.plot)
    _print_one(args, ex, result)
    return 0


def _print_one(args: argparse.Namespace, ex: Any, result: Any) -> None:
    """The table (or JSON) of the rows --sort, --op and --top select."""
    lines = ex.explanation_lines(result, args.top, args.sort, args.op, args.verbose)
    doc = result.to_json()
    keep = [r.key for r in ex.select_rows(result, args.top, args.sort, args.op)]
    by_name = {row["name"]: row for row in doc["rows"]}
    doc["rows"] = [by_name[k] for k in keep if k in by_name]
    if args.op is not None and not keep:
        kinds = sorted({r.op for r in result.rows})
        raise CastError(f"--op {args.op}: no op of that kind; kinds here: {', '.join(kinds)}")
    _print(args, lines, doc)



def _split_target(argv: list[str]) -> tuple[list[str], str | None]:
    """Pull ``--target X`` out of a --compare flag set."""
    out, target, it = [], None, iter(argv)
    for a in it:
        if a == "--target":
            target = next(it, None)
            if target not in ("gen2", "gen3", "gen4"):
                raise CastError(f"--target in --compare must be gen2, gen3 or gen4, not {target!r}")
        elif a.startswith("--target="):
            target = a.split("=", 1)[1]
        else:
            out.append(a)
    return out, target


def _check_flags(flags: list[str]) -> None:
    from pyprecision.frontend import parse_flags

    parse_flags(flags)  # FlagError (exit 2) for an unknown or conflicting flag


def _print(args: argparse.Namespace, lines: list[str], doc: dict[str, Any]) -> None:
    if args.json:
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print("\n".join(lines))
