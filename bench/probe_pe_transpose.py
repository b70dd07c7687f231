"""EM-24's A/B: the IR evaluator's PE transposes with and without the skipped rounding, alternated
in one process on bench_emulate's MiniLM-L6 (``NUMERICS.pe_transpose`` switched), medians of five;
the milliseconds per run of the matmuls not batched (the transposes, mostly) and the run's
seconds, the outputs asserted equal. Make the data with ``python bench/bench_diagnosis.py
--models minilm --runs 1 --work DIR``.

    PYPRECISION_THREADS=1 python bench/probe_pe_transpose.py DIR --auto-cast all --auto-cast-type bf16"""
import sys
import time
from collections import defaultdict

import numpy as np

from pyprecision import hlo, ir
from pyprecision.emulate import compile_hlo, run_compiled
from pyprecision.emulate.ir import eval as ir_eval
from pyprecision.emulate.ir import ops
from pyprecision.frontend import parse_flags

with open(f"{sys.argv[1]}/minilm.hlo.txt") as f:
    text = f.read()
d = np.load(f"{sys.argv[1]}/minilm.npz")
args = [d[f"a{i}"] for i in range(len(d.files))]
c = compile_hlo(hlo.parse(text), parse_flags(sys.argv[2:]))
acc = [0.0]
orig = ir.TensorContractOp.evaluate


def timed(self, *a, **k):
    t = time.perf_counter()
    r = orig(self, *a, **k)
    acc[0] += time.perf_counter() - t
    return r


ir.TensorContractOp.evaluate = timed
unary, runs, outs = defaultdict(list), defaultdict(list), {}
run_compiled(c, args)
for _ in range(5):
    for k, route in (("old", lambda *a: None), ("new", ops.pe_transpose)):
        ir_eval.NUMERICS.pe_transpose = route
        acc[0] = 0
        t = time.perf_counter()
        outs[k] = run_compiled(c, args)
        runs[k].append(time.perf_counter() - t)
        unary[k].append(acc[0])
for a, b in zip(outs["old"], outs["new"], strict=True):
    assert np.array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))
print(sys.argv[2:], "unbatched matmuls ms",
      {k: round(1e3 * float(np.median(v)), 1) for k, v in unary.items()},
      "run s", {k: round(float(np.median(v)), 3) for k, v in runs.items()})
