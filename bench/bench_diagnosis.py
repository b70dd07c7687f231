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
    python bench/bench_diagnosis.py --models minilm --runs 1 --work /tmp/bemu --floor

``--floor`` also measures what no schedule of the diagnosis can beat on this machine (decision
V32): every set's program made at one thread (the diagnosis' compiles, timed together), then
each distinct program emulated alone at one thread; programs grouped by their outputs' bytes.
C cores sharing that work take at least its sum over C. Printed as multiples of one emulation:
the compiles and every emulation; every emulation alone; and the cheapest program of each
result group alone, which only an oracle that knew which programs agree could reach (none can:
V32).

``minilm`` is bench_emulate.py's MiniLM-L6 (batch 8, sequence 128): its HLO and inputs are read
from ``--work`` (made there by bench_emulate.py's preparation, which needs jax, when missing).
``PYPRECISION_THREADS`` sets the threads, as everywhere.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from pyprecision import hlo
from pyprecision.emulate import FlagSetRunner, bind_arguments, compile_hlo, run_compiled
from pyprecision.frontend import parse_flags
from pyprecision.kernel import default_threads, thread_limit
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


def floor(text: str, ins: Any, configs: list[Any], t1: float) -> str:
    """The ``--floor`` rows: every config's program made at one thread (timed: the compiles the
    diagnosis runs), then each distinct program emulated alone at one thread, the programs
    grouped by output bytes; the sums over the cores in force as multiples of ``t1`` (decision
    V32)."""
    runner = FlagSetRunner(hlo.parse(text), ins, share_values=False)
    progs: dict[bytes, Any] = {}
    times: dict[bytes, float] = {}
    groups: dict[bytes, list[bytes]] = {}
    with thread_limit(1):
        t = time.perf_counter()
        for c in configs:
            try:
                prog = runner.program(c)
            except Exception:  # noqa: BLE001 - a set that does not compile is not emulated either
                continue
            progs.setdefault(prog.digest, c)
        compiles = time.perf_counter() - t
        for digest, c in progs.items():
            compiled = runner.compile(c)
            t = time.perf_counter()
            outs = run_compiled(compiled, runner.bound.args)
            times[digest] = time.perf_counter() - t
            key = b"".join(np.ascontiguousarray(o).tobytes() for o in outs)
            groups.setdefault(key, []).append(digest)
    cores = default_threads()
    every = sum(times.values())
    oracle = sum(min(times[d] for d in g) for g in groups.values())

    def x(s: float) -> str:
        return f"{s / cores:.2f} s = {s / cores / t1:.1f}x one"

    return (f"  floor, one thread each: {len(progs)} distinct programs, {len(groups)} distinct "
            f"results; their compiles {compiles:.2f} s ({runner.lowered} lowerings); emulations "
            f"{min(times.values()):.2f}-{max(times.values()):.2f} s, sum {every:.2f} s, the "
            f"cheapest of each result {oracle:.2f} s (load {os.getloadavg()[0]:.2f})\n"
            f"  over {cores} cores: compiles and every emulation {x(compiles + every)}; every "
            f"emulation alone {x(every)}; one emulation per result alone {x(oracle)}")


def bench(name: str, runs: int, unshared: bool, work: Path | None = None,
          with_floor: bool = False) -> None:
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
    if with_floor:
        print(floor(text, ins, configs, t1), flush=True)


def main() -> None:
    """Run the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["encoder_block", "scan_rnn"])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--unshared", action="store_true", help="also time the unshared way (slow)")
    p.add_argument("--floor", action="store_true",
                   help="also measure the floor no schedule can beat (decision V32; slow)")
    p.add_argument("--work", type=Path, default=None,
                   help="minilm: where bench_emulate.py's HLO and inputs are (default /tmp/bemu)")
    args = p.parse_args()
    for name in args.models:
        bench(name, args.runs, args.unshared, args.work, args.floor)


if __name__ == "__main__":
    main()
