#!/usr/bin/env python3
"""XLA:CPU's outputs on the edge cases of the opcode semantics (issue 24, decisions OP5–OP8).

JAX only makes the data; no pyprecision code imports it. Run with the venv's jax (0.10.2, CPU)::

    python scripts/gen_opcode_xla.py --out tests/data/opcodes

It writes ``<out>/jax-<version>/<name>.hlo.txt`` (``jax.jit(f).lower(*args).as_text(dialect="hlo")``),
``<name>.npz`` (inputs ``in<i>``, XLA:CPU's outputs ``out<i>``, in the npz convention of
``scripts/hlo_npz.py``) and ``manifest.json`` (versions, flags, and per case the description and
dtypes). ``jax_enable_x64`` is on (s64/u64 stay 64-bit) and ``--xla_allow_excess_precision=false``
(every result rounded to its element type). No input is subnormal: XLA:CPU flushes subnormals to
zero (decision OP8), which the evaluator does not.

Cases: comparisons in total order (``lt_to`` / ``le_to`` / ``eq_to``, HLO ``type=TOTALORDER``) and
in the float order, on ±0, NaN of both signs, ±inf; the three shifts by negative, zero, in-range
and ≥ width amounts on s8/u8/s32/u32/s64/u64; integer divide / remainder by zero and INT_MIN / -1;
round-nearest-afz, round-nearest-even, sign, floor, ceil on ±0, ±0.5, ±2.5, 0.49999997, NaN, ±inf;
maximum / minimum with NaN and ±0; converts to and from bf16, f16, f8e4m3fn, f8e5m2; pred logic.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ["XLA_FLAGS"] = "--xla_allow_excess_precision=false"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from hlo_npz import describe, save_npz  # noqa: E402
from jax import lax  # noqa: E402
from jax._src.lax.lax import eq_to_p, le_to_p, lt_to_p  # noqa: E402  (total-order compares)

jax.config.update("jax_enable_x64", True)

NAN = np.float32("nan")
NNAN = np.float32(-NAN)
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, NAN, NNAN, 2.5, -2.5]


def _pairs(vals: list[float], dt: Any) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([x for x in vals for _ in vals], np.float32)
    b = np.array([y for _ in vals for y in vals], np.float32)
    return a.astype(dt), b.astype(dt)


def _total(a: Any, b: Any) -> tuple:
    return (lt_to_p.bind(a, b), le_to_p.bind(a, b), eq_to_p.bind(a, b), lt_to_p.bind(b, a))


def _float_cmp(a: Any, b: Any) -> tuple:
    return (lax.lt(a, b), lax.le(a, b), lax.eq(a, b), lax.ne(a, b), lax.gt(a, b), lax.ge(a, b))


def _shifts(a: Any, s: Any) -> tuple:
    return (lax.shift_left(a, s), lax.shift_right_arithmetic(a, s), lax.shift_right_logical(a, s))


def _shift_inputs(dt: Any) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dt)
    w = info.bits
    vals = sorted({info.min, info.min + 1, -1 if info.min else 1, 0, 1, 5, info.max, info.max // 3})
    amounts = [0, 1, w - 1, w, w + 1, 2 * w + 3, info.max]
    if info.min:
        amounts += [-1, -w, info.min]
    a = np.array([v for v in vals for _ in amounts], dtype=object)
    s = np.array([k for _ in vals for k in amounts], dtype=object)
    return a.astype(dt), s.astype(dt)


def _divs(a: Any, b: Any) -> tuple:
    return (lax.div(a, b), lax.rem(a, b))


def _div_inputs(dt: Any) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dt)
    vals = sorted({info.min, info.min + 1, -7 if info.min else 7, -1 if info.min else 2, 0, 1, 7,
                   info.max})
    divs = [0, 1, 2, 3, info.max] + ([-1, -3, info.min] if info.min else [])
    a = np.array([v for v in vals for _ in divs], dtype=object)
    b = np.array([d for _ in vals for d in divs], dtype=object)
    return a.astype(dt), b.astype(dt)


_ROUND_VALS = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 0.3, -0.3,
               3.7, -3.7, 1e10, -1e10, np.inf, -np.inf, NAN, NNAN]


def _rounds(x: Any) -> tuple:
    return (lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
            lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), lax.sign(x), lax.floor(x),
            lax.ceil(x), lax.abs(x), lax.neg(x))


def _minmax(a: Any, b: Any) -> tuple:
    return (lax.max(a, b), lax.min(a, b))


def _converts(x: Any) -> tuple:
    outs = []
    for dt in (ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        y = lax.convert_element_type(x, dt)
        outs += [y, lax.convert_element_type(y, np.float32)]
    return tuple(outs)


_CONVERT_VALS = [0.0, -0.0, 1.0, -1.0, 1.00390625, 1.0078125, 3.14159, -448.0, 448.0, 464.0,
                 57344.0, 61440.0, 65504.0, 65520.0, 1e5, -1e5, 3.4e38, np.inf, -np.inf, NAN,
                 NNAN, 0.0625, 0.015625]


def _pred(a: Any, b: Any) -> tuple:
    return (lax.bitwise_and(a, b), lax.bitwise_or(a, b), lax.bitwise_xor(a, b),
            lax.bitwise_not(a), lax.max(a, b), lax.min(a, b))


def cases() -> dict[str, tuple[str, Callable[..., Any], list[np.ndarray]]]:
    """name -> (description, function, inputs)."""
    out: dict[str, tuple[str, Callable[..., Any], list[np.ndarray]]] = {}
    for name, dt in (("f32", np.float32), ("bf16", ml_dtypes.bfloat16), ("f16", np.float16)):
        out[f"total_order_{name}"] = (f"compare type=TOTALORDER LT/LE/EQ and swapped LT, {name}",
                                      _total, list(_pairs(SPECIAL, dt)))
        out[f"compare_{name}"] = (f"compare in the float order, every direction, {name}",
                                  _float_cmp, list(_pairs(SPECIAL, dt)))
        out[f"round_sign_{name}"] = (f"round afz / even, sign, floor, ceil, abs, negate, {name}",
                                     _rounds, [np.array(_ROUND_VALS, np.float32).astype(dt)])
        out[f"minmax_{name}"] = (f"maximum / minimum with NaN and ±0, {name}", _minmax,
                                 list(_pairs(SPECIAL, dt)))
    for dt in (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64):
        n = np.dtype(dt).name
        out[f"shifts_{n}"] = (f"shift-left / -right-arithmetic / -right-logical, {n}", _shifts,
                              list(_shift_inputs(dt)))
        out[f"intdiv_{n}"] = (f"integer divide / remainder by 0, MIN / -1, {n}", _divs,
                              list(_div_inputs(dt)))
    out["converts_f32"] = ("f32 -> bf16, f16, f8e4m3fn, f8e5m2 and back", _converts,
                           [np.array(_CONVERT_VALS, np.float32)])
    p = np.array([False, False, True, True])
    out["pred_logic"] = ("and, or, xor, not, maximum, minimum on pred", _pred,
                         [p, np.array([False, True, False, True])])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    d = os.path.join(args.out, f"jax-{jax.__version__}")
    os.makedirs(d, exist_ok=True)
    manifest: dict[str, Any] = {
        "versions": {"jax": jax.__version__, "numpy": np.__version__,
                     "ml_dtypes": ml_dtypes.__version__},
        "flags": {"XLA_FLAGS": os.environ["XLA_FLAGS"], "jax_enable_x64": True},
        "subnormals": "none in the inputs: XLA:CPU flushes them (decision OP8)",
        "cases": {},
    }
    for name, (what, fn, ins) in cases().items():
        jf = jax.jit(fn)
        text = jf.lower(*ins).as_text(dialect="hlo")
        res = jf(*ins)
        outs = [np.asarray(r) for r in (res if isinstance(res, tuple) else (res,))]
        with open(os.path.join(d, f"{name}.hlo.txt.tmp"), "w") as f:
            f.write(text)
        os.replace(os.path.join(d, f"{name}.hlo.txt.tmp"), os.path.join(d, f"{name}.hlo.txt"))
        arrays = {f"in{i}": a for i, a in enumerate(ins)} | {f"out{i}": a for i, a in enumerate(outs)}
        save_npz(os.path.join(d, f"{name}.npz"), arrays)
        manifest["cases"][name] = {"what": what, "inputs": [describe(a) for a in ins],
                                   "outputs": [describe(a) for a in outs]}
    tmp = os.path.join(d, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(d, "manifest.json"))
    print(f"wrote {len(manifest['cases'])} cases to {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
