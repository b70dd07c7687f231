"""``pyprecision verify`` — compare a device dump with the emulator, bit for bit, and diagnose.

Cast check: ``--input X --dump D --format F [cast options]``. Program check: ``--program P
--inputs IN.npz --dump OUT.npz [precision flags]``. Exit 0 when every element is within
``--max-ulp`` (default 0: bit-exact), 1 beyond it, 2 for usage or input errors.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pyprecision.errors import CastError
from pyprecision.tools._options import (
    MODULE_FORMS,
    add_cast_options,
    add_target_argument,
    add_threads_argument,
    check_emulation_memory,
    read_program,
)
from pyprecision.tools._verify_common import (
    cast_policy,
    precision_flags_given,
    program_flags,
    program_json,
    read_pair,
    tolerance_options,
)

_EPILOG = """\
dumps: .npy, .npz, .safetensors by extension; any other file is raw binary read with --dtype
(default: the format's code type, e.g. uint8 for fp8), --shape, --byte-order (default little) and
--offset (bytes to skip). A raw file whose size does not match the shape is an error. A container
with several arrays needs --dump-key / --input-key. A dump may hold the format's codes (uint8 /
uint16 / uint32, or the format's own dtype) or its decoded values (e.g. float32); values must be
exactly representable and their NaNs are compared by class.

examples:
  pyprecision verify --input x.npy --dump y.bin --format fp8e4 --shape 64,128
  pyprecision verify --input x.npy --dump y.npy --format bf16 --rounding rtz --json
  pyprecision verify --program mlp.pir --inputs in.npz --dump out.npz --auto-cast all"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser(
        "verify", help="compare a device dump with the emulated cast or program, bit for bit",
        description="Emulate a cast (or a program through the passes and the emulator) and compare "
        "the result with a dump bit for bit: counts, ULP distances, the first mismatches, and a "
        "diagnosis of the cast policy that explains a mismatching dump.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    what = p.add_argument_group("what to check")
    what.add_argument("--input", help="cast check: the array that was cast")
    what.add_argument("--format", help="cast check: the target format (see `pyprecision formats`)")
    what.add_argument("--program", help=f"program check: a .pir program or {MODULE_FORMS}")
    what.add_argument("--inputs", help="program check: .npz of the program inputs")
    what.add_argument("--dump", required=True,
                      help="the device's output, or a directory / glob of dumps (one per core; "
                      "each matched by name to the file of the same stem under --input/--inputs)")
    cast = p.add_argument_group("cast policy (cast check)")
    add_cast_options(cast, seed_help="stochastic rounding: the generator seed (required)",
                     threads=False)
    raw = p.add_argument_group("reading dumps")
    raw.add_argument("--dtype", help="raw dump: element type (default: the format's code type)")
    raw.add_argument("--shape", help="raw dump: shape, e.g. 64,128 (default: the input's)")
    raw.add_argument("--byte-order", default="little", choices=["little", "big", "native"],
                     help="raw files: byte order (default little)")
    raw.add_argument("--offset", type=int, default=0, help="raw dump: bytes to skip")
    raw.add_argument("--dump-key", help="the array's name in a .npz / safetensors dump")
    raw.add_argument("--input-dtype", default="float32", help="raw input: element type")
    raw.add_argument("--input-shape", help="raw input: shape (default: --shape)")
    raw.add_argument("--input-offset", type=int, default=0, help="raw input: bytes to skip")
    raw.add_argument("--input-key", help="the array's name in a .npz / safetensors input")
    prog = p.add_argument_group("program check")
    _add_program_arguments(prog)
    out = p.add_argument_group("report")
    out.add_argument("--max-ulp", type=int, default=0,
                     help="largest ULP distance that still passes (default 0: bit-exact)")
    out.add_argument("--show", type=int, default=10, help="how many mismatches to list (default 10)")
    out.add_argument("--json", action="store_true", help="print the report as JSON")
    out.add_argument("--plot", metavar="PNG", help="write a histogram/scatter plot (matplotlib)")
    out.add_argument("--no-diagnosis", action="store_true",
                     help="skip the search for the policy that explains a mismatching dump")
    from pyprecision.tools._verify_many import add_many_arguments

    add_many_arguments(p.add_argument_group("many dumps (--dump DIR or GLOB)"))
    add_threads_argument(p)
    p.set_defaults(func=run)


def _add_program_arguments(group: Any) -> None:
    from pyprecision.frontend import add_precision_arguments

    add_precision_arguments(group)
    from pyprecision.tools._neuron_flags import add_neuron_flag_arguments

    add_neuron_flag_arguments(group)
    add_target_argument(group, None, "hardware generation of the passes (default gen2)")
    group.add_argument("--passes", default=None,
                       help="HLO modules: the HLO passes to run before lowering (default: "
                       "batch-norm-training-upcast,neuron-int-matmul-downcast)")
    group.add_argument("--rtol", type=float, default=0.0,
                       help="program check: an element also passes within atol + rtol*|expected|")
    group.add_argument("--atol", type=float, default=0.0, help="program check: see --rtol")
    group.add_argument("--transcendental-rtol", type=float, default=None, metavar="R",
                       help="HLO outputs with a transcendental op upstream (exp, log, tanh, erf, "
                       "rsqrt, ...) also pass within R x max(|expected|, RMS of the output) "
                       "(default 2^-16, about 1.5e-5; 0 turns the allowance off)")
    group.add_argument("--exact", action="store_true",
                       help="program check: every output bit-exact (no transcendental allowance)")
    group.add_argument("--intermediates", metavar="NPZ",
                       help="HLO modules: dumped intermediate values by HLO instruction name; "
                       "the report names the first op where device and emulation part")
    group.add_argument("--as-written", action="store_true",
                       help="HLO modules: evaluate the HLO as written after --passes (no lowering, "
                       "no precision passes)")


def _check_tolerances(args: argparse.Namespace) -> None:
    import math

    for name in ("rtol", "atol", "transcendental_rtol"):
        v = getattr(args, name, None)
        if v is not None and (not math.isfinite(v) or v < 0):
            raise CastError(f"--{name.replace('_', '-')} must be a finite number >= 0")
    given = [f for f, on in (("--max-ulp", args.max_ulp), ("--rtol", args.rtol),
                             ("--atol", args.atol),
                             ("--transcendental-rtol", args.transcendental_rtol is not None))
             if on]
    if args.exact and given:
        raise CastError(f"--exact makes every output bit-exact; drop {', '.join(given)} or --exact")


def run(args: argparse.Namespace) -> int:
    """Dispatch to the cast or the program check and print the report."""
    if args.max_ulp < 0:
        raise CastError("--max-ulp must be non-negative")
    _check_tolerances(args)
    if args.program:
        if args.input or args.format:
            raise CastError("--program checks take --inputs (an .npz), not --input/--format")
        if not args.inputs:
            raise CastError("--program needs --inputs IN.npz")
        cast_only = [name for name, default in _CAST_ONLY.items()
                     if getattr(args, name.lstrip("-").replace("-", "_")) != default]
        if cast_only:
            verb = "applies" if len(cast_only) == 1 else "apply"
            raise CastError(f"{', '.join(cast_only)} {verb} to the cast check (--input), "
                            "not to --program")
        return _run_many(args) if _many(args) else _run_program(args)
    if not args.input or not args.format:
        raise CastError("give --input X --format F (cast check) or --program P --inputs IN.npz")
    if args.inputs or args.target or args.passes or args.auto_cast != "none" \
            or args.fp32_cast is not None:
        raise CastError("--inputs, --target, --passes and the precision flags apply to "
                        "--program checks")
    program_only = [f for f, on in (("--rtol", args.rtol), ("--atol", args.atol),
                                    ("--exact", args.exact), ("--intermediates",
                                                              args.intermediates),
                                    ("--transcendental-rtol",
                                     args.transcendental_rtol is not None)) if on]
    if program_only:
        raise CastError(f"{', '.join(program_only)}: program checks only (--program); a cast "
                        "check is bit-exact or within --max-ulp")
    return _run_many(args) if _many(args) else _run_cast(args)


_CAST_ONLY = {"--rounding": "rne", "--saturate": None, "--nan": "ml_dtypes", "--seed": None,
              "--dtype": None, "--shape": None, "--offset": 0, "--dump-key": None,
              "--input-dtype": "float32", "--input-shape": None, "--input-offset": 0,
              "--input-key": None}


def _many(args: argparse.Namespace) -> bool:
    from pyprecision.verify import is_many

    return bool(is_many(args.dump))


def _run_many(args: argparse.Namespace) -> int:
    from pyprecision.tools._verify_many import run_many_dumps

    return run_many_dumps(args)


#: Options of the cast check with their defaults (a program check refuses them when set).


def _run_cast(args: argparse.Namespace) -> int:
    from pyprecision.verify import verify_cast

    policy = cast_policy(args)
    x, d = read_pair(args, policy.fmt)
    rep = verify_cast(x, d, policy, max_ulp=args.max_ulp, run_diagnosis=not args.no_diagnosis)
    _emit(args, [("", rep)], f"verify: {args.input} cast as {policy.describe()} vs {args.dump}")
    return 0 if rep.ok else 1


def _emit(args: argparse.Namespace, reports: list[tuple[str, Any]], title: str,
          extra: dict[str, Any] | None = None, diagnosis: Any = None) -> None:
    from pyprecision.verify import plot_report, report_json, report_lines

    program = extra is not None
    if args.plot:
        plot_report([(name or "dump", rep) for name, rep in reports], args.plot)
    if args.json:
        doc = program_json(reports, args.show, extra or {}) if program else \
            report_json(reports[0][1], args.show)
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    if not program:
        lines = report_lines(reports[0][1], args.show, title)
    else:
        lines = [title]
        for key, value in (extra or {}).items():
            if key not in ("diagnosis", "divergence", "unused_inputs"):
                lines.append(f"{key}: {_plain(value)}")
        for name, rep in reports:
            lines.append("")
            lines += report_lines(rep, args.show, f"output {name} ({rep.space.name})")
        lines.append("")
        divergence = (extra or {}).get("divergence")
        if divergence is not None:
            lines.append("intermediates: " + divergence["summary"])
        if diagnosis is not None:
            lines.append("diagnosis: " + diagnosis.summary())
            lines += ["  also exact: " + alt.describe() for alt in diagnosis.alternatives]
        ok = all(rep.ok for _, rep in reports)
        lines.append(f"program result: {'OK' if ok else 'FAIL'} ({len(reports)} outputs, "
                     f"{sum(r.comparison.mismatches for _, r in reports)} mismatching elements)")
    if args.plot:
        lines.append(f"plot: {args.plot}")
    print("\n".join(lines))


def _plain(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value) if value else "-"
    return str(value)


def _run_program(args: argparse.Namespace) -> int:
    from pyprecision.verify import is_hlo_path, verify_program

    hlo = is_hlo_path(args.program)
    if not hlo and (args.passes or args.as_written):
        raise CastError("--passes and --as-written apply to HLO modules; .pir programs take "
                        "precision flags")
    text, name = read_program(args.program, ir=not hlo)  # UTF-8, a .pir with a function in it
    if not hlo:
        check_emulation_memory(text, name)
    flags = program_flags(args)
    if args.as_written and (args.target or precision_flags_given(args)):
        raise CastError("--as-written evaluates the HLO without the lowering: precision flags and "
                        "--target have no effect there; drop them or drop --as-written")
    passes = None if args.passes is None else [n.strip() for n in args.passes.split(",") if n.strip()]
    check = verify_program(args.program, args.inputs, args.dump, flags=flags,
                           target=args.target, hlo_passes=passes, max_ulp=args.max_ulp,
                           run_diagnosis=not args.no_diagnosis, as_written=args.as_written,
                           **tolerance_options(args))
    unused = check.extra.get("unused_inputs")
    if unused:
        print(f"pyprecision verify: warning: {args.inputs}: {len(unused)} array(s) not used by "
              f"any input of the program: {', '.join(unused)}", file=sys.stderr)
    if not args.as_written:
        from pyprecision.tools._flag_effects import warn_inert

        warn_inert("verify", args)
    extra = dict(check.extra)
    if extra.get("divergence") is not None:
        extra["divergence"] = extra["divergence"].to_json()
    extra["diagnosis"] = check.diagnosis.to_json() if check.diagnosis else None
    _emit(args, check.reports, check.title, extra, check.diagnosis)
    return 0 if check.ok else 1
