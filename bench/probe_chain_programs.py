"""The C chain programs (csrc/chain.c) an emulation of bench_emulate's MiniLM-L6 runs, timed alone
(decision EM-25): ``capture`` runs the model once under the given flags and saves each program of
more than 40 operations with one block of its inputs (broadcast scalars kept as broadcasts);
``time`` runs each saved program at one thread, best of 30, and prints the total. Time the same
capture under two builds (two trees, ``PYTHONPATH``) to compare them. Make the data with ``python
bench/bench_diagnosis.py --models minilm --runs 1 --work DIR``.

    PYPRECISION_THREADS=1 python bench/probe_chain_programs.py capture DIR OUT.pkl --auto-cast all
    PYPRECISION_THREADS=1 python bench/probe_chain_programs.py time OUT.pkl"""
import pickle
import sys
import time

import numpy as np

import pyprecision.kernel.chain as kc
from pyprecision import hlo
from pyprecision.emulate import compile_hlo, run_compiled
from pyprecision.frontend import parse_flags


def capture(work: str, out: str, flags: list[str]) -> None:
    with open(f"{work}/minilm.hlo.txt") as f:
        text = f.read()
    d = np.load(f"{work}/minilm.npz")
    args = [d[f"a{i}"] for i in range(len(d.files))]
    c = compile_hlo(hlo.parse(text), parse_flags(flags))
    orig = kc.Program.__call__
    saved = {}

    def record(self, inputs, n, threads=None):
        if id(self) not in saved and self.n_insn > 40:
            ins = []
            for x in map(np.asarray, inputs):
                scalar = x.size == 1 or not any(x.strides)
                ins.append(("s", x.reshape(-1)[:1].copy()) if scalar else ("a", x.copy()))
            outs = [(int(r), dt.str) for r, dt in zip(self._out_reg, self.out_dtypes, strict=True)]
            saved[id(self)] = (self._code.copy(), self.n_regs, self.n_in, outs, ins, n)
        return orig(self, inputs, n, threads)

    kc.Program.__call__ = record
    run_compiled(c, args)
    with open(out, "wb") as f:
        pickle.dump(list(saved.values()), f)
    print(f"{len(saved)} programs saved to {out}")


def time_programs(path: str) -> None:
    names = {v[0]: k for k, v in kc.OPS.items()}
    with open(path, "rb") as f:
        progs = pickle.load(f)
    total = 0.0
    for code, n_regs, n_in, outs, ins, n in progs:
        ops = [(names[r[0]], *map(int, r[1:2 + kc.OPS[names[r[0]]][1]])) for r in code]
        p = kc.Program(ops, n_regs, n_in, [(r, np.dtype(dt)) for r, dt in outs])
        a = [np.broadcast_to(x, (n,)) if kind == "s" else x for kind, x in ins]
        best = 1e9
        for _ in range(30):
            t = time.perf_counter()
            p(a, n, 1)
            best = min(best, time.perf_counter() - t)
        total += best
    print(f"{len(progs)} programs: {total * 1e3:.3f} ms")


if __name__ == "__main__":
    if sys.argv[1] == "capture":
        capture(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        time_programs(sys.argv[2])
