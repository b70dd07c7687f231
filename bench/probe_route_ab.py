"""A/B of one IR-evaluator route (decisions EM-23, EM-24, EM-26) on bench_emulate's MiniLM-L6: the
old and the new route alternated five times in one process, the outputs asserted equal; medians
of the milliseconds per run spent in the instructions the route serves, and of the run's seconds.
Make the data with ``python bench/bench_diagnosis.py --models minilm --runs 1 --work DIR``.

    PYPRECISION_THREADS=1 python bench/probe_route_ab.py DIR unary-table --auto-cast all
    PYPRECISION_THREADS=1 python bench/probe_route_ab.py DIR pe-transpose --auto-cast all
    PYPRECISION_THREADS=1 python bench/probe_route_ab.py DIR f64-ufunc --auto-cast none

``unary-table`` (EM-23) switches ``ops.TABLE_MIN`` and times the unary ops; ``pe-transpose``
(EM-24) switches ``NUMERICS.pe_transpose`` and times the matmuls not batched (the transposes,
mostly); ``f64-ufunc`` (EM-26) empties ``ops._F64_UFUNC`` and times the unary ops."""
import sys
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from pyprecision import hlo, ir
from pyprecision.emulate import compile_hlo, run_compiled
from pyprecision.emulate.ir import eval as ir_eval
from pyprecision.emulate.ir import ops
from pyprecision.frontend import parse_flags


def _set(obj: object, name: str, value: object) -> Callable[[], None]:
    return lambda: setattr(obj, name, value)


ROUTES: dict[str, tuple[type, Callable[[], None], Callable[[], None]]] = {
    "unary-table": (ir.UnaryOp, _set(ops, "TABLE_MIN", 1 << 40),
                    _set(ops, "TABLE_MIN", ops.TABLE_MIN)),
    "pe-transpose": (ir.TensorContractOp, _set(ir_eval.NUMERICS, "pe_transpose", lambda *a: None),
                     _set(ir_eval.NUMERICS, "pe_transpose", ops.pe_transpose)),
    "f64-ufunc": (ir.UnaryOp, _set(ops, "_F64_UFUNC", {}),
                  _set(ops, "_F64_UFUNC", dict(ops._F64_UFUNC))),
}

work, route, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
cls, old, new = ROUTES[route]
with open(f"{work}/minilm.hlo.txt") as f:
    text = f.read()
d = np.load(f"{work}/minilm.npz")
args = [d[f"a{i}"] for i in range(len(d.files))]
c = compile_hlo(hlo.parse(text), parse_flags(flags))
spent = [0.0]
evaluate = cls.evaluate


def timed(self, *a, **k):
    t = time.perf_counter()
    r = evaluate(self, *a, **k)
    spent[0] += time.perf_counter() - t
    return r


cls.evaluate = timed
part, runs, outs = defaultdict(list), defaultdict(list), {}
run_compiled(c, args)
for _ in range(5):
    for k, switch in (("old", old), ("new", new)):
        switch()
        spent[0] = 0.0
        t = time.perf_counter()
        outs[k] = run_compiled(c, args)
        runs[k].append(time.perf_counter() - t)
        part[k].append(spent[0])
for a, b in zip(outs["old"], outs["new"], strict=True):
    assert np.array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))
print(route, flags, f"{cls.__name__} ms",
      {k: round(1e3 * float(np.median(v)), 1) for k, v in part.items()},
      "run s", {k: round(float(np.median(v)), 3) for k, v in runs.items()})
