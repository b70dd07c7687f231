"""``pyprecision hlo-opt`` and ``pyprecision hlo-run`` — HLO text through the passes / the evaluator."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

import numpy as np

from pyprecision.errors import EmulationError, PyPrecisionError
from pyprecision.tools._files import is_ml_dtype, write_atomic
from pyprecision.tools._options import (
    MODULE_FORMS,
    add_threads_argument,
    read_program,
    read_program_inputs,
)

if TYPE_CHECKING:
    from pyprecision.hlo import HloModule

_RUN_HELP = """\
Inputs: an .npz whose keys name the ENTRY parameters in parameter order, as arg0, arg1, ... (or
in0, in1, ... as tests/data/hlo uses, or the parameter names themselves, e.g. Arg_0.1). Arrays must
have the parameter's shape; bf16/fp8 parameters take ml_dtypes arrays or their raw bits (uint16 /
uint8), s4/u4 take int8/uint8. A __dtypes__ key is ignored on input (the parameter types decide).
Outputs: out0, out1, ... (a tuple result flattened in order); bf16/fp8 results are stored as raw
bits with their dtype names in __dtypes__, the same convention as tests/data/hlo."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``hlo-opt`` and ``hlo-run`` subcommands."""
    from pyprecision.hlo import REGISTRY

    opt = subparsers.add_parser(
        "hlo-opt", help="run spec-004 HLO passes on an HLO module",
        description="Read an HLO module (text, HloModuleProto or StableHLO), run the named passes "
        "in order and print it as HLO text. "
        "Without --passes the module is printed back unchanged (XLA's canonical text comes back "
        f"byte for byte). Passes: {', '.join(REGISTRY)}.", allow_abbrev=False)
    opt.add_argument("module", help=f"{MODULE_FORMS} ('-' for stdin)")
    opt.add_argument("--passes", default="", help="comma-separated pass names, run in order")
    opt.add_argument("-o", "--output", help="write the module here instead of stdout")
    opt.set_defaults(func=run_opt)

    run = subparsers.add_parser(
        "hlo-run", help="evaluate an HLO module on inputs from an .npz",
        description="Evaluate the ENTRY computation of an HLO module with pyprecision's HLO "
        "evaluator (every result rounded to its element type).", epilog=_RUN_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    run.add_argument("module", help=f"{MODULE_FORMS} ('-' for stdin)")
    run.add_argument("--inputs", required=True, help="input .npz")
    run.add_argument("-o", "--output", required=True, help="output .npz")
    run.add_argument("--max-while-iterations", type=int, default=100_000, metavar="N",
                     help="stop a while loop after N iterations (default 100000)")
    run.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                     help="stop the evaluation after this much wall time (default: no limit)")
    run.add_argument("--memory-budget", type=int, default=None, metavar="BYTES",
                     help="refuse a module whose live values would exceed this (default: half "
                          "the RAM)")
    from pyprecision.frontend import add_precision_arguments

    neuron = run.add_argument_group(
        "neuronx-cc pipeline", "with any of these, the module runs the way neuronx-cc compiles it: "
        "HLO passes, lowering to the loop IR, the precision passes the flags choose, emulation")
    add_precision_arguments(neuron)
    from pyprecision.tools._neuron_flags import add_neuron_flag_arguments

    add_neuron_flag_arguments(neuron)
    neuron.add_argument("--target", choices=["gen2", "gen3", "gen4"], default=None,
                        help="hardware generation (default gen2)")
    neuron.add_argument("--neuron", action="store_true",
                        help="run the neuronx-cc pipeline even with the default flags")
    add_threads_argument(run)
    run.set_defaults(func=run_run)


def _read_module(path: str) -> HloModule:
    from pyprecision import hlo

    text, name = read_program(path, ir=False)
    return hlo.parse(text, filename=name)


def run_opt(args: argparse.Namespace) -> int:
    """``hlo-opt``: parse, run passes, print."""
    from pyprecision import hlo

    module = _read_module(args.module)
    names = [n.strip() for n in args.passes.split(",") if n.strip()]
    for n in names:
        hlo.get_pass(n)  # unknown names fail before anything runs
    hlo.run_passes(module, names)
    text = hlo.to_text(module)
    if args.output:
        write_atomic(args.output, lambda fh: fh.write(text.encode("utf-8")), inputs=(args.module,))
    else:
        sys.stdout.write(text)
    return 0


def load_inputs(module: HloModule, path: str) -> list[np.ndarray]:
    """The ENTRY arguments from an .npz (see the ``hlo-run`` help for the key convention), bound
    by the one binder (count, shape, dtype); arrays no parameter takes are named in a warning."""
    from pyprecision.emulate import bind_arguments

    data = read_program_inputs(path)  # through the io readers; __dtypes__ relabels raw bits
    bound = bind_arguments(module, data, source=path)
    warning = bound.warning(path)
    if warning:
        print(f"pyprecision hlo-run: warning: {warning}", file=sys.stderr)
    return bound.args


def save_outputs(outputs: list[np.ndarray], path: str, inputs: tuple[str, ...] = ()) -> None:
    """out0, out1, ... with ml_dtypes arrays as raw bits and their names in __dtypes__."""
    store: dict[str, np.ndarray] = {}
    names: dict[str, str] = {}
    for i, arr in enumerate(outputs):
        a = np.asarray(arr)
        key = f"out{i}"
        names[key] = a.dtype.name
        if is_ml_dtype(a.dtype):  # ml_dtypes (bfloat16, float8_*, float4_*)
            a = a.view(np.dtype(f"uint{8 * a.dtype.itemsize}"))
        store[key] = a
    store["__dtypes__"] = np.array(json.dumps(names))
    write_atomic(path, lambda fh: np.savez(fh, **store), inputs)  # type: ignore[arg-type]


def run_run(args: argparse.Namespace) -> int:
    """``hlo-run``: evaluate the module and write the outputs."""
    from pyprecision.emulate import Limits, run_hlo
    from pyprecision.frontend import config_from_namespace, parse_flags

    limits = Limits(max_while_iterations=args.max_while_iterations,
                    time_budget=args.time_budget, memory_budget=args.memory_budget)
    module = _read_module(args.module)
    inputs = load_inputs(module, args.inputs)
    config = config_from_namespace(args)
    pipeline = args.neuron or args.target is not None or config != parse_flags([])
    try:
        if pipeline:
            from pyprecision.emulate import compile_hlo, relabelled_inputs, run_compiled

            compiled = compile_hlo(module, config, args.target or "gen2")
            for note in compiled.lowered.notes + relabelled_inputs(compiled, inputs):
                print(f"pyprecision hlo-run: note: {note}", file=sys.stderr)
            outputs = run_compiled(compiled, inputs)
        else:
            outputs = run_hlo(module, inputs, limits=limits)
    except PyPrecisionError:
        raise
    except (ValueError, KeyError, NotImplementedError) as exc:
        raise EmulationError(f"{args.module}: {exc}") from None
    if pipeline and args.module != "-":
        from pyprecision.tools._flag_effects import warn_inert_flags

        warn_inert_flags("hlo-run", read_program(args.module, ir=False)[0], args.module,
                         config, args.target)  # fmt: skip
    save_outputs(list(outputs), args.output, inputs=(args.inputs, args.module))
    return 0
