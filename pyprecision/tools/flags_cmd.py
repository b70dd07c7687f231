"""``pyprecision flags ...`` — show what neuronx-cc's precision flags canonicalize to.

Prints the canonical pair, the forwarded ``fp32-cast-`` token, then the pass configuration (mode,
dtypes, the passes the pipeline would run, tensorizer options and the boolean toggles).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from pyprecision.frontend import PrecisionConfig, add_precision_arguments, config_from_namespace


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``flags`` subcommand."""
    parser = subparsers.add_parser(
        "flags",
        help="canonicalize neuronx-cc precision flags and show the pass configuration",
        description="Canonicalize --auto-cast/--auto-cast-type/--fp32-cast/--fast-math and the "
        "precision toggles exactly like neuronx-cc 2.24 and print the result.",
        allow_abbrev=False,
    )
    add_precision_arguments(parser)
    one_line_errors(parser)
    parser.set_defaults(func=run)


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` report a bad flag or value as ONE line on stderr (exit 2), not usage+error."""

    def error(message: str) -> NoReturn:
        sys.stderr.write(f"{parser.prog}: error: {message}\n")
        raise SystemExit(2)

    parser.error = error  # type: ignore[method-assign]
    known = parser.parse_known_args

    def parse_known_args(args: Any = None, namespace: Any = None) -> Any:
        ns, extras = known(args, namespace)
        if extras:  # report here, before the top-level parser prints its usage block
            error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value) if value else "[]"
    return str(value)


def describe(config: PrecisionConfig) -> list[str]:
    """The lines ``pyprecision flags`` prints for ``config``."""
    from pyprecision.passes import pipeline_pass_names  # tools may import passes

    return [
        f"auto_cast: {config.auto_cast}",
        f"auto_cast_type: {config.auto_cast_type}",
        f"token: {config.token}",
        f"fp32_cast_mode: {config.fp32_cast_mode}",
        f"source: {config.source}",
        f"scope: {config.scope}",
        f"dtype: {_fmt(config.dtype)}",
        f"transpose_dtype: {_fmt(config.transpose_dtype)}",
        f"autocast_dtype: {config.autocast_dtype}",
        f"passes: {_fmt(tuple(pipeline_pass_names(config)))}",
        f"fast_math: {_fmt(config.fast_math)}",
        f"tensorizer_options: {_fmt(config.tensorizer_options)}",
        f"enable_mixed_precision_accumulation: {_fmt(config.enable_mixed_precision_accumulation)}",
        f"enable_saturate_infinity: {_fmt(config.enable_saturate_infinity)}",
        f"enable_internal_native_int64: {_fmt(config.enable_internal_native_int64)}",
        "internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3: "
        + _fmt(config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3),
    ]


def run(args: argparse.Namespace) -> int:
    """Print the canonical configuration; conflicting flags raise FlagError (exit 2 via cli)."""
    config = config_from_namespace(args)
    print("\n".join(describe(config)))
    return 0
