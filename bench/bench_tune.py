"""``pyprecision tune`` on a MiniLM-L2-shaped encoder (batch 2, sequence 16; bench/gen_minilm.py), each
run a whole process: the best wall and the best user+system CPU time of ``--repeat`` runs, the
machine's load average beside them, and one ``--auto-cast none`` emulation for scale.

    python bench/bench_tune.py --data /tmp/minilm --repeat 3
"""
from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="/tmp/minilm")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", default="1e-2")
    a = ap.parse_args()
    d = Path(a.data)
    if not (d / "minilm_l2.hlo.txt").is_file():
        subprocess.run([sys.executable, str(ROOT / "bench" / "gen_minilm.py"), "--out", str(d)],
                       check=True)
    model, npz = str(d / "minilm_l2.hlo.txt"), str(d / "minilm_l2.npz")
    tune = [sys.executable, "-m", "pyprecision.tools.cli", "tune", model, "--inputs", npz,
            "--budget", a.budget]
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
          f"none emulation in its own process: wall {min(base_w):.1f} s, cpu {min(base_c):.1f} s")


if __name__ == "__main__":
    main()
