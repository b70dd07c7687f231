"""Benchmark of ``hlo.load`` on an HloModuleProto: the wire-format decode + printing the text
(proto_to_text), then the parse, against parsing the same module's text and against jaxlib
printing the proto (when jaxlib is installed).

    python3 bench/bench_load.py                  # 1e3, 1e4, 3e4 instructions, best of 5
    python3 bench/bench_load.py --sizes 1000 --runs 3

The modules are bench/bench_hlo.py's generated ones, turned into protos by jaxlib (needed here
only to *make* the proto). Prints CPU seconds (process time: the machine is shared) per stage, best
of --runs, and instructions per second of the whole load.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_hlo import generate  # noqa: E402

from pyprecision import hlo  # noqa: E402
from pyprecision.hlo.proto_text import proto_to_text  # noqa: E402


def _best(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> int:
    """Print one row per size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 30000])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from jax._src.lib import hlo as xla_hlo

    opts = xla_hlo.HloPrintOptions.short_parsable()
    opts.print_metadata = True
    print(f"{'instr':>7} {'proto KB':>9} {'decode+print s':>15} {'parse s':>9} "
          f"{'load s':>8} {'text parse s':>13} {'jaxlib print s':>15} {'load instr/s':>13}")
    for n in args.sizes:
        text = re.sub(r"\bc(\d+)\b", r"cst\1", generate(n))  # XLA's parser: c64 is a type
        pb = xla_hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        ref = xla_hlo.XlaComputation(pb).as_hlo_module().to_string(opts)
        assert proto_to_text(pb) == ref
        m = hlo.parse(ref)
        count = m.instruction_count()
        t_dec = _best(lambda: proto_to_text(pb), args.runs)  # noqa: B023
        t_parse = _best(lambda: hlo.parse(ref), args.runs)  # noqa: B023
        t_load = _best(lambda: hlo.load(pb), args.runs)  # noqa: B023
        t_text = _best(lambda: hlo.parse(text), args.runs)  # noqa: B023
        t_jax = _best(lambda: xla_hlo.XlaComputation(pb).as_hlo_module().to_string(opts),  # noqa: B023
                      args.runs)
        print(f"{count:>7} {len(pb) / 1024:>9.0f} {t_dec:>15.3f} {t_parse:>9.3f} {t_load:>8.3f} "
              f"{t_text:>13.3f} {t_jax:>15.4f} {count / t_load:>13.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
