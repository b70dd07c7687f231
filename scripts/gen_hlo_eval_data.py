#!/usr/bin/env python3
"""Generate real JAX modules and XLA's outputs for the HLO evaluator's coverage tests.

JAX is a tool for *making* data, never a dependency of pyprecision or its tests. Run with a
Python that has jax/jaxlib (CPU)::

    /work/jaxvenv/bin/python scripts/gen_hlo_eval_data.py --out tests/data/hlo-eval

It writes ``<out>/jax-<version>/`` with, per module ``<name>``: ``<name>.hlo.txt``
(``jax.jit(f).lower(*args).as_text(dialect="hlo")``, the unoptimized module), ``<name>.npz``
(inputs ``in0..`` and XLA:CPU's outputs ``out0..``, a tuple result flattened in order), and a
``manifest.json`` with the versions, flags, and per module the description, files, input/output
dtypes and shapes. Everything here is float32/int32/bool (uint64 PRNG states), stored as is.

Modules: a CNN (conv + batch norm + max/avg pooling) and its jax.grad; cumsum/cumprod; top-k
sampling; scatter updates; argsort and multi-key sort; an embedding lookup and its gradient; a
scan; dynamic_update_slice in a loop; causal attention; argmax; the remaining elementwise
opcodes; rng-bit-generator (Philox); and seeded random draws of ``lax.conv_general_dilated``, ``lax.reduce_window`` and
``lax.scatter`` attributes on small shapes (``--draws`` of each; the seed is fixed).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

NUMERIC_FLAGS = "--xla_allow_excess_precision=false"
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {NUMERIC_FLAGS}").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jaxlib  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

CASES: dict[str, tuple[Callable[..., Any], list[np.ndarray], str]] = {}


def case(name: str, args: list[np.ndarray], desc: str) -> Callable[[Callable[..., Any]], Any]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        CASES[name] = (fn, args, desc)
        return fn
    return deco


R = np.random.RandomState(1234)


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (R.standard_normal(shape) * scale).astype(np.float32)


# -- a small CNN -----------------------------------------------------------------------------
CNN_PARAMS = [f32(3, 3, 3, 4, scale=0.3), f32(4), f32(4), f32(3, 3, 4, 6, scale=0.3),
              f32(6 * 2 * 2, 5, scale=0.2)]
CNN_X = f32(2, 8, 8, 3)


def cnn(params: list[Any], x: Any) -> Any:
    w1, gamma, beta, w2, wd = params
    dn = ("NHWC", "HWIO", "NHWC")
    y = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn)
    mean = y.mean(axis=(0, 1, 2))
    var = ((y - mean) ** 2).mean(axis=(0, 1, 2))
    y = (y - mean) / jnp.sqrt(var + 1e-5) * gamma + beta
    y = jax.nn.relu(y)
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")  # max pool
    y = lax.conv_general_dilated(y, w2, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn)
    y = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0  # avg
    return jnp.tanh(y.reshape(y.shape[0], -1) @ wd)


@case("cnn_forward", [*CNN_PARAMS, CNN_X], "conv (SAME, HWIO) + batch norm + relu + max pool "
      "+ conv (explicit padding) + avg pool + dense")
def cnn_forward(w1: Any, g: Any, b: Any, w2: Any, wd: Any, x: Any) -> Any:
    return cnn([w1, g, b, w2, wd], x)


@case("cnn_grad", [*CNN_PARAMS, CNN_X], "jax.grad of the CNN's squared output w.r.t. every "
      "parameter and the input (conv transposes, select-and-scatter, pad)")
def cnn_grad(w1: Any, g: Any, b: Any, w2: Any, wd: Any, x: Any) -> Any:
    return jax.grad(lambda p, xx: (cnn(p, xx) ** 2).sum(), argnums=(0, 1))([w1, g, b, w2, wd], x)


@case("depthwise_conv_grad", [f32(2, 6, 6, 4), f32(3, 3, 1, 4, scale=0.5)],
      "depthwise conv (feature_group_count=4) and its weight gradient (batch_group_count)")
def depthwise_conv_grad(x: Any, w: Any) -> Any:
    def f(w: Any) -> Any:
        return lax.conv_general_dilated(x, w, (2, 2), "SAME", rhs_dilation=(1, 1),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=4)
    y, vjp = jax.vjp(f, w)
    return y, vjp(jnp.ones_like(y))[0]


@case("cumsum_cumprod", [f32(3, 7), R.randint(-3, 4, (3, 7)).astype(np.int32)],
      "jnp.cumsum / cumprod / cummax on floats and ints (reduce-window with padding)")
def cumsum_cumprod(x: Any, i: Any) -> Any:
    return (jnp.cumsum(x, axis=1), jnp.cumprod(x * 0.5 + 1.0, axis=0), jnp.cumsum(i, axis=0),
            lax.cummax(x, axis=1), jnp.cumprod(i, axis=1))


@case("top_k_sampling", [f32(4, 16)], "lax.top_k, then sampling among the top 5 logits with a "
      "fixed PRNG key (threefry in HLO integer ops)")
def top_k_sampling(logits: Any) -> Any:
    vals, idx = lax.top_k(logits, 5)
    key = jax.random.PRNGKey(7)
    choice = jax.random.categorical(key, vals, axis=-1)
    return vals, idx, jnp.take_along_axis(idx, choice[:, None], axis=1)


@case("scatter_updates", [f32(6, 3), np.array([0, 2, 2, 5, 0], np.int32), f32(5, 3),
                          R.randint(0, 9, (8,)).astype(np.int32)],
      "x.at[i].add/set/max/mul with repeated indices, a 2-d point scatter, a bincount")
def scatter_updates(x: Any, i: Any, u: Any, ids: Any) -> Any:
    return (x.at[i].add(u), x.at[i].set(u), x.at[i].max(u), x.at[i].mul(u),
            x.at[i, 1].add(u[:, 0]), jnp.zeros(10, jnp.int32).at[ids].add(1))


@case("argsort", [f32(5, 9), R.randint(0, 3, (5, 9)).astype(np.int32)],
      "jnp.sort, jnp.argsort (stable, 2 operands), descending argsort, a 2-key lax.sort")
def argsort(x: Any, k: Any) -> Any:
    x = x.at[0, 3].set(x[0, 4])  # a tie
    return (jnp.sort(x, axis=1), jnp.argsort(x, axis=0), jnp.argsort(-x, axis=1),
            lax.sort((k, x), dimension=1, num_keys=2))


@case("embedding", [f32(11, 4), R.randint(0, 11, (3, 5)).astype(np.int32)],
      "an embedding lookup (gather) and the gradient of its sum of squares (scatter-add)")
def embedding(table: Any, ids: Any) -> Any:
    def f(t: Any) -> Any:
        return (t[ids] ** 2).sum()
    return table[ids], jax.grad(f)(table)


@case("scan_rnn", [f32(6, 3), f32(3, 3, scale=0.5), f32(3)], "lax.scan of a tanh RNN cell "
      "(while loop over dynamic-slice / dynamic-update-slice)")
def scan_rnn(xs: Any, w: Any, h0: Any) -> Any:
    def step(h: Any, x: Any) -> Any:
        h = jnp.tanh(h @ w + x)
        return h, h * 2.0
    return lax.scan(step, h0, xs)


@case("dus_loop", [f32(4), np.zeros((6, 4), np.float32)],
      "fori_loop writing row i with dynamic_update_slice")
def dus_loop(v: Any, buf: Any) -> Any:
    def body(i: Any, b: Any) -> Any:
        return lax.dynamic_update_slice(b, (v * i.astype(jnp.float32))[None, :], (i, 0))
    return lax.fori_loop(0, 6, body, buf)


@case("causal_attention", [f32(2, 5, 8), f32(2, 5, 8), f32(2, 5, 8)],
      "softmax(QK^T/sqrt(d) + causal mask) V")
def causal_attention(q: Any, k: Any, v: Any) -> Any:
    s = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(8.0)
    mask = jnp.tril(jnp.ones((5, 5), bool))
    s = jnp.where(mask, s, -1e9)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)


@case("argmax", [f32(4, 7)], "jnp.argmax / argmin (two-operand reduce)")
def argmax(x: Any) -> Any:
    x = x.at[1, 2].set(x[1, 5])
    return jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.max(x, axis=1)


@case("elementwise_misc", [f32(16, scale=2.0), f32(16, scale=2.0),
                           R.randint(-1000, 1000, (16,)).astype(np.int32),
                           R.randint(0, 40, (16,)).astype(np.int32)],
      "erf expm1 log1p cbrt atan2 pow rem clamp reduce_precision bitcast_convert popcnt clz "
      "shifts pad (negative, interior) reverse")
def elementwise_misc(x: Any, y: Any, i: Any, s: Any) -> Any:
    return (lax.erf(x), jnp.expm1(x), jnp.log1p(jnp.abs(x)), jnp.cbrt(x), jnp.arctan2(x, y),
            jnp.power(jnp.abs(x), y), jnp.remainder(x, y), lax.rem(i, s + 1), lax.clamp(-1.0, x, 1.5),
            lax.reduce_precision(x, exponent_bits=5, mantissa_bits=2),
            lax.bitcast_convert_type(x, jnp.int32), lax.population_count(i), lax.clz(i),
            lax.shift_left(i, s), lax.shift_right_arithmetic(i, s), lax.shift_right_logical(i, s),
            lax.pad(x, 0.5, [(-2, 3, 1)]), lax.rev(x.reshape(4, 4), (0, 1)))


@case("rng_bit_generator", [np.array([1, 2], np.uint64), np.array([5, 2**64 - 2], np.uint64)],
      "lax.rng_bit_generator with rng_default, rng_philox and rng_three_fry, u32 and u64 "
      "outputs of several shapes, u64[2] states (one counter carries / wraps)")
def rng_bit_generator(k2: Any, k3: Any) -> Any:
    outs = []
    alg = lax.RandomAlgorithm
    for key, a in ((k2, alg.RNG_DEFAULT), (k2, alg.RNG_PHILOX), (k3, alg.RNG_PHILOX),
                   (k2, alg.RNG_THREE_FRY), (k3, alg.RNG_THREE_FRY)):
        for shape, dt in (((3, 5), jnp.uint32), ((7,), jnp.uint64), ((2, 2), jnp.uint64),
                          ((4, 3), jnp.uint32), ((), jnp.uint32), ((3, 1, 5), jnp.uint32)):
            outs.extend(lax.rng_bit_generator(key, shape, dtype=dt, algorithm=a))
    return outs


# -- seeded draws of attributes --------------------------------------------------------------
def draw_conv(r: np.random.RandomState, k: int) -> None:
    nsp = int(r.randint(1, 3))
    fgc, bgc = 1, 1
    mode = r.randint(0, 3)
    if mode == 1:
        fgc = int(r.choice([2, 3]))
    elif mode == 2:
        bgc = int(r.choice([2, 3]))
    n = int(r.randint(1, 3)) * bgc
    cin = int(r.randint(1, 3)) * fgc
    cout = int(r.randint(1, 3)) * fgc * bgc
    sp = [int(r.randint(3, 7)) for _ in range(nsp)]
    ks = [int(r.randint(1, 4)) for _ in range(nsp)]
    strides = [int(r.randint(1, 3)) for _ in range(nsp)]
    pads = [(int(r.randint(-1, 3)), int(r.randint(-1, 3))) for _ in range(nsp)]
    lhs_d = [int(r.randint(1, 3)) for _ in range(nsp)]
    rhs_d = [int(r.randint(1, 3)) for _ in range(nsp)]
    sp_chars = "HW"[:nsp] if nsp == 2 else "H"
    lhs_spec = "".join(r.permutation(list("NC" + sp_chars)))
    rhs_spec = "".join(r.permutation(list("OI" + sp_chars)))
    out_spec = "".join(r.permutation(list("NC" + sp_chars)))
    lhs_shape = [{"N": n, "C": cin, "H": sp[0], "W": sp[-1]}[c] for c in lhs_spec]
    rhs_shape = [{"O": cout, "I": cin // fgc, "H": ks[0], "W": ks[-1]}[c] for c in rhs_spec]
    x, w = f32(*lhs_shape), f32(*rhs_shape)

    def fn(a: Any, b: Any) -> Any:
        return lax.conv_general_dilated(a, b, strides, pads, lhs_dilation=lhs_d,
                                        rhs_dilation=rhs_d,
                                        dimension_numbers=(lhs_spec, rhs_spec, out_spec),
                                        feature_group_count=fgc, batch_group_count=bgc)
    try:
        jax.eval_shape(fn, x, w)
    except Exception:  # an attribute draw XLA rejects (window larger than the input...)
        return
    desc = (f"conv {lhs_spec},{rhs_spec}->{out_spec} strides={strides} pads={pads} "
            f"lhs_dilation={lhs_d} rhs_dilation={rhs_d} fgc={fgc} bgc={bgc}")
    CASES[f"draw_conv_{k:02d}"] = (fn, [x, w], desc)


def draw_reduce_window(r: np.random.RandomState, k: int) -> None:
    rank = int(r.randint(1, 4))
    shape = [int(r.randint(2, 6)) for _ in range(rank)]
    win = [int(r.randint(1, 4)) for _ in range(rank)]
    strides = [int(r.randint(1, 3)) for _ in range(rank)]
    pads = [(int(r.randint(0, 3)), int(r.randint(0, 3))) for _ in range(rank)]
    base_d = [int(r.randint(1, 3)) for _ in range(rank)]
    win_d = [int(r.randint(1, 3)) for _ in range(rank)]
    op, init = [(lax.add, 0.0), (lax.max, -np.inf), (lax.min, np.inf), (lax.mul, 1.0)][k % 4]
    x = f32(*shape)

    def fn(a: Any) -> Any:
        return lax.reduce_window(a, init, op, win, strides, pads, base_dilation=base_d,
                                 window_dilation=win_d)
    try:
        jax.eval_shape(fn, x)
    except Exception:
        return
    CASES[f"draw_reduce_window_{k:02d}"] = (fn, [x], f"reduce_window {op.__name__} window={win} "
                                            f"strides={strides} pads={pads} base={base_d} "
                                            f"win_dil={win_d}")


def draw_scatter(r: np.random.RandomState, k: int) -> None:
    operand = f32(5, 4, 3)
    nidx = int(r.randint(1, 6))
    kind = k % 3
    if kind == 0:    # rows: update windows of [4, 3] at operand dim 0
        idx = r.randint(-1, 6, (nidx, 1)).astype(np.int32)
        upd = f32(nidx, 4, 3)
        dn = lax.ScatterDimensionNumbers((1, 2), (0,), (0,))
    elif kind == 1:  # points in dims (0, 2), windows along dim 1 of size 2
        idx = np.stack([r.randint(0, 5, nidx), r.randint(0, 3, nidx)], 1).astype(np.int32)
        upd = f32(nidx, 2)
        dn = lax.ScatterDimensionNumbers((1,), (0, 2), (0, 2))
    else:            # windows [2, 2, 3] at (d0, d1), some out of bounds (dropped)
        idx = np.stack([r.randint(0, 5, nidx), r.randint(0, 4, nidx)], 1).astype(np.int32)
        upd = f32(nidx, 2, 2, 3)
        dn = lax.ScatterDimensionNumbers((1, 2, 3), (), (0, 1))
    comb = [lax.scatter_add, lax.scatter_max, lax.scatter_mul, lax.scatter][k % 4]

    def fn(o: Any, i: Any, u: Any) -> Any:
        return comb(o, i, u, dn, mode=lax.GatherScatterMode.FILL_OR_DROP)
    CASES[f"draw_scatter_{k:02d}"] = (fn, [operand, idx, upd], f"{comb.__name__} kind {kind}")


# -- writing ---------------------------------------------------------------------------------
def _describe(a: np.ndarray) -> dict[str, Any]:
    return {"dtype": a.dtype.name, "shape": list(a.shape)}


def run_case(name: str, fn: Callable[..., Any], args: list[np.ndarray], desc: str,
             outdir: str) -> dict[str, Any]:
    jitted = jax.jit(fn)
    text = jitted.lower(*args).as_text(dialect="hlo")
    outs = [np.asarray(o) for o in jax.tree_util.tree_leaves(jitted(*args))]
    with open(os.path.join(outdir, f"{name}.hlo.txt"), "w") as fh:
        fh.write(text)
    store = {f"in{i}": a for i, a in enumerate(args)}
    store.update({f"out{i}": a for i, a in enumerate(outs)})
    np.savez_compressed(os.path.join(outdir, f"{name}.npz"), **store)
    return {"description": desc, "files": {"hlo": f"{name}.hlo.txt", "data": f"{name}.npz"},
            "inputs": [_describe(a) for a in args], "outputs": [_describe(a) for a in outs]}


#: cases traced with 64-bit types enabled (u64 PRNG states); the others stay 32-bit
X64 = {"rng_bit_generator"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/data/hlo-eval")
    ap.add_argument("--draws", type=int, default=12, help="random draws per drawn operation")
    ns = ap.parse_args(argv)
    r = np.random.RandomState(20261201)
    for k in range(ns.draws):
        draw_conv(r, k)
        draw_reduce_window(r, k)
        draw_scatter(r, k)
    outdir = os.path.join(ns.out, f"jax-{jax.__version__}")
    os.makedirs(outdir, exist_ok=True)
    manifest: dict[str, Any] = {
        "generator": "scripts/gen_hlo_eval_data.py",
        "versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
                     "numpy": np.__version__, "python": sys.version.split()[0]},
        "backend": jax.default_backend(), "xla_flags": NUMERIC_FLAGS, "modules": {}}
    for name, (fn, args, desc) in CASES.items():
        if name in X64:
            with jax.enable_x64(True):
                manifest["modules"][name] = run_case(name, fn, args, desc, outdir)
        else:
            manifest["modules"][name] = run_case(name, fn, args, desc, outdir)
        print(f"{name}: {len(manifest['modules'][name]['outputs'])} outputs")
    with open(os.path.join(outdir, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
