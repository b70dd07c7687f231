#!/usr/bin/env python3
"""Emulate a real transformer encoder and compare with XLA:CPU on the same model, in the same run.

Models (random weights of the real shapes, written in JAX, HLO text from
``jax.jit(f).lower(*args).as_text(dialect="hlo")``):

* ``minilm`` — all-MiniLM-L6-v2's encoder: 6 post-LN layers, hidden 384, 12 heads, intermediate
  1536, exact (erf) GELU, batch 8, sequence 128;
* ``bert`` — BERT-base shapes: 12 layers, hidden 768, 12 heads, intermediate 3072, batch 8, seq 128.

Rows: ``xla`` (``jax.jit``, XLA:CPU, f32), ``eval`` (``emulate.run_hlo``, the HLO evaluator), and
the whole pipeline (``compile_hlo`` + ``run_compiled``) under ``--auto-cast none`` / ``matmult`` /
``all``. Each row runs in its own subprocess (pinned to 1 or 2 CPUs with ``sched_setaffinity``;
XLA told to use as many threads) so its peak RSS (``ru_maxrss``) is its own. Times are the best of
``--repeat`` runs; ``dot s`` is the part of the best run spent in the PE dot (the HLO ``dot``
handler / the loop IR's ``matmul``), so the non-dot share can be judged on its own.

    python bench/bench_emulate.py                          # both models, every row, 1 and 2 threads
    python bench/bench_emulate.py --models minilm --rows xla eval matmult --threads 2 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROWS = ("xla", "eval", "none", "matmult", "all")
SHAPES = {  # layers, hidden, heads, intermediate, exact gelu
    "minilm": (6, 384, 12, 1536, True),
    "bert": (12, 768, 12, 3072, False),
}
BATCH, SEQ = 8, 128


# -- the model (JAX) -----------------------------------------------------------------------------
def _model(name: str) -> tuple[Any, list[np.ndarray]]:
    """The JAX function and its arguments (x, mask, then 16 weights per layer)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    layers, d, heads, ffn, exact = SHAPES[name]
    r = np.random.RandomState(0)

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (r.randn(*shape) * scale).astype(np.float32)

    def dense(n_in: int, n_out: int) -> list[np.ndarray]:
        return [normal(n_in, n_out, scale=n_in ** -0.5), normal(n_out, scale=0.1)]

    def ln_w() -> list[np.ndarray]:
        return [1.0 + normal(d, scale=0.1), normal(d, scale=0.1)]

    mask = np.zeros((BATCH, SEQ), np.float32)
    mask[:, 100:] = np.float32(-1e9)  # the last 28 tokens are padding
    weights: list[np.ndarray] = []
    for _ in range(layers):
        weights += [a for _ in range(4) for a in dense(d, d)] + ln_w()
        weights += dense(d, ffn) + dense(ffn, d) + ln_w()
    args = [normal(BATCH, SEQ, d), mask, *weights]

    def layer_norm(x: Any, g: Any, b: Any) -> Any:
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-12) * g + b

    def layer(x: Any, msk: Any, w: list[Any]) -> Any:
        wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2 = w
        dh = d // heads

        def proj(wt: Any, bias: Any) -> Any:
            return (jnp.einsum("bsd,de->bse", x, wt) + bias).reshape(BATCH, SEQ, heads, dh)

        q, k, v = proj(wq, bq), proj(wk, bk), proj(wv, bv)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(dh))
        p = jax.nn.softmax(s + msk[:, None, None, :], axis=-1)
        ctx = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(BATCH, SEQ, d)
        x = layer_norm(x + jnp.einsum("bsd,de->bse", ctx, wo) + bo, g1, b1)
        h = jax.nn.gelu(jnp.einsum("bsd,df->bsf", x, w1) + c1, approximate=not exact)
        return layer_norm(x + jnp.einsum("bsf,fd->bsd", h, w2) + c2, g2, b2)

    def f(x: Any, msk: Any, *w: Any) -> Any:
        for i in range(layers):
            x = layer(x, msk, list(w[16 * i:16 * i + 16]))
        return x

    f.__name__ = f.__qualname__ = name
    return f, args


# -- one row (in a child process) ----------------------------------------------------------------
class _DotTimer:
    """Seconds spent inside the wrapped PE-dot entry points."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn: Any) -> Any:
        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.seconds += time.perf_counter() - t0
        return timed


def _child(row: str, name: str, work: Path, repeat: int) -> dict[str, Any]:
    data = np.load(work / f"{name}.npz")
    args = [data[f"a{i}"] for i in range(len(data.files))]
    timer = _DotTimer()
    if row == "xla":
        import jax

        f, _ = _model(name)
        jf = jax.jit(f)
        jf(*args).block_until_ready()  # compile
        run = lambda: np.asarray(jf(*args).block_until_ready())  # noqa: E731
    else:
        from pyprecision import emulate, hlo
        from pyprecision.emulate.hlo import dot as hlo_dot
        from pyprecision.emulate.ir import eval as ir_eval

        hlo_dot.dot = timer.wrap(hlo_dot.dot)
        ir_eval.NUMERICS.matmul_fp32 = timer.wrap(ir_eval.NUMERICS.matmul_fp32)
        module = hlo.parse((work / f"{name}.hlo.txt").read_text())
        if row == "eval":
            run = lambda: emulate.run_hlo(module, args)[0]  # noqa: E731
        else:
            from pyprecision.frontend.config import parse_flags

            cfg = parse_flags(["--auto-cast", row])
            compiled = emulate.compile_hlo(module, cfg)
            run = lambda: emulate.run_compiled(compiled, args)[0]  # noqa: E731
    best, dot, out = float("inf"), 0.0, None
    for _ in range(repeat):
        timer.seconds = 0.0
        t0 = time.perf_counter()
        out = run()
        t = time.perf_counter() - t0
        if t < best:
            best, dot = t, timer.seconds
        del out
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": best, "dot": dot if row != "xla" else None, "rss": rss}


# -- the table (parent) --------------------------------------------------------------------------
def _prepare(name: str, work: Path) -> None:
    import jax

    f, args = _model(name)
    (work / f"{name}.hlo.txt").write_text(jax.jit(f).lower(*args).as_text(dialect="hlo"))
    np.savez(work / f"{name}.npz", **{f"a{i}": a for i, a in enumerate(args)})


def _run_row(row: str, name: str, work: Path, threads: int, repeat: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYPRECISION_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads),
               XLA_FLAGS=(f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                          f"intra_op_parallelism_threads={threads}"))
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    cmd = [sys.executable, __file__, "--child", row, "--models", name, "--work", str(work),
           "--repeat", str(repeat), "--cpus", ",".join(map(str, cpus))]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["killed"])[-1]
        return {"error": f"exit {p.returncode}: {tail}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table (or one row, with --child)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None, help="keep the HLO and inputs here")
    ap.add_argument("--child", choices=list(ROWS), help=argparse.SUPPRESS)
    ap.add_argument("--cpus", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        os.sched_setaffinity(0, {int(c) for c in a.cpus.split(",")})
        print(json.dumps(_child(a.child, a.models[0], a.work, a.repeat)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = a.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(f"loadavg {Path('/proc/loadavg').read_text().strip()}", flush=True)
        print(f"{'model':<7} {'thr':>3} {'row':<8} {'s':>8} {'x XLA':>7} {'dot s':>7} "
              f"{'non-dot s':>9} {'non-dot x':>9} {'RSS MB':>7}", flush=True)
        for name in a.models:
            if not (work / f"{name}.hlo.txt").exists():
                _prepare(name, work)
            for threads in a.threads:
                xla = None
                for row in a.rows:
                    r = _run_row(row, name, work, threads, a.repeat)
                    if "error" in r:
                        print(f"{name:<7} {threads:>3} {row:<8} {r['error']}", flush=True)
                        continue
                    if row == "xla":
                        xla = r["seconds"]
                    s, dot = r["seconds"], r["dot"]
                    ratio = f"{s / xla:7.1f}" if xla else f"{'-':>7}"
                    nd = s - dot if dot is not None else None
                    print(f"{name:<7} {threads:>3} {row:<8} {s:8.2f} {ratio} "
                          f"{dot if dot is not None else float('nan'):7.2f} "
                          f"{nd if nd is not None else float('nan'):9.2f} "
                          f"{(nd / xla) if (nd is not None and xla) else float('nan'):9.1f} "
                          f"{r['rss'] / 1e6:7.0f}", flush=True)
        print(f"loadavg {Path('/proc/loadavg').read_text().strip()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
