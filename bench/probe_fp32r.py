"""Is compare.py's fp32r decode row its kernel or the floor it is divided by?

    python bench/probe_fp32r.py [--n N] [--rounds R]

fp32r decode reads and writes 4 B per element, the same bytes as the fp32r encodes, so compare.py
divides all of them by one floor: the best 4 B -> 4 B streaming copy of its whole run (the floor
is timed beside every row, and the encodes give it far more chances than the decode alone). This
prints, per round, single-thread GB/s of input (best of 7 by thread CPU time) of fp32r decode and
of the fp32r rne encode, back to back and interleaved with the 4 B -> 4 B floor as compare.py's
Bench.measure does, the floor each interleaved case reached in that round, and the decode over its
own round's floor and over the run's best floor. A decode at its own round's floor is at the
memory floor; a low ratio only against the run's best is the measurement."""
from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402  (bench/compare.py: the floor and its alternation)

import pyprecision  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16 << 20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    b = compare.Bench(a.n, 7, [1], True)
    codes = pyprecision.encode(b.x32, "fp32r")
    dec_out = np.empty(a.n, np.float32)
    enc_out = np.empty(a.n, np.uint32)
    cases = {"decode": partial(pyprecision.decode, codes, "fp32r", threads=1, out=dec_out),
             "encode rne": partial(pyprecision.encode, b.x32, "fp32r", threads=1, out=enc_out)}
    key = (4, 4, 1, False)
    print(f"n = {a.n}, {a.rounds} rounds, GB/s of input (fp32r, one thread)")
    run_best = 0.0
    rows = []
    for r in range(a.rounds):
        for name, fn in cases.items():
            alone = a.n * 4 / compare.best(fn, 7, time.thread_time) / 1e9
            b.floor_cache.pop(key, None)  # the floor this measurement reached, not the run's
            paired = b.measure(fn, 4, 4, 1)
            floor = b.floor_cache[key]
            run_best = max(run_best, floor)
            rows.append((r, name, alone, paired, floor))
    for r, name, alone, paired, floor in rows:
        print(f"round {r}  {name:10s} back to back {alone:6.2f}   with the floor {paired:6.2f}"
              f"   its floor {floor:6.2f}   / its floor {paired / floor:5.2f}"
              f"   / the run's best floor ({run_best:.2f}) {paired / run_best:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
