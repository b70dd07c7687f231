"""Are the fp8 encoders' compare.py rows their kernels or the minute they were measured in?

    python bench/probe_fp8.py [--n N] [--rounds R]

fp8e4, fp8e4m3fn and fp8e5 under rne / rtz take the same AVX-512 instructions (kern_avx512.c
fp8_avx512). This prints, per format and rounding, single-thread GB/s of float32 input (best of 7
by thread CPU time) in R rounds, two ways: back to back (the encodes alone) and interleaved with
the 4 B -> 1 B streaming-copy floor exactly as compare.py's Bench.measure does, with the floor
that the interleaved rounds reached. Equal rows in one round mean equal kernels."""
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

FORMATS = ("fp8e4", "fp8e4m3fn", "fp8e5")
ROUNDINGS = ("rne", "rtz")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16 << 20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    b = compare.Bench(a.n, 7, [1], True)
    out = np.empty(a.n, np.uint8)
    alone: dict[str, list[float]] = {}
    paired: dict[str, list[float]] = {}
    for _ in range(a.rounds):
        for fmt in FORMATS:
            for r in ROUNDINGS:
                fn = partial(pyprecision.encode, b.x32, fmt, rounding=r, threads=1, out=out)
                t = compare.best(fn, 7, time.thread_time)
                alone.setdefault(f"{fmt} {r}", []).append(b.x32.nbytes / t / 1e9)
                paired.setdefault(f"{fmt} {r}", []).append(b.measure(fn, 4, 1, 1))
    floor = b.floor_cache[(4, 1, 1, False)]
    print(f"n = {a.n}, {a.rounds} rounds, GB/s of input per round; "
          f"floor (4 B -> 1 B, interleaved) {floor:.2f}")
    for key in alone:
        print(f"{key:16s} back to back {' '.join(f'{v:6.2f}' for v in alone[key])}   "
              f"with the floor {' '.join(f'{v:6.2f}' for v in paired[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
