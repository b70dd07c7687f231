"""A whole-traced run and tune's attribution with the run's output buffers used again (decision
EM-22) and without (``np.empty`` for each), alternated in one process on bench_tune.py's MiniLM-L6
data: wall seconds and minor page faults of each, the attribution's errors asserted equal. Make
the data first with ``python bench/bench_tune.py --model minilm6 --data DIR --repeat 1``.

    python bench/probe_recycler_ab.py DIR [ROUNDS] [THREADS]
"""
import resource
import sys
import time
from pathlib import Path

import numpy as np

from pyprecision import hlo
from pyprecision.emulate import FlagSetRunner, SparseTrace, run_compiled
from pyprecision.emulate.ir import eval as ir_eval
from pyprecision.frontend import parse_flags
from pyprecision.kernel import thread_limit
from pyprecision.tune import attribution


def usage() -> tuple[int, float]:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()


class _Off:
    """The evaluator's allocation before EM-22: a fresh array for each output."""

    def __init__(self) -> None:
        self.empty = np.empty


class _Discard(SparseTrace):
    def record(self, key: int, value: np.ndarray) -> None:
        pass


def main() -> None:
    d = Path(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    m = hlo.parse((d / "minilm6_l6.hlo.txt").read_text())
    z = np.load(d / "minilm6_l6.npz")
    runner = FlagSetRunner(m, [z[f"in{i}"] for i in range(len(z.files))], "gen2")
    base = runner.compile(parse_flags(["--auto-cast", "none"]))
    rec = runner.compile(parse_flags(["--auto-cast", "matmult", "--auto-cast-type", "bf16"]))
    args = runner.bound.args
    floats = {id(i) for i in base.lowered.function.instructions()
              if i.result is not None and i.result.dtype.is_float}
    recycler = ir_eval.Recycler
    best: dict[str, list[float]] = {}
    ref = None
    with thread_limit(threads):
        for _ in range(rounds):
            for mode in ("old", "new"):
                ir_eval.Recycler = _Off if mode == "old" else recycler  # type: ignore[misc]
                f0, t0 = usage()
                run_compiled(base, args, _Discard(floats, 0, whole=True))
                f1, t1 = usage()
                errors = attribution.op_errors(base, rec, args)
                f2, t2 = usage()
                ref = errors if ref is None else ref
                assert errors == ref, "the attribution's errors differ"
                print(f"{mode}: whole-traced run {t1 - t0:.2f} s, {f1 - f0} faults; "
                      f"attribution {t2 - t1:.2f} s, {f2 - f1} faults", flush=True)
                b = best.setdefault(mode, [float("inf")] * 2)
                b[0], b[1] = min(b[0], t1 - t0), min(b[1], t2 - t1)
    ir_eval.Recycler = recycler  # type: ignore[misc]
    for mode, (w, a) in best.items():
        print(f"best {mode}: whole-traced run {w:.2f} s, attribution {a:.2f} s")


if __name__ == "__main__":
    main()
