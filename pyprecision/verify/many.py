"""Verify many dumps at once (one per device or NeuronCore): find them, match each to its input by
name, run the checks in parallel, and summarise (docs/distributed.md, "verify over many dumps").

The matching rule: a dump's *stem* is its file name without the last extension (``core3.bin`` →
``core3``); its input is the file with the same stem in the input directory (any extension), or
the one input file given for every dump. The engine is injected: a Dask client, a local process
pool, or the calling process. Dumps, inputs and the report directory may be URLs (``s3://``,
``memory://`` ...: a directory is a prefix, a glob is fsspec's); ``file://`` is a plain path.
"""
from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyprecision.errors import DumpError
from pyprecision.io import (
    as_local,
    atomic_file,
    filesystem,
    is_dir,
    is_file,
    is_remote,
    join,
    remote_errors,
)

__all__ = ["DumpResult", "find_dumps", "is_many", "match_inputs", "run_many", "summary_lines",
           "write_reports", "stem"]

_GLOB = set("*?[")


def is_many(spec: str) -> bool:
    """Whether ``--dump`` names many dumps: a directory (a prefix) or a glob pattern."""
    spec = as_local(spec)
    return bool(_GLOB & set(os.path.basename(spec))) or is_dir(spec)


def _files_in(directory: str) -> list[str]:
    """The visible regular files of a directory (one listing of a remote prefix), sorted, each
    named under ``directory`` as it was spelled."""
    if not is_remote(directory):
        names = sorted(n for n in os.listdir(directory) if not n.startswith("."))
        return [p for p in (os.path.join(directory, n) for n in names) if os.path.isfile(p)]
    fs, inner = filesystem(directory)
    with remote_errors(directory, "list"):
        entries = fs.ls(inner, detail=True)
    names = sorted(str(e["name"]).rstrip("/").rsplit("/", 1)[-1] for e in entries
                   if e.get("type") == "file")
    return [join(directory, n) for n in names if not n.startswith(".")]


def _remote_glob(spec: str) -> list[str]:
    """fsspec's glob of a URL pattern, each match spelled under the pattern's own prefix."""
    cut = min(i for i, ch in enumerate(spec) if ch in _GLOB)
    base = spec[: spec.rfind("/", 0, cut) + 1]  # up to the '/' before the first wildcard
    fs, inner = filesystem(spec)
    root = fs._strip_protocol(filesystem(base)[1]).rstrip("/")
    with remote_errors(spec, "list"):
        found = fs.glob(inner, detail=True)
    out = []
    for name, info in found.items():
        rel = fs._strip_protocol(str(name))[len(root):].lstrip("/")
        if info.get("type") == "file" and rel:
            out.append(join(base, rel))
    return sorted(out)


def stem(path: str) -> str:
    """A file name without its last extension: the key dumps and inputs are matched by."""
    base = os.path.basename(path)
    root, _ = os.path.splitext(base)
    return root or base


def find_dumps(spec: str) -> list[str]:
    """The dump files of a directory (its visible regular files) or of a glob pattern, sorted."""
    spec = as_local(spec)
    if not (_GLOB & set(os.path.basename(spec))) and is_dir(spec):
        found = _files_in(spec)
    elif is_remote(spec):
        found = _remote_glob(spec)
    else:
        found = [f for f in sorted(glob.glob(spec)) if os.path.isfile(f)]
    if not found:
        raise DumpError(f"{spec}: no dump files (expected a directory of dumps or a glob)")
    return found


def match_inputs(dumps: Sequence[str], inputs: str) -> list[tuple[str, str]]:
    """(input, dump) pairs: ``inputs`` a file → it for every dump; a directory → per dump the file
    of the same stem. A dump without an input, or with several candidates, is a DumpError naming
    it (before anything runs)."""
    inputs = as_local(inputs)
    if not is_dir(inputs):
        if not is_file(inputs):
            raise DumpError(f"{inputs}: no such file or directory")
        return [(inputs, d) for d in dumps]
    by_stem: dict[str, list[str]] = {}
    for p in _files_in(inputs):
        by_stem.setdefault(stem(p), []).append(p)
    pairs = []
    for d in dumps:
        cands = [c for c in by_stem.get(stem(d), []) if not _same(c, d)]
        if not cands:
            raise DumpError(f"{d}: no input named {stem(d)}.* in {inputs} (dumps and inputs are "
                            "matched by file name without the extension)")
        if len(cands) > 1:
            raise DumpError(f"{d}: several inputs match it in {inputs}: "
                            f"{', '.join(os.path.basename(c) for c in cands)}")
        pairs.append((cands[0], d))
    return pairs


def _same(a: str, b: str) -> bool:
    """Whether two names are the same file (a dump inside the input directory is not its own
    input): the same absolute path, or the same URL."""
    if is_remote(a) or is_remote(b):
        return a == b
    return os.path.abspath(a) == os.path.abspath(b)


@dataclass
class DumpResult:
    """One dump's check: ``report`` is its JSON report (None when ``error`` says why it could not
    be checked); ``ok`` whether it passed."""

    dump: str
    input: str
    ok: bool
    report: dict[str, Any] | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run_many(
    check: Callable[[Any], DumpResult],
    jobs: Sequence[Any],
    *,
    client: Any = None,
    processes: int = 1,
    progress: Callable[[DumpResult], None] | None = None,
) -> list[DumpResult]:
    """``check(job)`` for every job, in the jobs' order: on the Dask ``client`` when given, else on
    a pool of ``processes`` local processes (1: here, one after another). ``check`` must be a
    module-level function (it is pickled) that reports errors in its result, not by raising."""
    report = progress or (lambda r: None)
    if client is not None:
        from distributed import as_completed

        futures = client.map(check, list(jobs), pure=False)
        order = {f.key: i for i, f in enumerate(futures)}
        out: list[DumpResult | None] = [None] * len(futures)
        for fut in as_completed(futures):
            res = fut.result()
            out[order[fut.key]] = res
            report(res)
        return [r for r in out if r is not None]
    if processes <= 1 or len(jobs) <= 1:
        results = []
        for job in jobs:
            results.append(check(job))
            report(results[-1])
        return results
    with ProcessPoolExecutor(max_workers=min(processes, len(jobs))) as pool:
        results = list(pool.map(check, jobs))
    for r in results:
        report(r)
    return results


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)


def summary_lines(results: Sequence[DumpResult]) -> list[str]:
    """The one summary table: per dump its input, elements, mismatches, max ULP and verdict."""
    rows = [["dump", "input", "elements", "mismatches", "max ulp", "result"]]
    for r in results:
        rep = r.report or {}
        verdict = "OK" if r.ok else ("ERROR: " + (r.error or "") if r.error else "FAIL")
        rows.append([os.path.basename(r.dump), os.path.basename(r.input),
                     _cell(rep.get("elements")), _cell(rep.get("mismatches")),
                     _cell(rep.get("max_ulp")), verdict])
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    lines = ["  ".join([row[0].ljust(widths[0]), row[1].ljust(widths[1]),
                        *(row[c].rjust(widths[c]) for c in (2, 3, 4)), row[5]]).rstrip()
             for row in rows]
    n_ok = sum(r.ok for r in results)
    n_err = sum(r.error is not None for r in results)
    lines.append(f"{len(results)} dumps: {n_ok} OK, {len(results) - n_ok - n_err} FAIL, "
                 f"{n_err} ERROR")
    return lines


def write_reports(results: Sequence[DumpResult], directory: str) -> list[str]:
    """One JSON report per dump, ``<dump file name>.json`` in ``directory`` (created if needed;
    its parent must exist; a URL prefix needs no creating), each written atomically; returns
    the paths."""
    directory = as_local(directory)
    if not is_remote(directory) and not os.path.isdir(directory):
        parent = os.path.dirname(os.path.abspath(directory))
        if not os.path.isdir(parent):
            raise DumpError(f"{directory}: no such directory: {parent}")
        os.mkdir(directory)
    names = [os.path.basename(r.dump) for r in results]
    if len(set(names)) != len(names):
        raise DumpError(f"{directory}: two dumps share a file name; their reports would collide")
    paths = []
    for r in results:
        p = join(directory, os.path.basename(r.dump) + ".json")
        doc = {"dump": r.dump, "input": r.input, "ok": r.ok, "error": r.error, **r.extra,
               "report": r.report}
        with atomic_file(p, overwrite=True) as fh:
            fh.write(json.dumps(doc, indent=2, ensure_ascii=False).encode() + b"\n")
        paths.append(p)
    return paths
