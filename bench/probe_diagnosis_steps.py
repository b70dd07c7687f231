"""verify's diagnosis on bench_emulate's MiniLM-L6 with its steps timed (decisions P24-P26, V26): one
compile and two runs of ``--auto-cast matmult`` for scale, then the 54 diagnosis flag sets through
one FlagSetRunner (``SHARE=0``: without the value memo). Make the data with
``python bench/bench_diagnosis.py --models minilm --runs 1 --work DIR``.

    python bench/probe_diagnosis_steps.py DIR"""
import os
import sys
import time
from pathlib import Path

import numpy as np
from _steps import N, T, report, wrap  # bench/ is the script's own directory

import pyprecision.emulate.pipeline.many as many
import pyprecision.emulate.pipeline.memo as memo
from pyprecision import hlo, lower
from pyprecision.emulate import FlagSetRunner, compile_hlo, run_compiled
from pyprecision.frontend import parse_flags
from pyprecision.verify.hlo_check import diagnosis_flag_sets

wrap(many, "run_pipeline", "passes")
wrap(many, "_ir_key", "digest")
wrap(lower, "lower", "lower")
wrap(many.ir, "clone_module", "clone")
wrap(many, "run_compiled", "run_compiled (inner)")
wrap(memo.ValueMemo, "run", "memo.run (total)")
wrap(memo.ValueMemo, "signatures", "memo.signatures")
work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/bemu")
text = (work / "minilm.hlo.txt").read_text()
data = np.load(work / "minilm.npz")
args = [data[f"a{i}"] for i in range(len(data.files))]
cfg = parse_flags(["--auto-cast", "matmult"])
t = time.perf_counter()
c = compile_hlo(hlo.parse(text), cfg)
tc = time.perf_counter() - t
runs = []
for _ in range(2):
    t = time.perf_counter()
    run_compiled(c, args)
    runs.append(time.perf_counter() - t)
print(f"one: compile {tc:.2f} s, run {runs[0]:.2f} / {runs[1]:.2f} s, load {os.getloadavg()[0]:.2f}")
T.clear()
N.clear()
configs = [c for _, c in diagnosis_flag_sets(cfg)]
t = time.perf_counter()
share = os.environ.get("SHARE", "1") == "1"
res = FlagSetRunner(hlo.parse(text), args, share_values=share).run(configs)
print(f"diagnosis {time.perf_counter() - t:.1f} s, {res.emulations} emulations, "
      f"load {os.getloadavg()[0]:.2f}")
report()
