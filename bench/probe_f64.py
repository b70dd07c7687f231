"""float64 sources against the memory floor, one format at a time (compare.py's floor and timing:
thread CPU time, best of 7, alternating with the floor of the same bytes in and out).

    python bench/probe_f64.py [format ...] [--rounding rne]   # default: every format, rne

A shorter run than ``compare.py`` for the float64 rows (issue 16: float64 sources >= 0.6 of the
floor); 16 Mi elements, the data of compare.py (float32 normals widened, times 1 + 2^-30)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402

import pyprecision as pp  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("formats", nargs="*", default=["fp8e4m3fn", "fp8e5", "fp16", "bf16", "fp32r"])
    ap.add_argument("--rounding", default="rne")
    ap.add_argument("--n", type=int, default=16 << 20)
    a = ap.parse_args()
    print(compare.machine())
    b = compare.Bench(a.n, 7, [1], True)
    for fmt in a.formats:
        ob = pp.format(fmt).bits // 8
        out = np.empty(a.n, {1: np.uint8, 2: np.uint16, 4: np.uint32}[ob])
        def run(fmt: str = fmt, out: np.ndarray = out) -> None:
            pp.encode(b.x64, fmt, rounding=a.rounding, threads=1, out=out)

        g = b.measure(run, 8, ob, 1)
        fl = b.floor_cache[(8, ob, 1, False)]
        print(f"f64 -> {fmt:10} {a.rounding}: {g:6.2f} GB/s of input, floor {fl:6.2f}, "
              f"{g / fl:.2f} of the floor", flush=True)


if __name__ == "__main__":
    main()
