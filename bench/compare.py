"""Cast throughput, in one run: pyprecision vs ml_dtypes, numpy float16, torch (when installed) and
the memory floor (a C streaming copy with the same bytes in and out, bench/floor.c, built here).

    python bench/compare.py                 # 16 Mi elements, best of 7, 1 thread and all threads
    python bench/compare.py --quick         # 4 Mi elements, best of 3

Every number is GB/s of *input* (bytes read per second), outputs preallocated; the ratios are
against the floor with the same bytes in and out, ml_dtypes (np.copyto into its dtype) and torch
(Tensor.copy_). The allocating rows (`cast,no out`: a new output on every call) are against a
floor that allocates too (a fresh buffer per call, so its first-touch page faults and zeroing are
in it). A benchmark, never a test: it asserts nothing and prints the targets it checks.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

import pyprecision
from pyprecision.kernel import isa_auto

HERE = Path(__file__).resolve().parent
FORMATS = ["bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"]
ROUNDINGS = ["rne", "rtz", "rna", "stochastic"]
ML_TYPES = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "fp8e4": ml_dtypes.float8_e4m3,
            "fp8e4m3fn": ml_dtypes.float8_e4m3fn, "fp8e5": ml_dtypes.float8_e5m2}


def build_floor() -> Any:
    """Compile bench/floor.c with cffi (-O3 -march=native) and return its lib."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef("void floor_copy(const void *src, size_t in_bytes, void *dst, size_t out_bytes,"
             " size_t begin, size_t end);")
    ffi.set_source("_pp_bench_floor", (HERE / "floor.c").read_text(),
                   extra_compile_args=["-O3", "-march=native"])
    tmp = Path(tempfile.mkdtemp(prefix="pp_floor_"))
    so = ffi.compile(tmpdir=str(tmp), verbose=False)
    sys.path.insert(0, str(tmp))
    import importlib.util

    spec = importlib.util.spec_from_file_location("_pp_bench_floor", so)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def best(fn: Callable[[], Any], reps: int,
         clock: Callable[[], float] = time.perf_counter) -> float:
    """Best time of `reps` runs after one warm-up."""
    fn()
    t = float("inf")
    for _ in range(reps):
        s = clock()
        fn()
        t = min(t, clock() - s)
    return t


class Bench:
    def __init__(self, n: int, reps: int, threads: list[int], cpu_clock: bool) -> None:
        self.n, self.reps, self.threads = n, reps, threads
        # single-thread rows: the calling thread's CPU time (immune to time-slicing by other
        # processes on a shared machine) when cpu_clock, else wall time
        self.clock1 = time.thread_time if cpu_clock else time.perf_counter
        self.rows: list[dict[str, Any]] = []
        self.floor_lib = build_floor()
        # (in bytes, out bytes, threads, allocating) -> best GB/s / its runner
        self.floor_cache: dict[tuple[int, int, int, bool], float] = {}
        self.floor_runners: dict[tuple[int, int, int, bool], Callable[[], None]] = {}
        self.pool = ThreadPoolExecutor(max(threads))
        rng = np.random.default_rng(0)
        self.x32 = (rng.standard_normal(n) * 4).astype(np.float32)
        self.x64 = self.x32.astype(np.float64) * (1 + 2.0**-30)
        try:
            import torch  # noqa: F401

            self.torch: Any = torch
        except ImportError:
            self.torch = None

    # -- the floor: same bytes in and out, streaming stores, split over threads like our pool;
    # alloc: into a new buffer on every call (np.empty, as cast() without out= allocates), so the
    # first touch of its pages (the faults, the kernel's zeroing) is in the floor too
    def floor_runner(self, in_b: int, out_b: int, threads: int,
                     alloc: bool = False) -> Callable[[], None]:
        key = (in_b, out_b, threads, alloc)
        if key not in self.floor_runners:
            src = np.ones(self.n * in_b, np.uint8)
            dst = np.ones(self.n * out_b, np.uint8)
            ffi, lib = self.floor_lib.ffi, self.floor_lib.lib
            ps = ffi.cast("void *", src.ctypes.data)
            step = ((self.n + threads - 1) // threads + 63) // 64 * 64
            parts = [(b, min(self.n, b + step)) for b in range(0, self.n, step)]
            pool = self.pool

            def run() -> None:
                out = np.empty(self.n * out_b, np.uint8) if alloc else dst
                pd = ffi.cast("void *", out.ctypes.data)
                _keep = (src, out)  # noqa: F841 - the buffers live as long as the copy
                if threads == 1:
                    lib.floor_copy(ps, in_b, pd, out_b, 0, self.n)
                else:
                    list(pool.map(lambda p: lib.floor_copy(ps, in_b, pd, out_b, *p), parts))

            self.floor_runners[key] = run
        return self.floor_runners[key]

    def measure(self, fn: Callable[[], Any], in_b: int, out_b: int, threads: int,
                alloc: bool = False) -> float:
        """GB/s of input of fn, timed alternately with the floor of the same shape (so both see
        the same machine load; alloc: the allocating floor); the floor keeps the best it ever
        reached."""
        floor = self.floor_runner(in_b, out_b, threads, alloc)
        clock = self.clock1 if threads == 1 else time.perf_counter
        fn()
        floor()
        t_ours = t_floor = float("inf")
        for _ in range(self.reps):
            s = clock()
            fn()
            t_ours = min(t_ours, clock() - s)
            s = clock()
            floor()
            t_floor = min(t_floor, clock() - s)
        key = (in_b, out_b, threads, alloc)
        gb = self.n * in_b / 1e9
        self.floor_cache[key] = max(self.floor_cache.get(key, 0.0), gb / t_floor)
        return gb / t_ours

    def add(self, op: str, fmt: str, mode: str, src: str, in_b: int, out_b: int,
            ours: dict[int, float], ml: float | None = None, torch: float | None = None,
            alloc: bool = False) -> None:
        row = dict(op=op, fmt=fmt, mode=mode, src=src, in_b=in_b, out_b=out_b, ml=ml, torch=torch,
                   alloc=alloc)
        for th, v in ours.items():
            row[f"ours{th}"] = v
            row[f"floor{th}"] = self.floor_cache[(in_b, out_b, th, alloc)]
        old = next((r for r in self.rows if (r["op"], r["fmt"], r["mode"], r["src"]) ==
                    (op, fmt, mode, src)), None)
        if old is not None:  # a repeated run: keep the best of every number
            for key, v in row.items():
                if isinstance(v, float) and (old[key] is None or v > old[key]):
                    old[key] = v
            row = old
        else:
            self.rows.append(row)
        self.print_row(row, sys.stderr)  # progress; the table is printed at the end

    def gbps(self, fn: Callable[[], Any], in_bytes: int) -> float:
        """Single-thread peers (ml_dtypes, numpy, torch with one thread)."""
        return in_bytes / best(fn, self.reps, self.clock1) / 1e9

    # -- the measurements
    def encode_rows(self) -> None:
        for fmt in FORMATS:
            f = pyprecision.format(fmt)
            out = np.empty(self.n, f.storage_dtype)
            ml = self.ml_encode(fmt)
            tor = self.torch_encode(fmt)
            for rounding in ROUNDINGS:
                kw = {"seed": 1} if rounding == "stochastic" else {}
                ours = {th: self.measure(partial(pyprecision.encode, self.x32, fmt,
                                                 rounding=rounding, threads=th, out=out, **kw),
                                         4, f.bits // 8, th) for th in self.threads}
                self.add("encode", fmt, rounding, "f32", 4, f.bits // 8, ours,
                         ml if rounding == "rne" else None, tor if rounding == "rne" else None)
            for rounding in ("rne", "stochastic"):
                kw = {"seed": 1} if rounding == "stochastic" else {}
                ours = {th: self.measure(partial(pyprecision.encode, self.x64, fmt,
                                                 rounding=rounding, threads=th, out=out, **kw),
                                         8, f.bits // 8, th) for th in self.threads}
                self.add("encode", fmt, rounding, "f64", 8, f.bits // 8, ours)
        f = pyprecision.format("bf16")
        ints = (self.x32 * 1000).astype(np.int32)
        out = np.empty(self.n, f.storage_dtype)
        ours = {th: self.measure(partial(pyprecision.encode, ints, "bf16", threads=th, out=out),
                                 4, 2, th) for th in self.threads}
        self.add("encode", "bf16", "rne", "i32", 4, 2, ours)

    def ml_encode(self, fmt: str) -> float | None:
        if fmt not in ML_TYPES:
            return None
        dst = np.empty(self.n, ML_TYPES[fmt])
        return self.gbps(lambda: np.copyto(dst, self.x32, casting="unsafe"), 4 * self.n)

    def torch_encode(self, fmt: str) -> float | None:
        t = self.torch
        if t is None:
            return None
        dt = {"bf16": t.bfloat16, "fp16": t.float16, "fp8e4m3fn": t.float8_e4m3fn,
              "fp8e5": t.float8_e5m2}.get(fmt)
        if dt is None:
            return None
        t.set_num_threads(1)
        src = t.from_numpy(self.x32)
        dst = t.empty(self.n, dtype=dt)
        return self.gbps(lambda: dst.copy_(src), 4 * self.n)

    def decode_rows(self) -> None:
        out = np.empty(self.n, np.float32)
        for fmt in FORMATS:
            f = pyprecision.format(fmt)
            codes = pyprecision.encode(self.x32, fmt)
            nb = f.bits // 8
            ours = {th: self.measure(partial(pyprecision.decode, codes, fmt, threads=th, out=out),
                                     nb, 4, th) for th in self.threads}
            ml = tor = None
            if fmt in ML_TYPES:
                v = codes.view(ML_TYPES[fmt])
                ml = self.gbps(partial(np.copyto, out, v, casting="unsafe"), nb * self.n)
                tor = self.torch_decode(fmt, codes)
            self.add("decode", fmt, "-", fmt, nb, 4, ours, ml, tor)

    def torch_decode(self, fmt: str, codes: np.ndarray) -> float | None:
        t = self.torch
        if t is None:
            return None
        dt = {"bf16": t.bfloat16, "fp16": t.float16, "fp8e4m3fn": t.float8_e4m3fn,
              "fp8e5": t.float8_e5m2}.get(fmt)
        if dt is None:
            return None
        t.set_num_threads(1)
        src = t.from_numpy(codes.view(np.uint8 if codes.itemsize == 1 else np.int16)).view(dt)
        dst = t.empty(self.n, dtype=t.float32)
        return self.gbps(lambda: dst.copy_(src), codes.itemsize * self.n)

    def fresh_output_rows(self) -> None:
        """cast() without out=: the output pages are new on every call, and the floor's too."""
        for fmt in ("bf16", "fp8e4m3fn"):
            f = pyprecision.format(fmt)
            ours = {th: self.measure(partial(pyprecision.cast, self.x32, fmt, threads=th),
                                     4, f.bits // 8, th, alloc=True) for th in self.threads}
            self.add("cast,no out", fmt, "rne", "f32", 4, f.bits // 8, ours, alloc=True)

    # -- output
    HEAD = (f"{'op':<12}{'format':<10}{'round':<11}{'src':<5}" +
            "".join(f"{f'T={t} GB/s':>11}{'/floor':>8}" for t in (1, os.cpu_count() or 1)) +
            f"{'ml_dtypes':>10}{'x ml':>7}{'torch':>7}{'x torch':>8}")

    def print_row(self, r: dict[str, Any], file: Any = sys.stdout) -> None:
        s = f"{r['op']:<12}{r['fmt']:<10}{r['mode']:<11}{r['src']:<5}"
        for th in self.threads:
            r[f"floor{th}"] = self.floor_cache[(r["in_b"], r["out_b"], th, r["alloc"])]  # best so far
            s += f"{r[f'ours{th}']:>11.2f}{r[f'ours{th}'] / r[f'floor{th}']:>8.2f}"
        ml, tor, o1 = r["ml"], r["torch"], r[f"ours{self.threads[0]}"]
        s += f"{ml:>10.2f}{o1 / ml:>7.1f}" if ml else f"{'-':>10}{'-':>7}"
        s += f"{tor:>7.2f}{o1 / tor:>8.2f}" if tor else f"{'-':>7}{'-':>8}"
        print(s, file=file, flush=True)

    def floors(self) -> None:
        print("\nmemory floor (streaming copy, GB/s of input):")
        for (i, o, th, alloc), v in sorted(self.floor_cache.items()):
            fresh = ", fresh output" if alloc else ""
            print(f"  {i} B -> {o} B, {th} thread(s){fresh}: {v:6.2f}")


def targets(b: Bench) -> None:
    """Issues 16's and 28's targets (single thread unless stated), as met / not met: every rounding
    of every format from float32 >= 0.85 of the floor (fp32r included), stochastic rounding >= 0.6,
    float64 sources >= 0.6, int32 sources >= 0.6, every decode >= 0.85, the allocating call >= 0.85
    of the allocating floor, fp8 encode >= 30x ml_dtypes, bf16 >= 1.5x torch copy_, two threads
    >= 1.6x one where the floor itself scales by 1.6 (otherwise the ratio is shown against the
    floor's own)."""
    t1 = b.threads[0]
    lines = []

    def check(what: str, value: float, goal: float) -> None:
        lines.append(f"  [{'met' if value >= goal else 'NOT met'}] {what}: {value:.2f} (goal {goal})")

    for r in b.rows:
        o, fl = r[f"ours{t1}"], r[f"floor{t1}"]
        if r["op"] == "decode":
            check(f"decode {r['fmt']} / floor", o / fl, 0.85)
            continue
        if r["op"] == "cast,no out":
            check(f"cast {r['fmt']} without out= / allocating floor", o / fl, 0.85)
            continue
        if r["op"] != "encode":
            continue
        if r["src"] == "f32" and r["mode"] != "stochastic":
            check(f"{r['mode']} encode {r['fmt']} / floor", o / fl, 0.85)
        if r["src"] == "f32" and r["mode"] == "rne":
            if r["torch"] and r["fmt"] == "bf16":
                check("rne encode bf16 / torch copy_", o / r["torch"], 1.5)
            if r["ml"] and r["fmt"].startswith("fp8"):
                check(f"rne encode {r['fmt']} / ml_dtypes", o / r["ml"], 30.0)
        if r["mode"] == "stochastic" and r["src"] in ("f32", "f64"):
            check(f"stochastic {r['fmt']} {r['src']} / floor", o / fl, 0.6)
        if r["src"] == "f64" and r["mode"] == "rne":
            check(f"f64 rne {r['fmt']} / floor", o / fl, 0.6)
        if r["src"] == "i32":
            check(f"i32 {r['mode']} {r['fmt']} / floor", o / fl, 0.6)
        if len(b.threads) > 1 and r["mode"] == "rne" and r["src"] == "f32":
            t2 = b.threads[1]
            scale = r[f"floor{t2}"] / fl
            ratio = r[f"ours{t2}"] / o
            if scale >= 1.6:
                check(f"encode {r['fmt']} T={t2} / T=1", ratio, 1.6)
            else:
                lines.append(f"  [floor scales {scale:.2f} < 1.6] encode {r['fmt']} T={t2} / T=1: "
                             f"{ratio:.2f}")
    print("\ntargets (issues 16 and 28; single thread unless stated):")
    print("\n".join(lines))


def machine() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((ln.split(":", 1)[1].strip() for ln in lscpu.splitlines()
                      if ln.startswith("Model name")), "?")
    except OSError:
        model = "?"
    return (f"{model}{cpu_family_and_flags()}, {os.cpu_count()} cpus, "
            f"{platform.python_version()}, numpy {np.__version__},"
            f" ml_dtypes {ml_dtypes.__version__}, pyprecision isa={isa_auto()}"
            f" from {Path(pyprecision.__file__).parent}")


#: The CPU flags the kernels (or their candidates) dispatch on.
FLAGS = ("avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512dq",
         "avx512_bf16", "avx512_fp16", "avx512vbmi")


def cpu_family_and_flags() -> str:
    """' (family F model M; flags ...)' from /proc/cpuinfo: the CPU family decides which table of
    bench/README.md a run belongs to."""
    try:
        with open("/proc/cpuinfo") as f:
            info = dict(ln.split(":", 1) for ln in f.read().split("\n\n")[0].splitlines()
                        if ":" in ln)
    except OSError:
        return ""
    info = {k.strip(): v.strip() for k, v in info.items()}
    have = set(info.get("flags", "").split())
    flags = " ".join(fl for fl in FLAGS if fl in have)
    return f" (family {info.get('cpu family', '?')} model {info.get('model', '?')}; {flags})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16 << 20, help="elements (default 16 Mi)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--runs", type=int, default=1,
                    help="repeat the whole measurement and keep the best of every number")
    ap.add_argument("--quick", action="store_true", help="4 Mi elements, 3 repetitions")
    ap.add_argument("--only", choices=["encode", "decode", "fresh"], default=None)
    ap.add_argument("--wall", action="store_true",
                    help="time single-thread rows by wall clock (default: thread CPU time)")
    ap.add_argument("--machine", action="store_true",
                    help="print the machine line (CPU, flags, the ISA and package used) and stop")
    a = ap.parse_args()
    if a.machine:
        print(machine())
        return
    if a.quick:
        a.n, a.reps = 4 << 20, 3
    ncpu = os.cpu_count() or 1
    b = Bench(a.n, a.reps, [1, ncpu] if ncpu > 1 else [1], cpu_clock=not a.wall)
    print(machine())
    print(f"n = {a.n} elements, best of {a.reps} x {a.runs} run(s); single-thread clock: "
          f"{'wall' if a.wall else 'thread CPU time'}; torch: "
          f"{b.torch.__version__ if b.torch else 'not installed'}\n")
    for run in range(a.runs):
        print(f"run {run + 1} of {a.runs}", file=sys.stderr)
        print(Bench.HEAD, file=sys.stderr)
        if a.only in (None, "encode"):
            b.encode_rows()
        if a.only in (None, "decode"):
            b.decode_rows()
        if a.only in (None, "fresh"):
            b.fresh_output_rows()
    print(Bench.HEAD)
    for r in b.rows:
        b.print_row(r)
    b.floors()
    targets(b)


if __name__ == "__main__":
    main()
