"""Scaling of the distributed re-encode (``reencode_distributed``) over Dask workers on this machine.

Generates an 8-shard float32 checkpoint of about 4.3 GB (8 tensors of 64 MiB per shard) in a
temporary directory (``--dir``, default the system temp dir), then re-encodes it to bf16:
once with the one-machine ``reencode`` (the reference bytes), then on a ``LocalCluster`` of N
worker processes (one thread each) for every N of ``--workers``, checking that every output is
byte-identical to the reference. Also times sha256 over one shard (the resume check's cost, and
the hash each task computes beside its encode). Deletes everything afterwards.

    python bench/bench_distributed.py --workers 1 2 [--threads 1] [--repeat 1] [--dir /dev/shm]

Rates are GB (10^9 bytes) of float32 input per second; the load average is printed with each
figure (the machine is shared).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import tempfile
import time

import numpy as np

from pyprecision.io import SafetensorsWriter
from pyprecision.reencode import reencode, reencode_distributed
from pyprecision.reencode.resume import file_sha256

TENSOR_ELEMENTS = 16 << 20  # 64 MiB of float32 per tensor
TENSORS_PER_SHARD = 8
SHARDS = 8


def generate(directory: str) -> tuple[str, int]:
    """The checkpoint; returns (index path, bytes of tensor data)."""
    import json

    base = np.random.default_rng(0).standard_normal(TENSOR_ELEMENTS).astype(np.float32)
    buf = np.empty_like(base)
    wmap: dict[str, str] = {}
    for s in range(SHARDS):
        fname = f"model-{s + 1:05d}-of-{SHARDS:05d}.safetensors"
        names = [f"layers.{s * TENSORS_PER_SHARD + k}.weight" for k in range(TENSORS_PER_SHARD)]
        specs = [(n, np.float32, (4096, TENSOR_ELEMENTS // 4096)) for n in names]
        with SafetensorsWriter(os.path.join(directory, fname), specs, fsync=False) as w:
            for k, n in enumerate(names):
                np.multiply(base, np.float32(1 + (s * TENSORS_PER_SHARD + k) / 64), out=buf)
                w.write(n, buf)
        wmap.update(dict.fromkeys(names, fname))
    index = os.path.join(directory, "model.safetensors.index.json")
    with open(index, "w") as fh:
        json.dump({"metadata": {}, "weight_map": wmap}, fh)
    os.sync()
    return index, SHARDS * TENSORS_PER_SHARD * base.nbytes


def digest(d: str) -> str:
    """sha256 over the output directory's files (name and bytes, sorted)."""
    h = hashlib.sha256()
    for n in sorted(os.listdir(d)):
        h.update(n.encode())
        h.update(file_sha256(os.path.join(d, n)).encode())
    return h.hexdigest()


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its threads so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    """Run the benchmark and print one line per configuration."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--threads", type=int, default=None, help="C-core threads per task")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--checksum", choices=["sha256", "quick"], default="sha256")
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"threads per task: {args.threads or 'all cores'}; "
          f"input checksum: {args.checksum}")
    with tempfile.TemporaryDirectory(prefix="pyprecision-bench-dist-", dir=args.dir) as tmp:
        src = os.path.join(tmp, "in")
        os.mkdir(src)
        t = time.perf_counter()
        index, nbytes = generate(src)
        print(f"checkpoint: {SHARDS} shards, {nbytes / 1e9:.2f} GB float32, generated in "
              f"{time.perf_counter() - t:.1f} s")
        shard = os.path.join(src, f"model-00001-of-{SHARDS:05d}.safetensors")
        t = time.perf_counter()
        file_sha256(shard)
        dt = time.perf_counter() - t
        print(f"sha256 of one shard ({os.path.getsize(shard) / 1e9:.2f} GB, page cache): "
              f"{dt:.2f} s, {os.path.getsize(shard) / dt / 1e9:.2f} GB/s  [load {load()}]")
        ref = os.path.join(tmp, "ref")
        print(f"{'engine':<22} {'seconds':>8} {'GB/s':>6} {'speed-up':>8}  identical  load")
        base_s = None
        for _r in range(args.repeat):
            shutil.rmtree(ref, ignore_errors=True)
            cpu0 = _cpu_seconds()
            t = time.perf_counter()
            reencode(index, ref, "bf16", threads=args.threads)
            dt = time.perf_counter() - t
            cpu = _cpu_seconds() - cpu0
            print(f"{'one machine':<22} {dt:>8.2f} {nbytes / dt / 1e9:>6.2f} {'':>8}  "
                  f"{'(ref)':<9}  {load()}  (CPU {cpu:.1f} s = {cpu / dt:.2f} cores)")
        want = digest(ref)
        shutil.rmtree(ref)
        for n in args.workers:
            t = time.perf_counter()
            with LocalCluster(n_workers=n, processes=True, threads_per_worker=1,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                client.wait_for_workers(n)
                up = time.perf_counter() - t
                for _r in range(args.repeat):
                    out = os.path.join(tmp, f"out{n}")
                    shutil.rmtree(out, ignore_errors=True)
                    cpu0 = sum(client.run(_cpu_seconds).values())
                    t = time.perf_counter()
                    got = reencode_distributed(index, out, "bf16", client=client,
                                               threads=args.threads, checksum=args.checksum)
                    dt = time.perf_counter() - t
                    cpu = sum(client.run(_cpu_seconds).values()) - cpu0
                    same = digest(out) == want
                    base_s = base_s or dt
                    print(f"{f'dask {n} worker(s)':<22} {dt:>8.2f} {nbytes / dt / 1e9:>6.2f} "
                          f"{base_s / dt:>7.2f}x  {str(same):<9}  {load()}  "
                          f"(workers' CPU {cpu:.1f} s = {cpu / dt:.2f} cores; "
                          f"{len(set(got.placement.values()))} used; cluster up {up:.1f} s)")
                    shutil.rmtree(out)


if __name__ == "__main__":
    main()
