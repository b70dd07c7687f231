"""The 92 flag sets of tune's space on MiniLM-L6 compiled in one runner (decision P30), with the
cyclic collector as is (`none`) or frozen after each program (`freeze`, `c0freeze`, `c1freeze`):
seconds, the collector's seconds, RSS. `python bench/probe_gc_freeze.py none` (data: bench_tune.py)."""
import gc, sys, time, os
from pathlib import Path
import numpy as np
from pyprecision import hlo
from pyprecision.emulate import FlagSetRunner
from pyprecision.tune import search
def st(k):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(k): return int(line.split()[1]) / 1e6
mode = sys.argv[1]
d="/tmp/htune_m6"
m = hlo.parse(Path(d, "minilm6_l6.hlo.txt").read_text())
z = np.load(f"{d}/minilm6_l6.npz")
args = [z[f"in{i}"] for i in range(len(z.files))]
runner = FlagSetRunner(m, args, "gen2", share_values=False)
sets, _ = search._space(runner)
T=[0.0]; s=[0.0]
def cb(phase, info):
    if phase == "start": s[0]=time.perf_counter()
    else: T[0]+=time.perf_counter()-s[0]
gc.callbacks.append(cb)
t=time.perf_counter()
for fs in sets:
    runner.program(fs.config)
    if mode == "freeze": gc.freeze()
    elif mode == "c0freeze": gc.collect(0); gc.freeze()
    elif mode == "c1freeze": gc.collect(1); gc.freeze()
el=time.perf_counter()-t
print(mode, f"{el:.1f} s collector {T[0]:.2f} s RSS {st('VmRSS'):.2f} GB frozen {gc.get_freeze_count()} load {os.getloadavg()[0]:.2f}")
gc.unfreeze(); t=time.perf_counter(); n=gc.collect(); print(f"  after unfreeze: collect {time.perf_counter()-t:.2f} s freed {n}, RSS {st('VmRSS'):.2f}")
