"""Re-encode a checkpoint into another format, tensor by tensor, streaming (docs/io.md).

Floating tensors selected by ``include`` / ``exclude`` globs are rounded once into the target
format by the C core, in chunks, straight from a read-only memory map; every other tensor is copied
unchanged. Each output file is written to a temporary name and renamed only when complete.
"""

from __future__ import annotations

import fnmatch
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from pyprecision.errors import DumpError
from pyprecision.formats import Format
from pyprecision.formats import format as _format
from pyprecision.io import (
    OutputDirectory,
    TensorStore,
    as_local,
    check_output_path,
    exists,
    input_files,
    is_dir,
    join,
    open_tensors,
)
from pyprecision.kernel import encode, random_words
from pyprecision.reencode.folder import (
    FolderPlan,
    copy_folder,
    plan_folder,
    refuse_occupied,
    upcast_dtype,
)
from pyprecision.reencode.plan import (
    SCALE_SUFFIX,
    ReencodeOptions,
    output_specs,
    plan_outputs,
    run_metadata,
    tensor_seed,
)
from pyprecision.reencode.stats import ReencodeSummary, TensorResult, count_specials
from pyprecision.reencode.write import QUEUE_DEPTH, BackgroundWriter, open_sink, write_index

__all__ = ["ReencodeOptions", "reencode", "tensor_seed", "amax_scale", "SCALE_SUFFIX"]

#: Rotating output buffers per tensor: one being encoded, one being written, QUEUE_DEPTH queued.
BUFFERS = QUEUE_DEPTH + 2


def amax_scale(x: np.ndarray, f: Format, chunk: int = 1 << 23) -> np.float32:
    """The float32 scale s with amax(|finite x|) / s ≤ f.max, as close to equality as float32
    allows (rounded up); 1 for an all-zero (or non-finite) tensor, at least float32's smallest
    normal. The re-encoded tensor holds x / s (computed in float64, rounded once);
    x ≈ decode · s."""
    flat = x.reshape(-1)
    amax = 0.0
    for i in range(0, flat.size, chunk):
        c = np.asarray(flat[i : i + chunk])
        c = c if c.dtype == np.float64 else c.astype(np.float32)
        amax = max(amax, float(np.max(np.abs(c), where=np.isfinite(c), initial=0.0)))
    if amax == 0.0:
        return np.float32(1.0)
    s = np.float32(amax / f.max)
    if float(s) * f.max < amax:
        s = np.nextafter(s, np.float32(np.inf))
    return max(s, np.finfo(np.float32).tiny)


def _source(x: np.ndarray) -> np.ndarray:
    """``x`` flat in C order (a view when it already is), native byte order."""
    if x.dtype.byteorder == ">":
        x = x.astype(x.dtype.newbyteorder("="))
    return x.reshape(-1) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(-1)


def encode_chunks(
    x: np.ndarray,
    f: Format,
    o: ReencodeOptions,
    name: str,
    scale: np.float32 | None,
    result: TensorResult | None,
    emit: Callable[[np.ndarray, int, Callable[[], None] | None], None],
) -> None:
    """Encode ``x`` chunk by chunk, handing each chunk's codes, its input bytes and the function
    that counts its special values (run it before reusing the chunk) to ``emit``.

    Bit-identical to one whole-tensor ``encode`` (stochastic words come from the tensor's own
    generator stream by flat index). ``emit`` may hold on to a chunk until ``BUFFERS - 2`` later
    chunks have been emitted (the background writer's queue depth).
    """
    flat = _source(x)
    n = flat.size
    kw: dict[str, Any] = {"rounding": o.rounding, "saturate": o.saturate, "nan": o.nan}
    tseed = tensor_seed(int(o.seed or 0), name) if o.rounding == "stochastic" else 0
    step = max(1, int(o.chunk_elements))
    bufs = [np.empty(min(n, step), f.storage_dtype) for _ in range(BUFFERS)]
    scratch = np.empty(min(n, step), f.storage_dtype)
    for k, start in enumerate(range(0, max(n, 1), step)):  # an empty tensor still emits once
        c = flat[start : start + step]
        nbytes = c.nbytes
        if scale is not None:
            c = c.astype(np.float64) / np.float64(scale)
        rb = random_words(tseed, c.size, start) if o.rounding == "stochastic" else None
        out = bufs[k % BUFFERS][: c.size]
        encode(c, f, **kw, random_bits=rb, threads=o.threads, out=out)
        count = None
        if result is not None:

            def count(out: np.ndarray = out, c: np.ndarray = c, rb: Any = rb) -> None:
                count_specials(out, c, f, kw, rb, result, scratch)

        emit(out, nbytes, count)


def fresh_encode(
    x: np.ndarray, f: Format, o: ReencodeOptions, name: str, scale: np.float32 | None
) -> np.ndarray:
    """One whole-tensor encode with the same options (what ``--verify`` compares against)."""
    src = np.ascontiguousarray(x)
    if scale is not None:
        src = src.astype(np.float64) / np.float64(scale)
    if o.rounding == "stochastic":
        return encode(
            src,
            f,
            rounding="stochastic",
            saturate=o.saturate,
            nan=o.nan,
            seed=tensor_seed(int(o.seed or 0), name),
            threads=o.threads,
        )
    return encode(src, f, rounding=o.rounding, saturate=o.saturate, nan=o.nan, threads=o.threads)


def _copy_chunks(x: np.ndarray, step: int, emit: Callable[[np.ndarray, int, None], None]) -> None:
    flat = _source(x)
    for i in range(0, max(flat.size, 1), step):
        c = flat[i : i + step]
        emit(c, c.nbytes, None)


def _write_file(
    store: TensorStore,
    fin: str,
    fout: str,
    kind: str,
    o: ReencodeOptions,
    f: Format,
    summary: ReencodeSummary,
    progress: Callable[[int], None],
    inputs: list[Path | str],
) -> None:
    tensors = store.in_file(fin)
    names = set(store)
    if o.scale:
        clash = [t.name for t in tensors if o.selects(t) and t.name + SCALE_SUFFIX in names]
        if clash:
            raise DumpError(
                f"{fin}: {clash[0]!r} already has a tensor named "
                f"{clash[0] + SCALE_SUFFIX!r}; cannot add its scale"
            )
    specs = output_specs(tensors, o, f)
    meta = {
        k: v
        for k, v in store.metadata.get(fin, {}).items()
        if isinstance(v, str) and not k.startswith("pyprecision.")
    }
    meta.update(run_metadata(o, os.path.basename(fin)))
    fmts = {n: fm for n, _, _, fm in specs if fm is not None}
    if fmts:
        meta["pyprecision.dtypes"] = json.dumps(fmts, sort_keys=True)
    if o.scale:
        meta["pyprecision.scales"] = json.dumps(
            {t.name: t.name + SCALE_SUFFIX for t in tensors if o.selects(t)}, sort_keys=True
        )
    with (
        open_sink(fout, kind, specs, meta, inputs=inputs, overwrite=o.overwrite) as final,
        BackgroundWriter(final, progress) as sink,
    ):
        for t in tensors:
            x = store.load(t.name)
            enc = o.selects(t)
            res = TensorResult(
                name=t.name,
                file=fout,
                action="encoded" if enc else "kept",
                in_dtype=t.format or t.dtype.name,
                out_dtype=f.name if enc else (t.format or t.dtype.name),
                shape=t.shape,
                bytes_in=t.nbytes,
                bytes_out=t.size * f.bits // 8 if enc else t.nbytes,
            )

            def emit(
                chunk: np.ndarray,
                nbytes: int,
                before: Callable[[], None] | None,
                name: str = t.name,
            ) -> None:
                sink.write(name, chunk, nbytes, before)

            if enc:
                s = amax_scale(x, f) if o.scale else None
                encode_chunks(x, f, o, t.name, s, res, emit)
                if s is not None:
                    sink.write(t.name + SCALE_SUFFIX, np.array(s, np.float32), 0)
                    res.scale, res.bytes_out = float(s), res.bytes_out + 4
            else:
                _copy_chunks(x, max(1, o.chunk_elements), emit)
            summary.tensors.append(res)
            del x
            store.done(t.name)
    summary.outputs.append(fout)


def _verify_file(
    store: TensorStore, fout: str, o: ReencodeOptions, f: Format, results: list[TensorResult]
) -> list[str]:
    out = open_tensors(fout)
    bad = []
    for r in results:
        want_fmt = f.name if r.action == "encoded" else store[r.name].format
        want_dt = f.dtype if r.action == "encoded" else store[r.name].dtype
        got_t = out[r.name]
        if got_t.format != want_fmt or got_t.dtype.newbyteorder("=") != want_dt.newbyteorder("="):
            bad.append(
                f"{fout}: {r.name}: a reader decodes it as {got_t.format or got_t.dtype} "
                f"(stored {got_t.stored}), expected {want_fmt or want_dt}"
            )
            continue
        x = store.load(r.name)
        y = out.load(r.name)
        if y.shape != x.shape:
            bad.append(f"{fout}: {r.name}: shape {y.shape}, expected {x.shape}")
            continue
        if r.action == "encoded":
            s = amax_scale(x, f) if o.scale else None
            if s is not None and out.load(r.name + SCALE_SUFFIX).reshape(()) != s:
                bad.append(f"{fout}: {r.name}{SCALE_SUFFIX}: stored scale differs from {s}")
            want = fresh_encode(x, f, o, r.name, s).reshape(-1)
            got = np.ascontiguousarray(y).reshape(-1).view(f.storage_dtype)
        else:
            want = _source(x).view(np.uint8)
            got = _source(y).view(np.uint8)
        diff = np.flatnonzero(want != got)
        shape, size = x.shape, want.size
        del x, y, want, got
        store.done(r.name)
        out.done(r.name)
        if diff.size:
            first = np.unravel_index(int(diff[0]), shape) if shape else ()
            bad.append(
                f"{fout}: {r.name}: {diff.size} of {size} differ, first at "
                f"{tuple(int(i) for i in first)}"
            )
    out.close()
    return bad


def reencode(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    to: str,
    *,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> ReencodeSummary:
    """Re-encode checkpoint ``inputs`` into format ``to`` and write them to ``output``.

    ``inputs``: a .safetensors / .npz / .npy file, a sharded checkpoint's index JSON, a directory,
    or a list. ``output``: a file for a single input file (``.npz`` → npz, else safetensors),
    otherwise a directory that mirrors the input files (and index). ``options`` are the fields of
    :class:`ReencodeOptions`. ``progress(n)`` is called with input bytes as they are processed.
    Returns a :class:`ReencodeSummary`; with ``verify=True`` its ``verify_failures`` lists every
    tensor that differs from a fresh encode (empty when all match).
    """
    o = ReencodeOptions(to=to, **options).checked()
    f = _format(o.to)
    items, store, out, pairs, index_out, kind, ins = _open_job(inputs, output, o)
    finals = [fout for _, fout in pairs] + ([index_out] if index_out else [])
    folder = _folder_plan(items, out, pairs, ins, o)
    summary = ReencodeSummary(format=f.name, options=asdict(o))
    if folder is not None:
        summary.skipped = list(folder.skipped)
    t0 = time.perf_counter()
    if pairs[0][1] == out:  # one output file
        check_output_path(out, ins, overwrite=o.overwrite)
        _write_file(store, pairs[0][0], out, kind, o, f, summary, progress or _no_progress, ins)
    else:
        if is_dir(out):  # refuse an output over an input before touching the directory
            for fout in finals:
                check_output_path(fout, ins, overwrite=o.overwrite)
        with OutputDirectory(out) as d:
            for fout in finals:
                check_output_path(fout, ins, overwrite=o.overwrite)
            for fin, fout in pairs:
                replaced = exists(fout)
                _write_file(store, fin, fout, kind, o, f, summary, progress or _no_progress, ins)
                d.published(fout, replaced)
            if folder is not None:  # the model folder's other files, before the index
                encoded = any(r.action == "encoded" for r in summary.tensors)
                summary.notes += copy_folder(
                    folder, out, d, f, encoded=encoded, overwrite=o.overwrite, inputs=ins,
                    upcast=upcast_dtype([r.in_dtype for r in summary.tensors
                                         if r.action == "encoded"]),
                )
                summary.copied = [join(out, rel) for rel in folder.copy]
            if index_out is not None:  # the index last: it names only complete shards
                replaced = exists(index_out)
                _write_index(store, pairs, index_out, o, summary, ins)
                d.published(index_out, replaced)
    summary.seconds = time.perf_counter() - t0
    if o.verify:
        t1 = time.perf_counter()
        for _, fout in pairs:
            results = [r for r in summary.tensors if r.file == fout]
            summary.verify_failures += _verify_file(store, fout, o, f, results)
        summary.verified = True
        summary.verify_seconds = time.perf_counter() - t1
    store.close()
    return summary


class _OpenJob(NamedTuple):
    """A re-encode job's inputs opened and its outputs planned (nothing written yet)."""

    items: list[str]
    store: TensorStore
    out: str
    pairs: list[tuple[str, str]]
    index_out: str | None
    kind: str
    ins: list[Path | str]


def _open_job(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    o: ReencodeOptions,
) -> _OpenJob:
    """Open ``inputs``, check ``--include`` against them and plan the outputs under ``output``:
    the set-up shared by :func:`reencode` and the distributed one."""
    items = [as_local(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike)) else inputs)]
    store = open_tensors(items, allow_symlinks=o.allow_symlinks)
    _check_include(store, o)
    out = as_local(output)
    pairs, index_out, kind = plan_outputs(store, items, out, o)
    return _OpenJob(items, store, out, pairs, index_out, kind, input_files(store))


def _folder_plan(
    items: list[str], out: str, pairs: list[tuple[str, str]], ins: list[Path | str], o: ReencodeOptions
) -> FolderPlan | None:
    """For one input directory written to a directory: its non-tensor files to copy (checked
    before anything is written: none may exist in the output unless ``overwrite``)."""
    if len(items) != 1 or not is_dir(items[0]) or pairs[0][1] == out:
        return None
    plan = plan_folder(items[0], [str(p) for p in ins], allow_symlinks=o.allow_symlinks)
    if not o.overwrite:
        refuse_occupied(out, [fout for _, fout in pairs] + [join(out, rel) for rel in plan.copy])
    return plan


def _no_progress(n: int) -> None:
    """The default progress callback: nothing."""


def _check_include(store: TensorStore, o: ReencodeOptions) -> None:
    """An ``--include`` glob that matches no tensor name is a mistake worth saying (DumpError)."""
    for g in o.include:
        if not any(fnmatch.fnmatchcase(name, g) for name in store):
            have = ", ".join(list(store)[:8])
            raise DumpError(f"--include {g!r} matches no tensor; have {have}")


def _write_index(
    store: TensorStore,
    pairs: list[tuple[str, str]],
    index_out: str,
    o: ReencodeOptions,
    summary: ReencodeSummary,
    ins: list[Path | str],
) -> None:
    assert store.index is not None
    wmap = {}
    for fin, fout in pairs:
        for t in store.in_file(fin):
            wmap[t.name] = os.path.basename(fout)
            if o.scale and o.selects(t):
                wmap[t.name + SCALE_SUFFIX] = os.path.basename(fout)
    write_index(
        index_out,
        store.index,
        wmap,
        summary.bytes_out,
        run_metadata(o, os.path.basename(store.index_path or "")),
        inputs=ins,
        overwrite=o.overwrite,
    )
    summary.outputs.append(index_out)
