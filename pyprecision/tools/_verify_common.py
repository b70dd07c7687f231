"""What ``verify`` and ``explain`` (and ``verify``'s many-dump mode) share: the cast policy and the
input/dump pair of a cast check, the program report's JSON, the tolerance options, and the precision
flags rebuilt from a namespace. A leaf of ``tools``: it imports no command module, so the command
modules no longer import each other (issue 24: the tools circle)."""
from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from pyprecision.errors import CastError


def tolerance_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``verify_program`` that set what passes."""
    from pyprecision.verify import TRANSCENDENTAL_RTOL

    return {"rtol": args.rtol, "atol": args.atol, "exact": args.exact,
            "transcendental_rtol": TRANSCENDENTAL_RTOL if args.transcendental_rtol is None
            else args.transcendental_rtol, "intermediates": args.intermediates}


def cast_policy(args: argparse.Namespace) -> Any:
    from pyprecision.verify import CastPolicy

    if args.rounding == "stochastic" and args.seed is None:
        raise CastError("--rounding stochastic needs --seed: the random words decide every result "
                        "(without them, verify with rne and read the diagnosis)")
    if args.rounding != "stochastic" and args.seed is not None:
        raise CastError("--seed is only used with --rounding stochastic")
    return CastPolicy(args.format, rounding=args.rounding, saturate=args.saturate, nan=args.nan,
                      seed=args.seed)


def read_pair(args: argparse.Namespace, fmt: Any) -> tuple[np.ndarray, np.ndarray]:
    from pyprecision.verify import RawSpec, is_container, parse_dtype, parse_shape, read_array

    shape = parse_shape(args.shape) if args.shape is not None else None
    in_shape = parse_shape(args.input_shape) if args.input_shape is not None else shape
    if is_container(args.input):
        in_spec = RawSpec(None, in_shape if args.input_shape is not None else None)
    else:
        in_spec = RawSpec(parse_dtype(args.input_dtype), in_shape, args.byte_order,
                          args.input_offset)
    x = read_array(args.input, args.input_key, in_spec)
    dtype = parse_dtype(args.dtype) if args.dtype else None
    if is_container(args.dump):
        d_spec = RawSpec(dtype, shape)
    else:
        if shape is None and x.ndim != 1:
            shape = tuple(x.shape)  # a raw dump defaults to the input's shape
        d_spec = RawSpec(dtype or fmt.storage_dtype, shape, args.byte_order, args.offset)
    d = read_array(args.dump, args.dump_key, d_spec, void_as=fmt.storage_dtype)
    if in_shape is None and not is_container(args.input) and x.size == d.size:
        x = x.reshape(d.shape)  # a raw input without a shape takes the dump's
    return x, d


def program_json(reports: list[tuple[str, Any]], show: int, extra: dict[str, Any]) -> dict[str, Any]:
    from pyprecision.verify import report_json

    outs = {name: report_json(rep, show) for name, rep in reports}

    def total(key: str) -> int:
        return sum(o[key] for o in outs.values())

    maxes = [o["max_ulp"] for o in outs.values()]
    first = [dict(m, output=name) for name, o in outs.items() for m in o["first_mismatches"]]
    return {
        "kind": "program", **extra,
        "elements": total("elements"), "matches": total("matches"),
        "mismatches": total("mismatches"),
        "max_ulp": None if any(m is None for m in maxes) else max(maxes, default=0),
        "ok": all(o["ok"] for o in outs.values()),
        "first_mismatches": first[:show],
        "diagnosis": extra.get("diagnosis"),
        "outputs": outs,
    }


def program_flags(args: argparse.Namespace) -> list[str]:
    """The precision flags, rebuilt from the namespace in spellings the CLI accepts again."""
    from pyprecision.frontend import config_from_namespace, config_to_argv

    return config_to_argv(config_from_namespace(args))  # FlagError on conflicting flags


def precision_flags_given(args: argparse.Namespace) -> bool:
    """Whether any precision flag differs from its default."""
    from pyprecision.frontend import config_from_namespace, parse_flags

    return config_from_namespace(args) != parse_flags([])
