"""verify's diagnosis against one emulation, on a real model of tests/data (issue 27's target:
diagnosis over all flag sets <= 5x one emulation).

For each model: one emulation (compile_hlo + run_compiled under --auto-cast matmult); the shared
diagnosis (emulate.FlagSetRunner over every set of verify.hlo_check.diagnosis_flag_sets: one parse,
HLO passes and binding once, identical programs emulated once); and the unshared way (each set
compiled from text and emulated on its own, as verify did before). Best of ``--runs`` wall-clock
timings, with the load average beside every figure.

    python bench/bench_diagnosis.py                       # encoder_block, scan_rnn
    python bench/bench_diagnosis.py --models encoder_block --runs 3 --unshared
    python bench/bench_diagnosis.py --models minilm --runs 1 --work /tmp/bemu   # issue 27's model

``minilm`` is bench_emulate.py's MiniLM-L6 (batch 8, sequence 128): its HLO and inputs are read
from ``--work`` (made there by bench_emulate.py's preparation, which needs jax, when missing).
``PYPRECISION_THREADS`` sets the threads, as everywhere.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from pyprecision import hlo
from pyprecision.emulate import FlagSetRunner, bind_arguments, compile_hlo, run_compiled
from pyprecision.frontend import parse_flags
from pyprecision.verify.hlo_check import diagnosis_flag_sets

MODELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "models" / "jax-0.10.2"


def _best(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _load(name: str, work: Path | None) -> tuple[str, dict[str, np.ndarray] | list[np.ndarray]]:
    if name != "minilm":
        with np.load(MODELS / f"{name}.npz") as z:
            return (MODELS / f"{name}.hlo.txt").read_text(), dict(z)
    import bench_emulate  # bench/ is on sys.path when this script runs

    work = work or Path("/tmp/bemu")
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "minilm.hlo.txt").exists():
        bench_emulate._prepare("minilm", work)
    with np.load(work / "minilm.npz") as z:
        return (work / "minilm.hlo.txt").read_text(), [z[f"a{i}"] for i in range(len(z.files))]


def bench(name: str, runs: int, unshared: bool, work: Path | None = None) -> None:
    """Print one model's row."""
    text, ins = _load(name, work)
    configs = [c for _, c in diagnosis_flag_sets(parse_flags(["--auto-cast", "matmult"]))]

    def one() -> None:
        m = hlo.parse(text)
        compiled = compile_hlo(m, parse_flags(["--auto-cast", "matmult"]))
        run_compiled(compiled, bind_arguments(compiled.hlo_module, ins, widen=True).args)

    stats = {}

    def shared() -> None:
        runner = FlagSetRunner(hlo.parse(text), ins, share_values=False)  # as verify (V27)
        res = runner.run(configs)
        stats["emulations"] = res.emulations

    def each() -> None:
        for c in configs:
            m = hlo.parse(text)
            compiled = compile_hlo(m, c)
            run_compiled(compiled, bind_arguments(compiled.hlo_module, ins, widen=True).args)

    t1 = _best(one, runs)
    load1 = os.getloadavg()[0]
    ts = _best(shared, runs)
    load2 = os.getloadavg()[0]
    row = (f"{name}: one emulation {t1:.3f} s (load {load1:.2f}); diagnosis of {len(configs)} sets "
           f"{ts:.2f} s = {ts / t1:.1f}x one, {stats['emulations']} emulations (load {load2:.2f})")
    if unshared:
        tu = _best(each, 1)
        row += f"; unshared {tu:.2f} s = {tu / t1:.1f}x (load {os.getloadavg()[0]:.2f})"
    print(row, flush=True)


def main() -> None:
    """Run the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["encoder_block", "scan_rnn"])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--unshared", action="store_true", help="also time the unshared way (slow)")
    p.add_argument("--work", type=Path, default=None,
                   help="minilm: where bench_emulate.py's HLO and inputs are (default /tmp/bemu)")
    args = p.parse_args()
    for name in args.models:
        bench(name, args.runs, args.unshared, args.work)


if __name__ == "__main__":
    main()
