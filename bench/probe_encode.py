"""A/B probe: single-thread encode GB/s of input (best of 7 by thread CPU time; 200 below 4 Mi).

    PYTHONPATH=<tree> python bench/probe_encode.py [n] [isa]   # one JSON line; alternate the trees

Encodes back to back (no floor in between, unlike compare.py), so the prefetchers' streams
survive from one call to the next. n defaults to 16 Mi float32 elements."""
import json
import sys
import time

import numpy as np

import pyprecision as pp

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16 << 20
rng = np.random.default_rng(1)
x32 = (rng.standard_normal(n) * 4).astype(np.float32)
x64 = x32.astype(np.float64)
res = {}
isa = sys.argv[2] if len(sys.argv) > 2 else "avx2"
CASES = (("fp8e4 rne", x32, "fp8e4", "rne"), ("bf16 rne", x32, "bf16", "rne"),
         ("bf16 rtz", x32, "bf16", "rtz"), ("fp16 rne", x32, "fp16", "rne"),
         ("fp16 rtz", x32, "fp16", "rtz"), ("fp16 rna", x32, "fp16", "rna"), ("fp32r rne", x32, "fp32r", "rne"),
         ("bf16 rne f64", x64, "bf16", "rne"), ("fp16 rne f64", x64, "fp16", "rne"),
         ("fp32r rne f64", x64, "fp32r", "rne"), ("fp8e4 rne f64", x64, "fp8e4", "rne"))
for name, x, fmt, rounding in CASES:
    out = np.empty(n, np.uint8 if fmt.startswith("fp8") else np.uint32 if fmt == "fp32r" else np.uint16)
    best = 1e9
    for _ in range(7 if n >= 1 << 22 else 200):
        t = time.thread_time()
        pp.encode(x, fmt, rounding=rounding, isa=isa, threads=1, out=out)
        best = min(best, time.thread_time() - t)
    res[name] = round(x.nbytes / best / 1e9, 2)
print(json.dumps(res))
