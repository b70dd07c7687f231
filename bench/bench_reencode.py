"""End-to-end throughput of ``pyprecision reencode`` against the C core's own encode speed.

Generates a sharded float32 checkpoint of ``--gb`` GB (default 2.1) in a temporary directory
(``--dir``, default the system temp dir; /dev/shm takes the disk out of the measurement), re-encodes
it to each ``--to`` format, and compares input bytes per second with ``pyprecision.encode`` on one
in-memory tensor of the same size as the checkpoint's tensors, and with the cost of only writing
the output bytes to the same directory (chunked pwrite + fsync, no encode: the I/O floor), and
with the same re-encode minus the writing (its sink replaced by one that drops the chunks: the
pipeline's own overhead). The checkpoint is in the page cache (just written). Deletes everything
afterwards.

    python bench/bench_reencode.py --gb 2.1 --to bf16 fp8e4m3fn [--dir /dev/shm] [--repeat 3]

Every figure is the median of --repeat runs (GB = 10^9 bytes of float32 input per second).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator

import numpy as np

import pyprecision as pp
from pyprecision.io import SafetensorsWriter
from pyprecision.reencode import reencode
from pyprecision.io.atomic import EarlyWriteback

TENSOR_ELEMENTS = 16 << 20  # 64 MiB of float32 per tensor
TENSORS_PER_SHARD = 4


def generate(directory: str, gb: float) -> tuple[str, int]:
    """A sharded checkpoint of about ``gb`` GB; returns (index path, bytes of tensor data)."""
    base = np.random.default_rng(0).standard_normal(TENSOR_ELEMENTS).astype(np.float32)
    n_tensors = max(1, int(np.ceil(gb * 1e9 / base.nbytes)))
    wmap: dict[str, str] = {}
    buf = np.empty_like(base)
    for shard in range(0, n_tensors, TENSORS_PER_SHARD):
        names = [
            f"layers.{i}.weight" for i in range(shard, min(shard + TENSORS_PER_SHARD, n_tensors))
        ]
        fname = f"model-{shard // TENSORS_PER_SHARD + 1:05d}.safetensors"
        specs = [(n, np.float32, (4096, TENSOR_ELEMENTS // 4096)) for n in names]
        with SafetensorsWriter(os.path.join(directory, fname), specs, fsync=False) as w:
            for k, n in enumerate(names):
                np.multiply(base, np.float32(1 + k / 8), out=buf)
                w.write(n, buf)
        wmap.update(dict.fromkeys(names, fname))
    total = n_tensors * base.nbytes
    index = os.path.join(directory, "model.safetensors.index.json")
    with open(index, "w") as fh:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, fh)
    return index, total


def core_speed(fmt: str, threads: int | None, repeat: int) -> float:
    """Median input GB/s of pyprecision.encode on one in-memory 256 MiB float32 array (larger than
    any cache, output preallocated)."""
    x = np.random.default_rng(1).standard_normal(4 * TENSOR_ELEMENTS).astype(np.float32)
    out = np.empty(x.shape, pp.format(fmt).storage_dtype)
    pp.encode(x, fmt, out=out, threads=threads)
    times = []
    for _ in range(max(5, repeat)):
        t = time.perf_counter()
        pp.encode(x, fmt, out=out, threads=threads)
        times.append(time.perf_counter() - t)
    return x.nbytes / statistics.median(times) / 1e9


def io_floor(directory: str, in_bytes: int, fmt: str) -> float:
    """Input-equivalent GB/s of only writing the output bytes (chunked pwrite with early
    writeback, then fsync)."""
    f = pp.format(fmt)
    out_bytes = in_bytes * f.bits // 32
    chunk = np.zeros(1 << 22, np.uint8)
    path = os.path.join(directory, "io-floor.bin")
    t = time.perf_counter()
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.ftruncate(fd, out_bytes)
        early = EarlyWriteback(fd)  # the same early writeback as reencode's writer
        for off in range(0, out_bytes, chunk.size):
            n = os.pwrite(fd, memoryview(chunk)[: min(chunk.size, out_bytes - off)], off)
            early.wrote(off, n)
        early.close()
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(path)
    return in_bytes / (time.perf_counter() - t) / 1e9


class _NullSink:
    """Accepts chunks and drops them: isolates the pipeline (map, encode, counts) from the disk."""

    def write(self, name: str, chunk: np.ndarray) -> None:
        pass


@contextlib.contextmanager
def _null_sink(*args: object, **kwargs: object) -> Iterator[_NullSink]:
    yield _NullSink()


def reencode_no_write(index: str, out: str, fmt: str, threads: int | None) -> float:
    """Input GB/s of the same re-encode with the output thrown away (open_sink replaced)."""
    import pyprecision.reencode.core as core

    real = core.open_sink
    core.open_sink = _null_sink  # type: ignore[assignment]
    try:
        return reencode(index, out, fmt, threads=threads).gb_per_s
    finally:
        core.open_sink = real
        shutil.rmtree(out, ignore_errors=True)  # the index is still written


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--gb", type=float, default=2.1)
    ap.add_argument("--to", nargs="+", default=["bf16", "fp8e4m3fn"])
    ap.add_argument("--dir", default=None, help="where to generate (default: system temp dir)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench_reencode_", dir=args.dir)
    try:
        t = time.perf_counter()
        index, total = generate(work, args.gb)
        os.sync()  # let writeback of the generated files finish before measuring anything
        print(
            f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"checkpoint {total / 1e9:.2f} GB float32 in {work} (generated in "
            f"{time.perf_counter() - t:.1f} s)"
        )
        print(
            f"{'format':<10} {'core GB/s':>10} {'write-only GB/s':>16} {'no-write GB/s':>14} "
            f"{'reencode GB/s':>14} {'vs core':>8} {'vs write':>9} {'seconds':>8}"
        )
        for fmt in args.to:
            core = core_speed(fmt, args.threads, args.repeat)
            med = statistics.median
            floor = med(io_floor(work, total, fmt) for _ in range(args.repeat))
            out = os.path.join(work, "null")
            os.sync()
            nowrite = med(
                reencode_no_write(index, out, fmt, args.threads) for _ in range(args.repeat)
            )
            runs = []
            for r in range(args.repeat):
                out = os.path.join(work, f"out-{fmt}-{r}")
                runs.append(reencode(index, out, fmt, threads=args.threads))
                shutil.rmtree(out)
                os.sync()
            gbs = med(s.gb_per_s for s in runs)
            secs = med(s.seconds for s in runs)
            print(
                f"{fmt:<10} {core:>10.2f} {floor:>16.2f} {nowrite:>14.2f} {gbs:>14.2f} "
                f"{gbs / core:>8.0%} {gbs / floor:>9.0%} {secs:>8.2f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
