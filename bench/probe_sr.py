"""A/B probe for stochastic rounding: single-thread encode GB/s of input, best of N by thread CPU
time, every format from float32 (and float64), words generated from a seed and given.

    PYTHONPATH=<tree> python bench/probe_sr.py [n] [isa]   # one JSON line; alternate the trees

Encodes back to back (no floor in between). n defaults to 16 Mi elements; 65536 is in cache."""
import json
import sys
import time

import numpy as np

import pyprecision as pp

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16 << 20
isa = sys.argv[2] if len(sys.argv) > 2 else "avx2"
reps = 7 if n >= 1 << 22 else 300
rng = np.random.default_rng(1)
x32 = (rng.standard_normal(n) * 4).astype(np.float32)
x64 = x32.astype(np.float64)
words = pp.kernel.random_words(7, n)
OUT = {"bf16": np.uint16, "fp16": np.uint16, "fp32r": np.uint32}
res = {}
for fmt in ("bf16", "fp16", "fp32r", "fp8e4", "fp8e4m3fn", "fp8e5"):
    out = np.empty(n, OUT.get(fmt, np.uint8))
    for name, x, kw in ((fmt, x32, {"seed": 7}), (fmt + " bits", x32, {"random_bits": words}),
                        (fmt + " f64", x64, {"seed": 7})):
        best = 1e9
        for _ in range(reps):
            t = time.thread_time()
            pp.encode(x, fmt, rounding="stochastic", isa=isa, threads=1, out=out, **kw)
            best = min(best, time.thread_time() - t)
        res[name] = round(x.nbytes / best / 1e9, 2)
print(json.dumps(res))
