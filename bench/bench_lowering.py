"""Benchmark of issue 11's pipeline on BERT-base-sized modules: HLO parse, HLO passes + lowering +
precision passes (``compile_hlo``), and the loop-IR emulation (``run_compiled``) on random inputs.

    python3 bench/bench_lowering.py                      # bert_base, bert_base_per_head; matmult
    python3 bench/bench_lowering.py --modes none matmult all --skip-run

The modules are tests/data/models/jax-0.10.2/bert_base*.hlo.txt (12 layers, hidden 768, 12 heads,
seq 128, batch 1; written by JAX). The per-instruction columns show whether the work is linear in
the module size (bert_base_per_head is the same model with attention head by head: 3x the HLO).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

from pyprecision import emulate, frontend, hlo

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "models" / "jax-0.10.2"


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo), else the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(name: str, mode: str, skip_run: bool) -> None:
    """Time one module under one mode and print a row."""
    text = (DATA / f"{name}.hlo.txt").read_text()
    t0 = time.perf_counter()
    module = hlo.parse(text, name)
    t1 = time.perf_counter()
    compiled = emulate.compile_hlo(module, frontend.parse_flags(["--fp32-cast", mode]))
    t2 = time.perf_counter()
    n_hlo = sum(1 for _ in module.all_instructions())
    n_ir = sum(1 for _ in compiled.lowered.function.instructions())
    run_s = float("nan")
    if not skip_run:
        rng = np.random.default_rng(0)
        params = sorted(module.entry.parameters, key=lambda p: p.parameter_number or 0)
        args = [(rng.standard_normal(tuple(p.shape.dimensions)) * 0.05).astype(np.float32)
                for p in params]  # fmt: skip
        t3 = time.perf_counter()
        emulate.run_compiled(compiled, args)
        run_s = time.perf_counter() - t3
    print(f"{name:20s} {mode:8s} {n_hlo:6d} {n_ir:6d} {t1 - t0:7.2f} {t2 - t1:8.2f} "
          f"{(t2 - t1) / n_hlo * 1e3:9.3f} {run_s:7.2f}")  # fmt: skip
    sys.stdout.flush()


def main() -> None:
    """Parse the options, print the CPU and one row per module and mode."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["bert_base", "bert_base_per_head"])
    ap.add_argument("--modes", nargs="+", default=["matmult"])
    ap.add_argument("--skip-run", action="store_true", help="time parse and compile only")
    args = ap.parse_args()
    print(f"CPU: {cpu_model()}")
    print(f"{'module':20s} {'mode':8s} {'HLO':>6s} {'IR':>6s} {'parse':>7s} {'compile':>8s} "
          f"{'ms/HLO op':>9s} {'run s':>7s}")  # fmt: skip
    for name in args.models:
        for mode in args.modes:
            run(name, mode, args.skip_run)


if __name__ == "__main__":
    main()
