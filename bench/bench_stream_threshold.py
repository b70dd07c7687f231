"""Where streaming (non-temporal) stores start to pay: one-thread GB/s of input for calls of
4-64 MiB (input + output bytes, the unit of the threshold), streaming forced vs never, in the same
run, alternating. Best of N by thread CPU time, back to back on the same arrays.

    python bench/bench_stream_threshold.py [--reps 9] [--sizes 4 8 16 32 64]

A benchmark, never a test. docs/decisions/speed.md S16 reads its output."""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from pyprecision._core import lib

import pyprecision as pp

CASES = (("f32->bf16 rne", np.float32, "bf16", 2), ("f32->fp8e4m3fn rne", np.float32, "fp8e4m3fn", 1),
         ("f32->fp32r rne", np.float32, "fp32r", 4), ("f64->bf16 rne", np.float64, "bf16", 2),
         ("f32->bf16 stochastic", np.float32, "bf16", 2), ("decode bf16", None, "bf16", 2),
         ("decode fp8e4m3fn", None, "fp8e4m3fn", 1), ("decode fp16", None, "fp16", 2),
         ("decode fp32r", None, "fp32r", 4))
OUT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def cpu() -> str:
    """The CPU model line of /proc/cpuinfo (or platform's)."""
    try:
        with open("/proc/cpuinfo") as f:
            info = dict(line.split(":", 1) for line in f if ":" in line)
        fam = {k.strip(): v.strip() for k, v in info.items()}
        return f"{fam.get('model name')} (family {fam.get('cpu family')} model {fam.get('model')})"
    except OSError:
        return platform.processor()


def main() -> None:
    """Print one table: size, case, GB/s not streaming, streaming, ratio."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--sizes", type=int, nargs="*", default=[4, 8, 16, 32, 64])
    ap.add_argument("--only", nargs="*", default=None, help="case names containing one of these")
    a = ap.parse_args()
    print(f"{cpu()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}, isa={pp.kernel.isa_auto()}, {os.path.dirname(pp.__file__)}")
    print(f"{'MiB':>4} {'case':<22} {'cached GB/s':>11} {'stream GB/s':>11} {'stream/cached':>13}")
    rng = np.random.default_rng(0)
    for mib in a.sizes:
        for name, src_t, fmt, ob in CASES:
            if a.only and not any(o in name for o in a.only):
                continue
            if src_t is None:  # decode: codes in, float32 out
                n = (mib << 20) // (ob + 4)
                x = rng.integers(0, 1 << (8 * ob), n).astype(OUT[ob])
                out = np.empty(n, np.float32)

                def run(x=x, out=out, fmt=fmt) -> None:
                    pp.decode(x, fmt, threads=1, out=out)
            else:
                n = (mib << 20) // (np.dtype(src_t).itemsize + ob)
                x = (rng.standard_normal(n) * 4).astype(src_t)
                out = np.empty(n, OUT[ob])
                kw = {"seed": 1, "rounding": "stochastic"} if "stochastic" in name else {}

                def run(x=x, out=out, fmt=fmt, kw=kw) -> None:
                    pp.encode(x, fmt, threads=1, out=out, **kw)
            best = {0: 1e9, 1: 1e9}
            for _ in range(a.reps):
                for force in (0, 1):
                    prev = lib.pp_set_stream_threshold(0 if force else 1 << 62)
                    try:
                        run()
                        t = time.thread_time()
                        run()
                        best[force] = min(best[force], time.thread_time() - t)
                    finally:
                        lib.pp_set_stream_threshold(prev)
            g0, g1 = x.nbytes / best[0] / 1e9, x.nbytes / best[1] / 1e9
            print(f"{mib:>4} {name:<22} {g0:>11.2f} {g1:>11.2f} {g1 / g0:>13.2f}", flush=True)


if __name__ == "__main__":
    main()
