"""``pyprecision cast`` and ``pyprecision decode``: the cast core on .npy files."""
from __future__ import annotations

import argparse

import numpy as np

import pyprecision as pp
from pyprecision.kernel import NAN_POLICIES, ROUNDINGS, cast_stats
from pyprecision.tools._files import load_npy, save_npy_atomic


def add_cast_options(p: argparse.ArgumentParser) -> None:
    """The cast options every command that casts shares."""
    p.add_argument("--rounding", default="rne", choices=list(ROUNDINGS))
    sat = p.add_mutually_exclusive_group()
    sat.add_argument("--saturate", dest="saturate", action="store_true", default=None,
                     help="overflow and ±inf go to ±max (default for fp8 formats)")
    sat.add_argument("--no-saturate", dest="saturate", action="store_false",
                     help="overflow goes to ±inf, or NaN for fp8e4m3fn (default for bf16/fp16/fp32r)")
    p.add_argument("--nan", default="ml_dtypes", choices=list(NAN_POLICIES), help="NaN encoding")
    p.add_argument("--seed", type=int, default=None,
                   help="stochastic rounding: generator seed (default: random)")
    p.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")


def cast_options(args: argparse.Namespace) -> dict:
    """The keyword arguments of pyprecision.encode from parsed options."""
    opts = {"rounding": args.rounding, "saturate": args.saturate, "nan": args.nan,
            "threads": args.threads}
    if args.rounding == "stochastic":
        opts["seed"] = args.seed
    elif args.seed is not None:
        raise pp.CastError("--seed is only used with --rounding stochastic")
    return opts


def run_cast(args: argparse.Namespace) -> int:
    """``pyprecision cast``: encode a .npy array to raw codes of a format; returns the exit code."""
    fmt = pp.format(args.to)
    x = load_npy(args.input)
    codes = pp.encode(x, fmt, **cast_options(args))
    result = pp.decode(codes, fmt) if args.decoded else codes
    save_npy_atomic(args.output, result, inputs=(args.input,))
    if not args.quiet:
        stats = cast_stats(x, codes, fmt)
        saturate = fmt.default_saturate if args.saturate is None else args.saturate
        print(f"{args.input} ({x.dtype}, shape {x.shape}) -> {fmt.name} "
              f"[{args.rounding}, saturate={saturate}, "
              f"nan={args.nan}] -> {args.output} "
              f"({'float32 values' if args.decoded else f'{fmt.storage_dtype} codes'})")
        for line in stats.lines():
            print("  " + line)
    return 0


def run_decode(args: argparse.Namespace) -> int:
    """``pyprecision decode``: raw codes of a format back to float32; returns the exit code."""
    fmt = pp.format(args.fmt)
    codes = load_npy(args.input)
    values = pp.decode(codes, fmt)
    save_npy_atomic(args.output, values, inputs=(args.input,))
    if not args.quiet:
        print(f"{args.input} ({codes.dtype} codes of {fmt.name}, shape {codes.shape}) -> "
              f"{args.output} (float32); NaN {int(np.isnan(values).sum())}, "
              f"inf {int(np.isinf(values).sum())}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``cast`` and ``decode`` subcommands."""
    p = sub.add_parser("cast", help="cast a .npy array to a format (writes raw codes)")
    p.add_argument("input", help="input .npy (float32/float64/float16/bfloat16/fp8/int)")
    p.add_argument("--to", required=True, help="target format (see `pyprecision formats`)")
    add_cast_options(p)
    p.add_argument("--decoded", action="store_true",
                   help="write the float32 values after the cast instead of the raw codes")
    p.add_argument("-o", "--output", required=True, help="output .npy")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=run_cast)

    d = sub.add_parser("decode", help="decode a .npy of raw codes to float32")
    d.add_argument("input", help="input .npy of codes (uint8/uint16/uint32)")
    d.add_argument("--from", dest="fmt", required=True, help="format of the codes")
    d.add_argument("-o", "--output", required=True, help="output .npy (float32)")
    d.add_argument("-q", "--quiet", action="store_true")
    d.set_defaults(func=run_decode)
