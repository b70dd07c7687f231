"""A/B probe: single-thread encode GB/s of input (best of 7 by thread CPU time; 200 below 4 Mi).

    PYTHONPATH=<tree> python bench/probe_encode.py [n]     # one JSON line; alternate the trees

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
for name, x, fmt, isa in (("fp8e4 rne", x32, "fp8e4", "avx2"), ("bf16 rne", x32, "bf16", "avx2"),
                          ("fp16 rne", x32, "fp16", "avx2"), ("fp32r rne", x32, "fp32r", "avx2"),
                          ("fp32r rne portable", x32, "fp32r", "portable"),
                          ("bf16 rne f64", x64, "bf16", "avx2")):
    out = np.empty(n, np.uint8 if fmt.startswith("fp8") else np.uint32 if fmt == "fp32r" else np.uint16)
    best = 1e9
    for _ in range(7 if n >= 1 << 22 else 200):
        t = time.thread_time()
        pp.encode(x, fmt, isa=isa, threads=1, out=out)
        best = min(best, time.thread_time() - t)
    res[name] = x.nbytes / best / 1e9
print(json.dumps(res))
