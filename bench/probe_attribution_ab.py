"""Attribution of an older ``pyprecision/tune/attribution.py`` against the current one, in one
process on bench_tune.py's MiniLM-L6 data (decisions TU12, TU13): seconds and peak RSS of each run,
and whether the rows agree.

    git show <rev>:pyprecision/tune/attribution.py > /tmp/old_attr.py
    python bench/probe_attribution_ab.py /tmp/htune_m6 /tmp/old_attr.py old new new old
"""
import gc
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

from pyprecision import hlo
from pyprecision.tune import attribution as new
from pyprecision.tune import search


def hwm() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1e6
    return float("nan")


d, old_file, order = sys.argv[1], sys.argv[2], sys.argv[3:] or ["old", "new"]
spec = importlib.util.spec_from_file_location("old_attribution", old_file)
old = importlib.util.module_from_spec(spec)
sys.modules["old_attribution"] = old  # dataclasses look their module up
spec.loader.exec_module(old)
m = hlo.parse(Path(d, "minilm6_l6.hlo.txt").read_text())
z = np.load(f"{d}/minilm6_l6.npz")
args = [z[f"in{i}"] for i in range(len(z.files))]
res = search.tune(m, args, 1e-2, attribution=0)
b, r = res.baseline.compiled, res.recommended.compiled
rows = {}
for name in order:
    mod = old if name == "old" else new
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM
    t = time.perf_counter()
    rows[name] = mod.attribute(b, r, args, 5)
    print(f"{name} {time.perf_counter() - t:.2f} s, peak RSS {hwm():.2f} GB, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
if "old" in rows and "new" in rows:
    print("same rows:", [(x.path, x.opcode) for x in rows["old"]] == [(x.path, x.opcode) for x in rows["new"]])
    for a, c in zip(rows["old"], rows["new"]):
        print(f"  {a.path}: error {a.error!r} / {c.error!r}, added {a.added!r} / {c.added!r}")
