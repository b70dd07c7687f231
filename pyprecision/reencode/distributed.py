"""Re-encode on a Dask cluster: one task per input shard, resumable (docs/distributed.md).

Every task runs the one-machine shard writer of :mod:`pyprecision.reencode.core` on a worker, so
the bits are those of :func:`~pyprecision.reencode.reencode` whatever the number of workers
(stochastic words come from each tensor's own stream, :func:`tensor_seed`). Each task publishes
its shard atomically and then its completion record; the driver writes the index last, only when
every shard is complete. ``dask.distributed`` is imported only when a function here is called.

Inputs and outputs may be URLs (docs/distributed.md, "On object storage"): ``file://`` is its
path; any other URL goes through :mod:`pyprecision.io`'s helpers, tasks read shards by ranged
reads and publish through the io layer's atomic remote publish, records and marker are objects.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pyprecision.errors import DumpError, EngineError
from pyprecision.formats import format as _format
from pyprecision.io import (
    INCOMPLETE_MARKER,
    check_output_path,
    exists,
    file_size,
    input_files,
    is_dir,
    join,
    open_tensors,
)
from pyprecision.reencode.core import (
    _folder_plan,
    _no_progress,
    _open_job,
    _verify_file,
    _write_file,
    _write_index,
    reencode,
)
from pyprecision.reencode.folder import copy_folder, upcast_dtype
from pyprecision.reencode.plan import ReencodeOptions
from pyprecision.reencode.resume import (
    CHECKSUMS,
    JobDirectory,
    ShardRecord,
    bit_options,
    head_sha256,
    made_by,
    read_record,
    record_matches,
    source_checksum,
    write_record,
)
from pyprecision.reencode.stats import ReencodeSummary, TensorResult

__all__ = ["reencode_distributed", "connect", "DistributedSummary", "ShardOutcome"]

#: How long to wait for a scheduler before giving up (seconds).
CONNECT_TIMEOUT = 10.0


def _distributed() -> Any:
    """The ``distributed`` module, or one clear EngineError naming the extra to install."""
    try:
        import distributed
    except ImportError:
        raise EngineError(
            "the Dask engine is not installed: pip install pyprecision[dask]"
        ) from None
    return distributed


@contextlib.contextmanager
def connect(
    scheduler: str | None = None, workers: int | None = None, *, timeout: float = CONNECT_TIMEOUT
) -> Iterator[Any]:
    """A ``dask.distributed.Client``: to the scheduler at ``scheduler``, or (``scheduler`` None) to
    a new local cluster of ``workers`` processes (default: one per core, one thread each), closed
    on exit. An unreachable scheduler is one EngineError after ``timeout`` seconds."""
    dd = _distributed()
    if scheduler is not None:
        try:
            client = dd.Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as exc:
            raise EngineError(
                f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s: "
                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from None
        try:
            yield client
        finally:
            client.close()
        return
    n = workers or os.cpu_count() or 1
    if n < 1:
        raise EngineError(f"--dask {n}: expected at least one worker")
    try:
        cluster = dd.LocalCluster(
            n_workers=n, processes=True, threads_per_worker=1, dashboard_address=None
        )
    except (RuntimeError, OSError, TimeoutError) as exc:  # e.g. workers cannot be spawned
        raise EngineError(
            f"cannot start a local Dask cluster of {n} workers: {exc} (from a script, call it "
            "under `if __name__ == '__main__':`)"
        ) from None
    try:
        with dd.Client(cluster) as client:
            yield client
    finally:
        cluster.close()


@dataclass
class ShardOutcome:
    """What one task did to one shard: ``action`` is encoded | skipped (a matching output)."""

    source: str
    output: str
    action: str
    tensors: list[TensorResult]
    verify_failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    worker: str = ""


@dataclass
class DistributedSummary(ReencodeSummary):
    """A :class:`ReencodeSummary` plus which shards were encoded and which were found complete
    and matching (``resumed``: left as an interrupted run wrote them)."""

    encoded: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)  # complete, matching: not redone
    workers: int = 0
    placement: dict[str, str] = field(default_factory=dict)  # output shard → worker address


@dataclass(frozen=True)
class _Job:
    items: tuple[str, ...]
    options: ReencodeOptions
    kind: str
    outdir: str
    checksum: str = "sha256"


def _hash_in_background(path: str, how: str) -> tuple[threading.Thread, list[str]]:
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(source_checksum(path, how)), daemon=True)
    t.start()
    return t, box


def run_shard(job: _Job, fin: str, fout: str, check: bool, replace_existing: bool) -> ShardOutcome:
    """The task: skip ``fin`` if ``check`` and its record matches, else encode it into ``fout``
    (published atomically), then write its record. Runs on a worker."""
    t0 = time.perf_counter()
    o = job.options
    worker = _worker_name()
    if check:
        rec = read_record(job.outdir, fout)
        sha = source_checksum(fin, job.checksum)
        if rec is not None and record_matches(rec, o, fin, fout, job.kind, sha):
            tensors = [TensorResult(**{**t, "file": fout, "shape": tuple(t["shape"])})
                       for t in rec.tensors]
            failures = _verify_kept(job, fout, tensors) if o.verify else []
            return ShardOutcome(fin, fout, "skipped", tensors, failures,
                                time.perf_counter() - t0, worker)
        hasher, box = None, [sha]
    else:
        thread, box = _hash_in_background(fin, job.checksum)
        hasher = thread
    if replace_existing or exists(fout):
        # an output of this job whose record is missing or stale (checked by the driver)
        o = replace(o, overwrite=True)
    store = open_tensors(list(job.items), allow_symlinks=o.allow_symlinks)
    f = _format(o.to)
    part = ReencodeSummary(format=f.name, options=asdict(o))
    try:
        _write_file(store, fin, fout, job.kind, o, f, part, _no_progress, input_files(store))
        if hasher is not None:
            hasher.join()
        if not box:  # the background hash failed: hash here, raising its error
            box.append(source_checksum(fin, job.checksum))
        write_record(job.outdir, fout, ShardRecord(
            options=bit_options(o),
            source=os.path.basename(fin),
            source_size=file_size(fin),
            source_checksum=box[0],
            output=os.path.basename(fout),
            output_size=file_size(fout),
            output_head_sha256=head_sha256(fout, job.kind),
            tensors=[asdict(t) for t in part.tensors],
        ))
        failures = _verify_file(store, fout, o, f, part.tensors) if o.verify else []
    finally:
        store.close()
    return ShardOutcome(fin, fout, "encoded", part.tensors, failures, time.perf_counter() - t0,
                        worker)


def _verify_kept(job: _Job, fout: str, tensors: list[TensorResult]) -> list[str]:
    """``verify=True`` checks a kept (resumed) shard against a fresh encode too."""
    store = open_tensors(list(job.items), allow_symlinks=job.options.allow_symlinks)
    try:
        return _verify_file(store, fout, job.options, _format(job.options.to), tensors)
    finally:
        store.close()


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return ""


def _workers(client: Any, timeout: float = CONNECT_TIMEOUT) -> int:
    """The number of workers, waiting up to ``timeout`` s for a first one (EngineError if none)."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        raise EngineError(
            f"the Dask scheduler {client.scheduler.address} has no workers "
            f"(none joined within {timeout:g} s)"
        ) from None
    return len(client.scheduler_info().get("workers", {}))


def _single_file(items: list[str], out: str, to: str, options: dict[str, Any]) -> ReencodeSummary:
    """The task of a one-file job: the one-machine re-encode, run on a worker."""
    return reencode(items, out, to, **options)


def _plan_existing(
    pairs: list[tuple[str, str]], outdir: str, o: ReencodeOptions, resumed: bool
) -> list[tuple[bool, bool]]:
    """Per shard (check its record, replace it): decided before any task runs, so a refusal
    writes nothing. An existing output is replaced with ``overwrite``; checked against its record
    when it has one; replaced when the directory is an interrupted job's and the file records
    this job's options; otherwise (another job's options) refused."""
    plan = []
    want = bit_options(o)
    for fin, fout in pairs:
        there = exists(fout)
        rec = read_record(outdir, fout) if there else None
        if not there:
            plan.append((False, False))
        elif o.overwrite:
            plan.append((False, True))
        elif rec is not None and rec.options == want and rec.source == os.path.basename(fin):
            plan.append((True, False))  # the task compares the input checksum
        elif resumed and made_by(fout, o, os.path.basename(fin)):
            plan.append((False, True))
        else:
            check_output_path(fout, overwrite=False)  # raises: exists, not this job's
            plan.append((False, False))
    return plan


def _adopt_seed(o: ReencodeOptions, options: dict[str, Any], outdir: str,
                pairs: list[tuple[str, str]]) -> ReencodeOptions:
    """A resumed stochastic job without an explicit seed takes the seed its records name."""
    if o.rounding != "stochastic" or options.get("seed") is not None:
        return o
    for _, fout in pairs:
        rec = read_record(outdir, fout)
        if rec is not None and rec.options.get("seed") is not None:
            return replace(o, seed=int(rec.options["seed"]))
    return o


def reencode_distributed(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    to: str,
    *,
    client: Any,
    retries: int = 2,
    checksum: str = "sha256",
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> DistributedSummary:
    """:func:`~pyprecision.reencode.reencode` on the Dask ``client``: one task per input shard.

    Same arguments and the same output bytes as the one-machine function. A task that fails is
    retried ``retries`` times (a task whose worker dies is rescheduled by Dask). An interrupted
    directory job resumes: shards whose output is complete and matches (header, options, input
    ``checksum``: sha256 | quick, :mod:`~pyprecision.reencode.resume`) are skipped;
    ``overwrite=True`` redoes all.
    ``progress(n)`` gets each finished shard's input bytes. Returns a :class:`DistributedSummary`.
    """
    o = ReencodeOptions(to=to, **options).checked()
    if checksum not in CHECKSUMS:
        raise DumpError(f"unknown checksum {checksum!r}; valid: {', '.join(CHECKSUMS)}")
    f = _format(o.to)
    items, store, out, pairs, index_out, kind, ins = _open_job(inputs, output, o)
    sizes = {fin: sum(t.nbytes for t in store.in_file(fin)) for fin, _ in pairs}
    summary = DistributedSummary(format=f.name, options=asdict(o), workers=_workers(client))
    report = progress or _no_progress
    t0 = time.perf_counter()
    if pairs[0][1] == out:  # one output file: one task, the one-machine path
        check_output_path(out, ins, overwrite=o.overwrite)
        fut = client.submit(_single_file, items, out, to, options, retries=retries, pure=False)
        one = _result(fut, pairs[0][0])
        report(sizes[pairs[0][0]])
        summary.tensors, summary.outputs = one.tensors, one.outputs
        summary.verified, summary.verify_failures = one.verified, one.verify_failures
        summary.encoded = [out]
        summary.seconds = time.perf_counter() - t0
        return summary
    if is_dir(out):
        for fout in [p[1] for p in pairs] + ([index_out] if index_out else []):
            check_output_path(fout, ins, overwrite=True)  # never over an input
    resumed = exists(join(out, INCOMPLETE_MARKER))
    o = _adopt_seed(o, options, out, pairs)
    summary.options = asdict(o)
    plan = _plan_existing(pairs, out, o, resumed)  # every refusal before anything is written
    src = os.path.basename(store.index_path or "")
    if (
        index_out is not None
        and exists(index_out)
        and not o.overwrite
        and not (resumed and made_by(index_out, o, src))
    ):
        check_output_path(index_out, overwrite=False)  # raises: exists, not this job's
    # a model folder's other files: an interrupted job's copies are simply copied again
    redo = o.overwrite or resumed
    folder = _folder_plan(items, out, pairs, ins, replace(o, overwrite=redo))
    if folder is not None:
        summary.skipped = list(folder.skipped)
    with JobDirectory(out) as d:
        job = _Job(tuple(items), o, kind, out, checksum)
        outcomes = _run_tasks(client, job, pairs, plan, retries, sizes, report)
        for oc in outcomes:
            summary.tensors += oc.tensors
            summary.outputs.append(oc.output)
            summary.verify_failures += oc.verify_failures
            (summary.encoded if oc.action == "encoded" else summary.resumed).append(oc.output)
            summary.placement[oc.output] = oc.worker
        if folder is not None:  # as the one-machine path: after the shards, before the index
            encoded = any(r.action == "encoded" for r in summary.tensors)
            upcast = upcast_dtype([r.in_dtype for r in summary.tensors if r.action == "encoded"])
            summary.notes += copy_folder(folder, out, d, f, encoded=encoded,  # type: ignore[arg-type]
                                         overwrite=redo, inputs=ins, upcast=upcast)
            summary.copied = [join(out, rel) for rel in folder.copy]
        if index_out is not None:
            idx_o = replace(o, overwrite=True) if exists(index_out) else o
            _write_index(store, pairs, index_out, idx_o, summary, ins)
    summary.verified = o.verify
    summary.seconds = time.perf_counter() - t0
    store.close()
    return summary


def _run_tasks(
    client: Any,
    job: _Job,
    pairs: list[tuple[str, str]],
    plan: list[tuple[bool, bool]],
    retries: int,
    sizes: dict[str, int],
    report: Callable[[int], None],
) -> list[ShardOutcome]:
    """Submit one task per shard, report progress as they finish; outcomes in shard order."""
    dd = _distributed()
    futures = [
        client.submit(run_shard, job, fin, fout, chk, rep, retries=retries, pure=False,
                      key=f"reencode-shard-{i}-{os.path.basename(fout)}-{os.urandom(4).hex()}")
        for i, ((fin, fout), (chk, rep)) in enumerate(zip(pairs, plan, strict=True))
    ]
    where = {fut.key: fin for fut, (fin, _) in zip(futures, pairs, strict=True)}
    done: dict[str, ShardOutcome] = {}
    try:
        for fut in dd.as_completed(futures):
            oc = _result(fut, where[fut.key])
            done[fut.key] = oc
            report(sizes[oc.source])
    except BaseException:
        client.cancel(futures)
        raise
    return [done[fut.key] for fut in futures]


def _result(fut: Any, source: str) -> Any:
    """A finished future's result; a task that killed its workers is one EngineError."""
    try:
        return fut.result()
    except DumpError:
        raise
    except Exception as exc:
        if type(exc).__name__ in ("KilledWorker", "CancelledError", "FutureCancelledError"):
            raise EngineError(f"{source}: the Dask task was lost ({type(exc).__name__}: {exc}); "
                              "re-run the same command to resume") from None
        raise
