#!/usr/bin/env python3
"""Time the full pass pipeline on generated programs of 1e3, 1e4 and 1e5 instructions.

Prints seconds per 10 000 instructions for each size and mode; the pipeline must stay linear, so the
column should be flat. Uses scripts/gen_big_program.py (the IR room's generator).

    python bench/bench_pipeline.py [--sizes 1000 10000 100000] [--modes all matmult] [--target gen3]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_big_program", ROOT / "scripts" / "gen_big_program.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate_program


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    from pyprecision import ir
    from pyprecision.passes import run_pipeline

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--modes", nargs="+", default=["all", "matmult"])
    ap.add_argument("--target", default="gen3")
    args = ap.parse_args(argv)
    generate = _generator()
    print(f"{'mode':<10} {'instructions':>12} {'parse s':>9} {'pipeline s':>11} {'s / 10k inst':>13}")
    for mode in args.modes:
        for size in args.sizes:
            text = generate(size)
            t0 = time.perf_counter()
            module = ir.parse(text)
            t1 = time.perf_counter()
            n = sum(1 for _ in module.main.instructions())
            run_pipeline(module, mode, args.target)
            t2 = time.perf_counter()
            per = (t2 - t1) / n * 10_000
            print(f"{mode:<10} {n:>12} {t1 - t0:>9.3f} {t2 - t1:>11.3f} {per:>13.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
