"""``pyprecision formats``: the format table, read from the C core."""
from __future__ import annotations

import argparse
import json

import pyprecision as pp


def format_table() -> str:
    """The formats as an aligned text table."""
    head = ("name", "aliases", "layout", "bias", "max", "max bits", "inf", "NaN (ml_dtypes)",
            "NaN (nvidia)", "values as")
    rows = [head]
    for f in pp.formats():
        width = f.bits // 4
        rows.append((
            f.name,
            ",".join(f.aliases),
            f"1-{f.exponent_bits}-{f.mantissa_bits}" + (f" <<{f.storage_shift}" if f.storage_shift else ""),
            str(f.bias),
            f"{f.max:.7g}",
            f"0x{f.max_bits:0{width}x}",
            f"0x{f.inf_bits:0{width}x}" if f.inf_bits is not None else "none",
            f"0x{f.nan_bits:0{width}x}",
            f"0x{f.nan_nvidia_bits:0{width}x}",
            f.dtype.name,
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def run(args: argparse.Namespace) -> int:
    """``pyprecision formats``: print the format table (or JSON); returns the exit code."""
    if args.json:
        print(json.dumps([{
            "name": f.name, "aliases": list(f.aliases), "bits": f.bits,
            "exponent_bits": f.exponent_bits, "mantissa_bits": f.mantissa_bits, "bias": f.bias,
            "max": f.max, "max_bits": f.max_bits, "has_inf": f.has_inf, "inf_bits": f.inf_bits,
            "nan_bits": f.nan_bits, "nan_nvidia_bits": f.nan_nvidia_bits,
            "min_normal": f.min_normal, "min_subnormal": f.min_subnormal,
            "storage_dtype": f.storage_dtype.name, "dtype": f.dtype.name,
            "hlo_name": f.hlo_name, "ir_name": f.ir_name, "safetensors_name": f.safetensors_name,
        } for f in pp.formats()], indent=2))
    else:
        print(format_table())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``formats`` subcommand."""
    p = sub.add_parser("formats", help="print the format table")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)
