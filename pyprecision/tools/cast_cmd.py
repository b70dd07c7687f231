"""``pyprecision cast`` and ``pyprecision decode``: the cast core on .npy files."""
from __future__ import annotations

import argparse

import numpy as np

import pyprecision as pp
from pyprecision.kernel import cast_stats
from pyprecision.tools._files import load_npy, save_npy_atomic
from pyprecision.tools._options import add_cast_options, cast_options


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


def _load_codes(args: argparse.Namespace, fmt: pp.Format) -> np.ndarray:
    """The codes to decode: a .npy / .npz / safetensors array, or a raw binary file read with
    --dtype (default: the format's code type) and --shape (default: flat)."""
    from pyprecision.io import load_dump

    if str(args.input).lower().endswith((".npy", ".npz", ".safetensors")):
        if args.dtype or args.shape:
            return np.asarray(load_dump(args.input, dtype=args.dtype, shape=args.shape))
        return load_npy(args.input) if args.input.lower().endswith(".npy") else \
            np.asarray(load_dump(args.input))
    return np.asarray(load_dump(args.input, dtype=args.dtype or fmt.storage_dtype,
                                shape=args.shape))


def run_decode(args: argparse.Namespace) -> int:
    """``pyprecision decode``: raw codes of a format back to float32; returns the exit code."""
    fmt = pp.format(args.fmt)
    codes = _load_codes(args, fmt)
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
    d.add_argument("input", help="codes: a .npy (uint8/uint16/uint32), or a raw binary file "
                   "read with --dtype/--shape")
    d.add_argument("--from", dest="fmt", required=True, help="format of the codes")
    d.add_argument("--dtype", default=None,
                   help="raw file: element type (default: the format's code type, e.g. uint8)")
    d.add_argument("--shape", default=None, help="raw file: shape, e.g. 64,128 (default: flat)")
    d.add_argument("-o", "--output", required=True, help="output .npy (float32)")
    d.add_argument("-q", "--quiet", action="store_true")
    d.set_defaults(func=run_decode)
