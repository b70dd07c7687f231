"""``pyprecision verify --dump DIR_OR_GLOB``: the same check over many dumps, in parallel.

Each dump is matched to its input by name (:func:`pyprecision.verify.match_inputs`), checked by
:func:`check_one` (a module-level function, so a process pool or a Dask worker can run it), and
summarised in one table; ``--json-dir`` keeps every dump's full JSON report.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from pyprecision.errors import CastError, PyPrecisionError

__all__ = ["add_many_arguments", "run_many_dumps", "check_one"]

#: Namespace entries that are not plain data (not sent to the workers).
_LOCAL = ("func",)


def add_many_arguments(group: Any) -> None:
    """The options of the many-dump mode (``--dump`` a directory or a glob)."""
    group.add_argument("--json-dir", metavar="DIR",
                       help="many dumps: write each dump's JSON report to DIR/<dump>.json")
    group.add_argument("--jobs", type=int, default=None, metavar="N",
                       help="many dumps: local worker processes (default: one per core)")
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="many dumps: run the checks on this Dask scheduler")
    group.add_argument("--dask", nargs="?", type=int, const=0, default=None, metavar="N",
                       help="many dumps: run the checks on a local Dask cluster of N processes")
    group.add_argument("--scheduler-timeout", type=float, default=10.0, metavar="SECONDS",
                       help="give up on an unreachable --scheduler after this long (default 10)")


def _cast_doc(args: argparse.Namespace) -> tuple[bool, dict[str, Any], dict[str, Any]]:
    from pyprecision.tools._verify_common import cast_policy, read_pair
    from pyprecision.verify import report_json, verify_cast

    policy = cast_policy(args)
    x, d = read_pair(args, policy.fmt)
    rep = verify_cast(x, d, policy, max_ulp=args.max_ulp, run_diagnosis=not args.no_diagnosis)
    return rep.ok, report_json(rep, args.show), {"kind": "cast"}


def _program_doc(args: argparse.Namespace) -> tuple[bool, dict[str, Any], dict[str, Any]]:
    from pyprecision.tools._verify_common import program_flags, program_json, tolerance_options
    from pyprecision.verify import verify_program

    passes = None if args.passes is None else [
        n.strip() for n in args.passes.split(",") if n.strip()]
    check = verify_program(args.program, args.inputs, args.dump, flags=program_flags(args),
                           target=args.target, hlo_passes=passes, max_ulp=args.max_ulp,
                           run_diagnosis=not args.no_diagnosis, as_written=args.as_written,
                           **tolerance_options(args))
    extra = dict(check.extra)
    if extra.get("divergence") is not None:
        extra["divergence"] = extra["divergence"].to_json()
    extra["diagnosis"] = check.diagnosis.to_json() if check.diagnosis else None
    return check.ok, program_json(check.reports, args.show, extra), {"kind": "program"}


def check_one(job: tuple[dict[str, Any], str, str]) -> Any:
    """Check one (input, dump) pair with the command's options; an input error is the result's
    ``error``, never an exception (the other dumps still run)."""
    from pyprecision.tools._options import printable
    from pyprecision.verify import DumpResult

    options, inp, dump = job
    args = argparse.Namespace(**options)
    args.dump = dump
    if args.program:
        args.inputs = inp
    else:
        args.input = inp
    try:
        ok, doc, extra = _program_doc(args) if args.program else _cast_doc(args)
    except (PyPrecisionError, OSError) as exc:
        return DumpResult(dump, inp, False, None, error=printable(str(exc)))
    return DumpResult(dump, inp, ok, doc, extra=extra)


def _engine(args: argparse.Namespace) -> Any:
    """A context manager yielding a Dask client, or None (local processes)."""
    import contextlib

    if args.scheduler is None and args.dask is None:
        return contextlib.nullcontext(None)
    if args.scheduler is not None and args.dask is not None:
        raise CastError("give --scheduler ADDRESS or --dask [N], not both")
    from pyprecision.reencode import connect

    return connect(args.scheduler, args.dask or None, timeout=args.scheduler_timeout)


def run_many_dumps(args: argparse.Namespace) -> int:
    """Verify every dump of ``--dump`` (a directory or glob) against its input; print one table
    (or JSON); exit 0 when all pass, 1 when one fails, 2 when one could not be checked."""
    from pyprecision.verify import find_dumps, match_inputs, run_many, summary_lines, write_reports

    if args.plot:
        raise CastError("--plot draws one report; with many dumps use --json-dir")
    if args.jobs is not None and args.jobs < 1:
        raise CastError("--jobs must be at least 1")
    inputs = args.inputs if args.program else args.input
    pairs = match_inputs(find_dumps(args.dump), inputs)
    options = {k: v for k, v in vars(args).items() if k not in _LOCAL}
    jobs = [(options, inp, dump) for inp, dump in pairs]
    with _engine(args) as client:
        results = run_many(check_one, jobs, client=client,
                           processes=args.jobs or os.cpu_count() or 1)
    if args.json_dir:
        write_reports(results, args.json_dir)
    if args.json:
        doc = {"kind": "many", "ok": all(r.ok for r in results),
               "dumps": [{"dump": r.dump, "input": r.input, "ok": r.ok, "error": r.error,
                          "elements": (r.report or {}).get("elements"),
                          "mismatches": (r.report or {}).get("mismatches"),
                          "max_ulp": (r.report or {}).get("max_ulp")} for r in results]}
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print("\n".join(summary_lines(results)))
        if args.json_dir:
            from pyprecision.io import join

            where = join(args.json_dir, "<dump>.json")
            print(f"reports: {where} ({len(results)} files)")
    if any(r.error is not None for r in results):
        return 2
    return 0 if all(r.ok for r in results) else 1
