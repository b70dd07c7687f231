"""GMAC/s of the PE dot (pyprecision.kernel.pe_dot, csrc/dot.c) at MiniLM-L6 and BERT-base shapes
(batch 8, sequence 128), one and two threads, against:

* the old path (before issue 27): 2-D dots in csrc/intops.c's dot_rows (bench/dot_old.c, built
  here with the core's flags, rows split over threads like the pool did); batched dots in the
  NumPy loop over k that pe_matmul ran;
* numpy.matmul (OpenBLAS): NOT ordered (blocked, FMA, reassociated), so a ceiling, not a peer;
* torch.matmul where torch imports (also not ordered).

Every number is the best of ``--repeat`` timings. One-thread rows are timed by the calling thread's
CPU time (``time.thread_time``: the 2 cores here are shared with other jobs, and wall time measures
the neighbours); two-thread rows by wall time. Each thread count runs in its own child process
with OMP/OPENBLAS/MKL_NUM_THREADS and PYPRECISION_THREADS set before numpy loads. The new dot's
result is checked equal (bit for bit) to the old path's on every shape before it is timed.

    python bench/bench_dot.py                  # the table of bench/README.md
    python bench/bench_dot.py --repeat 3 --threads 1
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name, batch, M, K, N
SHAPES = [
    ("minilm qkv/out [1024,384]x[384,384]", 1, 1024, 384, 384),
    ("minilm ffn-up [1024,384]x[384,1536]", 1, 1024, 384, 1536),
    ("minilm ffn-down [1024,1536]x[1536,384]", 1, 1024, 1536, 384),
    ("minilm attention [96,128,32]x[96,32,128]", 96, 128, 32, 128),
    ("bert ffn-up [1024,768]x[768,3072]", 1, 1024, 768, 3072),
]


def _old_lib():
    from cffi import FFI

    ffi = FFI()
    ffi.cdef("void old_dot_rows(const float *fa, const float *fb, float *out, size_t k, size_t n,"
             " size_t begin, size_t end);")
    ffi.set_source("_pp_bench_dot_old", (HERE / "dot_old.c").read_text(),
                   extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-fno-fast-math"])
    tmp = Path(tempfile.mkdtemp(prefix="pp-bench-dot-"))
    so = ffi.compile(tmpdir=str(tmp), verbose=False)
    import importlib.util

    spec = importlib.util.spec_from_file_location("_pp_bench_dot_old", so)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.ffi, mod.lib


def _best(fn: Callable[[], object], repeat: int, threads: int) -> float:
    clock = time.thread_time if threads == 1 else time.perf_counter
    fn()  # warm: pages, pool, caches
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _shape_row(shape: tuple, threads: int, repeat: int, ctx: dict) -> dict:
    import numpy as np

    from pyprecision.kernel import pe_dot

    name, batch, m, k, n = shape
    ffi, old, pool, torch = ctx["ffi"], ctx["old"], ctx["pool"], ctx["torch"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, m, k) if batch > 1 else (m, k)).astype(np.float32)
    b = rng.standard_normal((batch, k, n) if batch > 1 else (k, n)).astype(np.float32)
    out = np.empty((m, n), np.float32)
    pa, pb, po = (ffi.cast("float *", x.ctypes.data) for x in (a, b, out))

    def old_2d() -> np.ndarray:
        if pool is None:
            old.old_dot_rows(pa, pb, po, k, n, 0, m)
        else:
            step = -(-m // threads)
            list(pool.map(lambda r: old.old_dot_rows(pa, pb, po, k, n, r, min(m, r + step)),
                          range(0, m, step)))
        return out

    def old_batched() -> np.ndarray:  # pe_matmul's NumPy loop before issue 27
        acc = np.zeros((batch, m, n), np.float32)
        for kk in range(k):
            acc = acc + a[..., :, kk:kk + 1] * b[..., kk:kk + 1, :]
        return acc

    old_fn = old_2d if batch == 1 else old_batched
    if pe_dot(a, b, threads=threads).tobytes() != old_fn().tobytes():
        raise SystemExit(f"{name}: the new dot differs from the old path")
    macs = batch * m * k * n
    row = {"name": name, "threads": threads, "macs": macs,
           "new": macs / _best(lambda: pe_dot(a, b, threads=threads), repeat, threads),
           "avx2": macs / _best(lambda: pe_dot(a, b, threads=threads, isa="avx2"), repeat,
                                threads),
           "old": macs / _best(old_fn, max(1, repeat // 2) if batch > 1 else repeat, threads),
           "numpy": macs / _best(lambda: np.matmul(a, b), repeat, threads)}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        row["torch"] = macs / _best(lambda: torch.matmul(ta, tb), repeat, threads)
    row["load"] = _load()
    return row


def child(threads: int, repeat: int, only: str | None) -> None:
    """One thread count: a JSON line per shape on stdout."""
    from concurrent.futures import ThreadPoolExecutor

    ffi, old = _old_lib()
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    ctx = {"ffi": ffi, "old": old, "torch": torch,
           "pool": ThreadPoolExecutor(threads) if threads > 1 else None}
    for shape in SHAPES:
        if not only or only in shape[0]:
            print(json.dumps(_shape_row(shape, threads, repeat, ctx)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="timings per number (best kept)")
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--only", help="shapes whose name contains this")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.repeat, args.only)
        return
    rows: list[dict] = []
    for t in args.threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t),
                   MKL_NUM_THREADS=str(t), PYPRECISION_THREADS=str(t))
        cmd = [sys.executable, __file__, "--child", str(t), "--repeat", str(args.repeat)]
        if args.only:
            cmd += ["--only", args.only]
        res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        rows += [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    from pyprecision.kernel import isa_auto

    cpu = next((ln.split(":", 1)[1].strip() for ln in
                Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")), "?")
    print(f"{cpu}; pyprecision isa={isa_auto()}; GMAC/s, best of {args.repeat}; "
          "T=1: thread CPU time, T=2: wall")
    cols = ["new", "avx2", "old", "numpy", "torch"]
    print(f"{'shape':42} T  " + " ".join(f"{c:>7}" for c in cols)
          + "  new/old new/numpy new/torch  load")
    for r in rows:
        vals = " ".join(f"{r[c] / 1e9:7.1f}" if c in r else f"{'-':>7}" for c in cols)
        torch_ratio = f"{r['new'] / r['torch']:9.2f}" if "torch" in r else f"{'-':>9}"
        print(f"{r['name']:42} {r['threads']}  {vals}  {r['new'] / r['old']:7.1f} "
              f"{r['new'] / r['numpy']:9.2f} {torch_ratio}  {r['load']}")


if __name__ == "__main__":
    main()
