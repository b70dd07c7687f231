"""``pyprecision reencode`` — re-encode a checkpoint into another format, streaming.

The work is :func:`pyprecision.reencode.reencode`; this module parses flags, draws the progress bar
(tqdm on stderr, only on a terminal and without --quiet), prints the summary table and returns
0 (1 when --verify finds a tensor that differs from a fresh encode).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

from pyprecision.errors import FlagError
from pyprecision.io import open_tensors
from pyprecision.reencode import ReencodeOptions, ReencodeSummary, reencode
from pyprecision.tools._options import add_cast_options, thread_count


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``reencode`` subcommand."""
    p = subparsers.add_parser(
        "reencode",
        help="re-encode a checkpoint (safetensors, sharded, .npz, .npy) into another format",
        description="Round every floating tensor of a checkpoint once into --to FORMAT, tensor by "
        "tensor from memory-mapped input, and write safetensors (or .npz) atomically. Tensors "
        "that are not floating, or are filtered out by --include/--exclude, are copied unchanged.",
        allow_abbrev=False,
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help=".safetensors, *.safetensors.index.json, .npz, .npy, a torch .pt, *.bin.index.json, "
        "or a directory",
    )
    p.add_argument(
        "-o",
        "--output",
        help="output file (single input file) or directory (mirrors the input files; a model "
        "folder's other files are copied); required unless --list",
    )
    p.add_argument(
        "--to",
        required=True,
        metavar="FORMAT",
        help="bf16, fp16, fp32r, fp8e4, fp8e4m3fn, fp8e5 (or an alias)",
    )
    add_cast_options(
        p, seed_help="stochastic rounding seed (recorded in the output metadata)", threads=False
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="re-encode only tensors whose name matches (repeatable; default: all)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="keep tensors whose name matches unchanged, e.g. '*norm*' '*.bias'",
    )
    p.add_argument(
        "--scale",
        choices=["amax"],
        default=None,
        help="per-tensor scale: store x/s with s = amax/max, s in '<name>.scale'",
    )
    p.add_argument("--output-format", choices=["safetensors", "npz", "pt"], default=None)
    p.add_argument(
        "--threads", type=thread_count, default=None, help="C core threads (default: all cores)"
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="re-read the output and check every tensor against a fresh encode",
    )
    p.add_argument(
        "--force", action="store_true", help="replace existing output files (never an input)"
    )
    p.add_argument(
        "--allow-symlinks",
        action="store_true",
        help="accept shards that are symbolic links leading out of the checkpoint's directory "
        "(e.g. a Hugging Face cache snapshot); refused by default",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run one task per shard on this Dask scheduler (tcp://host:8786); resumable",
    )
    p.add_argument(
        "--dask",
        nargs="?",
        type=int,
        const=0,
        default=None,
        metavar="N",
        help="run one task per shard on a local Dask cluster of N worker processes "
        "(default: one per core); resumable",
    )
    p.add_argument(
        "--checksum",
        choices=["sha256", "quick"],
        default="sha256",
        help="with --scheduler/--dask: how a resumed run recognises an unchanged input shard: "
        "sha256 of every byte (default) or quick (size, mtime, header)",
    )
    p.add_argument(
        "--scheduler-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="give up on an unreachable --scheduler after this long (default 10)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--list",
        action="store_true",
        help="only list the input tensors, what would happen to them and, when sharded, their shard",
    )
    p.set_defaults(func=run)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "rounding": args.rounding,
        "saturate": args.saturate,
        "nan": args.nan,
        "seed": args.seed,
        "include": tuple(args.include),
        "exclude": tuple(args.exclude),
        "scale": args.scale,
        "output_format": args.output_format,
        "threads": args.threads,
        "verify": args.verify,
        "overwrite": args.force,
        "allow_symlinks": args.allow_symlinks,
    }


def _list(args: argparse.Namespace) -> int:
    o = ReencodeOptions(to=args.to, **_options(args)).checked()
    store = open_tensors(args.inputs, allow_symlinks=args.allow_symlinks)
    sharded = len(store.files) > 1
    for name, t in store.items():
        what = f"→ {o.to}" if o.selects(t) else "kept"
        shard = f"\t{os.path.basename(t.path)}" if sharded else ""
        print(f"{name}\t{t.format or t.dtype.name}{list(t.shape)}\t{what}{shard}")
    return 0


def _bar_width() -> int:
    """The terminal's width, or 80 when it reports none (some ptys say 0 columns)."""
    cols = shutil.get_terminal_size(fallback=(80, 24)).columns
    return cols if cols >= 40 else 80


def run(args: argparse.Namespace) -> int:
    """Run the re-encode; print the summary; exit 1 if --verify found a difference."""
    if args.list:
        return _list(args)
    if args.output is None:
        raise FlagError("reencode: -o/--output is required (unless --list)")
    show = not args.quiet and sys.stderr.isatty()
    bar = None
    if show:
        from tqdm import tqdm  # type: ignore[import-untyped]

        total = sum(
            t.nbytes for t in open_tensors(args.inputs, allow_symlinks=args.allow_symlinks).values()
        )
        bar = tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            unit_divisor=1000,
            file=sys.stderr,
            desc=f"reencode → {args.to}",
            ncols=_bar_width(),
        )
    distributed = args.scheduler is not None or args.dask is not None
    try:
        if distributed:
            summary = _distributed(args, bar.update if bar is not None else None)
        else:
            summary = reencode(
                args.inputs,
                args.output,
                args.to,
                progress=bar.update if bar is not None else None,
                **_options(args),
            )
    finally:
        if bar is not None:
            bar.close()
    print(summary.table())
    if distributed:  # a DistributedSummary (its module loads only for Dask)
        d: Any = summary
        print(
            f"shards: {len(d.encoded)} encoded, {len(d.resumed)} resumed "
            f"(complete and matching) on {d.workers} Dask workers"
        )
    return 1 if summary.verify_failures else 0


def _distributed(args: argparse.Namespace, progress: Any) -> ReencodeSummary:
    """The re-encode on Dask (--scheduler ADDRESS or --dask [N])."""
    if args.scheduler is not None and args.dask is not None:
        from pyprecision.errors import EngineError

        raise EngineError("give --scheduler ADDRESS or --dask [N], not both")
    from pyprecision.reencode import connect, reencode_distributed  # Dask only when asked

    with connect(args.scheduler, args.dask or None, timeout=args.scheduler_timeout) as client:
        return reencode_distributed(
            args.inputs,
            args.output,
            args.to,
            client=client,
            checksum=args.checksum,
            progress=progress,
            **_options(args),
        )
