"""``pyprecision tune`` on a MiniLM-L2-shaped encoder (batch 2, sequence 16; bench/gen_minilm.py), or
with ``--model minilm6`` on bench/bench_emulate.py's MiniLM-L6 encoder (batch 8, sequence 128;
``--layers`` fewer than 6 to cut it short), each run a whole process: the best wall and the best
user+system CPU time of ``--repeat`` runs, the machine's load average beside them, and one
``--auto-cast none`` emulation (a whole process too: import, reading the inputs, compiling and
emulating) for scale, with their ratio.

    python bench/bench_tune.py --data /tmp/minilm --repeat 3
    python bench/bench_tune.py --model minilm6 --data /tmp/minilm6 --repeat 1
    python bench/bench_tune.py --model minilm6 --data /tmp/minilm6 --repeat 1 --exhaustive
    python bench/bench_tune.py --model minilm6 --data /tmp/minilm6 --repeat 3 --in-process

A whole process carries fixed costs that are the same for both commands (the interpreter, the
imports, reading the HLO text and the inputs: about 0.55 s here, and 0.5 s more with ml_dtypes
0.7.0, whose import registers its ufunc loops slowly), so the process ratio is smaller than the
ratio of the work. ``--in-process`` also times both in one process after those costs: the
``--auto-cast none`` emulation (``run_hlo``: HLO passes, lowering, passes, run) and ``tune``
(``pyprecision.tune.tune`` with its default attribution), alternated, each on a freshly read module.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(argv: list[str]) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    c0, t0 = _cpu(), time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, _cpu() - c0


def _minilm6(d: Path, layers: int) -> tuple[str, str]:
    """bench_emulate.py's MiniLM-L6 (batch 8, sequence 128) with ``layers`` layers: its HLO text
    and its arguments as ``in<i>`` (written once into ``d``; needs JAX)."""
    name = f"minilm6_l{layers}"
    model, npz = d / f"{name}.hlo.txt", d / f"{name}.npz"
    if not model.is_file():
        import jax
        import numpy as np

        sys.path.insert(0, str(ROOT / "bench"))
        import bench_emulate

        shape = bench_emulate.SHAPES["minilm"]
        bench_emulate.SHAPES["minilm"] = (layers, *shape[1:])
        f, args = bench_emulate._model("minilm")
        d.mkdir(parents=True, exist_ok=True)
        np.savez(npz, **{f"in{i}": x for i, x in enumerate(args)})
        model.write_text(jax.jit(f).lower(*args).as_text(dialect="hlo"))
    return str(model), str(npz)


_IN_PROCESS = """
import json, os, sys, time
from pyprecision import emulate
from pyprecision.frontend import parse_flags
from pyprecision.tools.tune_cmd import bind_inputs, read_module
from pyprecision.tune import tune
model, npz, budget, repeat = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
for _ in range(repeat):
    m = read_module(model)
    t = time.perf_counter()
    emulate.run_hlo(m, bind_inputs(m, npz), parse_flags([]))
    one = time.perf_counter() - t
    m = read_module(model)
    args = bind_inputs(m, npz)
    t = time.perf_counter()
    tune(m, args, budget)
    print(json.dumps([one, time.perf_counter() - t, os.getloadavg()[0]]), flush=True)
"""


def _in_process(model: str, npz: str, budget: str, repeat: int) -> None:
    """``tune`` and one emulation timed in one process, after its imports (see the docstring)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _IN_PROCESS, model, npz, budget, str(repeat)],
                         check=True, env=env, capture_output=True, text=True).stdout  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("[")]
    for one, whole, load in rows:
        print(f"in one process: tune {whole:.2f} s | one emulation {one:.2f} s | "
              f"{whole / one:.1f}x | load {load:.2f}")
    print(f"in one process, best of {len(rows)}: tune {min(r[1] for r in rows):.2f} s, one emulation "
          f"{min(r[0] for r in rows):.2f} s: {min(r[1] for r in rows) / min(r[0] for r in rows):.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="/tmp/minilm")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", default="1e-2")
    ap.add_argument("--model", choices=("minilm2", "minilm6"), default="minilm2")
    ap.add_argument("--layers", type=int, default=6, help="minilm6 only: the encoder's layers")
    ap.add_argument("--exhaustive", action="store_true",
                    help="tune --exhaustive: emulate every program (the search before TU8)")
    ap.add_argument("--in-process", action="store_true",
                    help="also time tune and one emulation in one process, after its imports")
    a = ap.parse_args()
    d = Path(a.data)
    if a.model == "minilm2":
        if not (d / "minilm_l2.hlo.txt").is_file():
            subprocess.run([sys.executable, str(ROOT / "bench" / "gen_minilm.py"), "--out", str(d)],
                           check=True)
        model, npz = str(d / "minilm_l2.hlo.txt"), str(d / "minilm_l2.npz")
    else:
        model, npz = _minilm6(d, a.layers)
    tune = [sys.executable, "-m", "pyprecision.tools.cli", "tune", model, "--inputs", npz,
            "--budget", a.budget, *(["--exhaustive"] if a.exhaustive else [])]
    once = [sys.executable, "-c", "import sys; from pyprecision.tools.cli import main; "
            "from pyprecision.tools.tune_cmd import read_module, bind_inputs; "
            "from pyprecision import emulate; from pyprecision.frontend import parse_flags; "
            f"m = read_module({model!r}); "
            f"emulate.run_hlo(m, bind_inputs(m, {npz!r}), parse_flags([]))"]
    walls, cpus, base_w, base_c = [], [], [], []
    for _ in range(a.repeat):
        w, c = _run(once)
        base_w.append(w)
        base_c.append(c)
        w, c = _run(tune)
        walls.append(w)
        cpus.append(c)
        print(f"tune wall {w:.1f} s cpu {c:.1f} s | one emulation (process) wall {base_w[-1]:.1f} s "
              f"cpu {base_c[-1]:.1f} s | load {Path('/proc/loadavg').read_text().split()[:3]}")
    print(f"best of {a.repeat}: tune wall {min(walls):.1f} s, cpu {min(cpus):.1f} s; one --auto-cast "
          f"none emulation in its own process: wall {min(base_w):.1f} s, cpu {min(base_c):.1f} s; "
          f"tune / one emulation: {min(cpus) / min(base_c):.1f}x cpu, "
          f"{min(walls) / min(base_w):.1f}x wall")
    if a.in_process:
        _in_process(model, npz, a.budget, a.repeat)


if __name__ == "__main__":
    main()
