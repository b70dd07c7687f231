"""Where `tune` spends its time and memory on bench_tune.py's MiniLM-L6 data (one process, the steps
wrapped with timers; decisions TU9, P26). Make the data first with
``python bench/bench_tune.py --model minilm6 --data DIR --repeat 1``.

    python bench/probe_tune_steps.py DIR [tune|compile|compile-frozen|attribution|claims]

``tune``: the whole search with attribution, each step's seconds and calls; ``compile``: the flag
sets of tune's space (80 on MiniLM-L6 since P32) compiled (no emulation; ``compile-frozen``:
inside ``runner.searching()`` as tune does, each program frozen out of the collector's walks,
P30), the cyclic collector's and the digests' seconds, the RSS; ``claims``: the programs step's
seconds and where its two processes met (TU18); ``attribution``: the search without
attribution, then the attribution alone, its peak RSS (VmHWM reset in between) and seconds."""
import gc
import os
import sys
import time
from pathlib import Path

import numpy as np
from _steps import T, report, wrap  # bench/ is the script's own directory

import pyprecision.emulate.pipeline.many as many
from pyprecision import hlo, lower
from pyprecision.emulate import FlagSetRunner
from pyprecision.tune import attribution, search


def status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1e6  # GB
    return float("nan")


d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/htune_m6"
what = sys.argv[2] if len(sys.argv) > 2 else "tune"
m = hlo.parse(Path(d, "minilm6_l6.hlo.txt").read_text())
z = np.load(f"{d}/minilm6_l6.npz")
args = [z[f"in{i}"] for i in range(len(z.files))]
if what == "claims":  # the programs step: where the two processes met (TU18) and its seconds
    take, t0 = search._Claims.take, [0.0]

    def noted(self, k, who):
        got = take(self, k, who)
        if not got:
            side = "parent" if who == search._Claims.PARENT else "child"
            print(f"  the {side} met the other at unit {k} at {time.perf_counter() - t0[0]:.2f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
        return got

    init = search._Programs.__init__

    def timed(self, *a, **k):
        t0[0] = time.perf_counter()
        init(self, *a, **k)
        print(f"programs step {time.perf_counter() - t0[0]:.2f} s, load {os.getloadavg()[0]:.2f}",
              file=sys.stderr)  # fmt: skip

    search._Claims.take, search._Programs.__init__ = noted, timed
    search.tune(m, args, 1e-2, attribution=0)
elif what == "tune":
    wrap(many, "run_pipeline", "passes")
    wrap(many, "_ir_key", "digest")
    wrap(lower, "lower", "lower")
    wrap(many.ir, "clone_module", "clone")
    wrap(many, "run_compiled", "emulations")
    wrap(many.FlagSetRunner, "program", "runner.program (total)")
    wrap(search, "estimate_cost", "cost")
    wrap(search, "attribute", "attribution")
    t = time.perf_counter()
    search.tune(m, args, 1e-2)
    print(f"tune {time.perf_counter() - t:.1f} s, peak RSS {status('VmHWM'):.2f} GB, "
          f"load {os.getloadavg()[0]:.2f}")
    report()
elif what in ("compile", "compile-frozen"):
    start = [0.0]

    def cb(phase, info):
        if phase == "start":
            start[0] = time.perf_counter()
        else:
            T[info["generation"]] += time.perf_counter() - start[0]

    runner = FlagSetRunner(m, args, "gen2", share_values=False)
    sets, _ = search._space(runner)
    wrap(many, "_ir_key", "digest")
    gc.callbacks.append(cb)
    t = time.perf_counter()
    if what == "compile-frozen":  # as tune compiles: each program frozen out of the walks (P30)
        with runner.searching():
            digests = {runner.program(fs.config).digest for fs in sets}
            frozen = gc.get_freeze_count()
    else:
        digests = {runner.program(fs.config).digest for fs in sets}
        frozen = 0
    print(f"{what}: {len(sets)} sets in {time.perf_counter() - t:.1f} s, {len(digests)} programs, "
          f"{runner.derived} derived; collector {sum(v for k, v in T.items() if k != 'digest'):.1f} s, "
          f"digests {T['digest']:.1f} s; RSS {status('VmRSS'):.2f} GB; {frozen} frozen; "
          f"load {os.getloadavg()[0]:.2f}")
else:
    res = search.tune(m, args, 1e-2, attribution=0)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM
    t = time.perf_counter()
    rows = attribution.attribute(res.baseline.compiled, res.recommended.compiled, args, 5)
    print(f"attribution {time.perf_counter() - t:.1f} s, peak RSS {status('VmHWM'):.2f} GB "
          f"(RSS before {status('VmRSS'):.2f} GB), load {os.getloadavg()[0]:.2f}")
    for r in rows:
        print(" ", r)
