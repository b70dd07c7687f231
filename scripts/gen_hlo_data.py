#!/usr/bin/env python3
"""Generate real XLA HLO test modules (and the values XLA computes for them) with JAX.

JAX is a tool for *making* data here, never a test or runtime dependency of pyprecision. Run this
script under a private virtualenv that has jax/jaxlib installed, once per JAX version::

    /work/venvs/jax-old/bin/python scripts/gen_hlo_data.py --out tests/data/hlo
    /work/venvs/jax-new/bin/python scripts/gen_hlo_data.py --out tests/data/hlo

Each run writes ``<out>/jax-<version>/`` with, per module ``<name>``:

* ``<name>.hlo.txt`` — the unoptimized HLO text, ``jax.jit(f).lower(*args).as_text(dialect="hlo")``;
* ``<name>.npz`` — inputs ``in0..`` and the outputs XLA:CPU computed ``out0..`` (a tuple result is
  flattened in order); see "npz convention" below;
* for a few modules, ``<name>.before_optimizations.txt`` / ``<name>.after_optimizations.txt``
  (XLA's own ``--xla_dump_to`` files) and ``<name>.compiled.hlo.txt``
  (``lowered.compile().as_text()``);

and a ``manifest.json`` naming the JAX/jaxlib/numpy/ml_dtypes versions and, per module, its files,
the input/output element types and shapes, a description and which files to expect.

npz convention: every array is stored under ``in<i>`` / ``out<i>``. Types numpy cannot store
portably (bfloat16, the float8 family, int4/uint4) are stored as their raw storage: bfloat16 as
``uint16`` bits, float8 as ``uint8`` bits, int4/uint4 as ``int8``/``uint8`` values. The key
``__dtypes__`` holds a JSON object mapping each key to its logical ml_dtypes/numpy dtype name
(``"bfloat16"``, ``"float8_e4m3fn"``, ``"int4"``, ``"float32"``...); the manifest repeats it together
with XLA's element-type name (``bf16``, ``f8e4m3fn``, ``s4``...). To load:
``np.load(p)["in0"].view(ml_dtypes.bfloat16)`` for a ``bfloat16`` entry, and likewise.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

# Modules that also get XLA's --xla_dump_to files and the compiled (optimized) text.
DUMPED = ("dot_s8_s32", "dot_s32_big", "bf16_mix", "bnt_bf16", "while_loop", "reduce_f32",
          "fp8_mix", "int4_convert", "int4_param", "sharded_matmul", "psum_shard_map")

_DUMP_DIR = tempfile.mkdtemp(prefix="gen_hlo_dump_")
# No excess precision: by default XLA:CPU removes the f32->bf16->f32 convert pairs it inserts
# around every bf16/fp8 op, so chains of low-precision ops run in f32 without rounding in between.
# Turned off, XLA rounds every HLO result to its element type, as the HLO text says.
NUMERIC_FLAGS = "--xla_allow_excess_precision=false"
# Four host "devices", so that sharded modules and collectives (replica_groups) can be lowered.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {NUMERIC_FLAGS}"
                           " --xla_force_host_platform_device_count=4"
                           f" --xla_dump_to={_DUMP_DIR}"
                           " --xla_dump_hlo_as_text"
                           f" --xla_dump_hlo_module_re=^jit_({'|'.join(DUMPED)})$").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import jaxlib
import ml_dtypes
import numpy as np
from jax import lax

try:  # JAX >= 0.4.36
    from jax.extend.core import Primitive
except ImportError:  # pragma: no cover - older JAX
    from jax.core import Primitive  # type: ignore[no-redef]
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import hlo as hlo_dialect
from jax.interpreters import mlir

# --------------------------------------------------------------------------------------------
# dtype bookkeeping
# --------------------------------------------------------------------------------------------

XLA_NAME = {
    "bool": "pred", "int4": "s4", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
    "uint4": "u4", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "float8_e5m2": "f8e5m2", "float8_e4m3fn": "f8e4m3fn", "float8_e4m3": "f8e4m3",
    "float8_e4m3b11fnuz": "f8e4m3b11fnuz", "float8_e5m2fnuz": "f8e5m2fnuz",
    "float8_e4m3fnuz": "f8e4m3fnuz", "float8_e3m4": "f8e3m4",
}


def _storage(a: np.ndarray) -> np.ndarray:
    """Return the npz-storable form of ``a`` (raw bits for ml_dtypes floats, ints for int4)."""
    name = a.dtype.name
    if name in ("int4",):
        return a.astype(np.int8)
    if name in ("uint4",):
        return a.astype(np.uint8)
    if name == "bfloat16":
        return a.view(np.uint16)
    if name.startswith("float8"):
        return a.view(np.uint8)
    return a


def _describe(a: np.ndarray) -> dict[str, Any]:
    return {"dtype": a.dtype.name, "xla": XLA_NAME.get(a.dtype.name, a.dtype.name),
            "shape": list(a.shape), "storage": _storage(a).dtype.name}


# --------------------------------------------------------------------------------------------
# batch-norm custom lowerings: JAX has no op that lowers to (stable)hlo batch_norm_*.
# --------------------------------------------------------------------------------------------

def _shaped(shape: tuple[int, ...], dtype: Any) -> Any:
    return jax.core.ShapedArray(shape, dtype)


bnt_p = Primitive("batch_norm_training")
bnt_p.multiple_results = True
bni_p = Primitive("batch_norm_inference")
bng_p = Primitive("batch_norm_grad")
bng_p.multiple_results = True


@bnt_p.def_abstract_eval
def _bnt_abstract(x: Any, scale: Any, offset: Any, *, epsilon: float, feature_index: int) -> Any:
    return [_shaped(x.shape, x.dtype), _shaped(scale.shape, x.dtype),
            _shaped(scale.shape, x.dtype)]


@bni_p.def_abstract_eval
def _bni_abstract(x: Any, scale: Any, offset: Any, mean: Any, var: Any, *, epsilon: float,
                  feature_index: int) -> Any:
    return _shaped(x.shape, x.dtype)


@bng_p.def_abstract_eval
def _bng_abstract(x: Any, scale: Any, mean: Any, var: Any, grad: Any, *, epsilon: float,
                  feature_index: int) -> Any:
    return [_shaped(x.shape, x.dtype), _shaped(scale.shape, x.dtype),
            _shaped(scale.shape, x.dtype)]


def _attrs(epsilon: float, feature_index: int) -> tuple[Any, Any]:
    return (ir.FloatAttr.get(ir.F32Type.get(), epsilon),
            ir.IntegerAttr.get(ir.IntegerType.get_signless(64), feature_index))


def _bnt_lower(ctx: Any, x: Any, scale: Any, offset: Any, *, epsilon: float,
               feature_index: int) -> Any:
    return hlo_dialect.BatchNormTrainingOp(x, scale, offset, *_attrs(epsilon, feature_index)).results


def _bni_lower(ctx: Any, x: Any, scale: Any, offset: Any, mean: Any, var: Any, *, epsilon: float,
               feature_index: int) -> Any:
    op = hlo_dialect.BatchNormInferenceOp(x, scale, offset, mean, var,
                                          *_attrs(epsilon, feature_index))
    return op.results


def _bng_lower(ctx: Any, x: Any, scale: Any, mean: Any, var: Any, grad: Any, *, epsilon: float,
               feature_index: int) -> Any:
    op = hlo_dialect.BatchNormGradOp(x, scale, mean, var, grad, *_attrs(epsilon, feature_index))
    return op.results


mlir.register_lowering(bnt_p, _bnt_lower)
mlir.register_lowering(bng_p, _bng_lower)
mlir.register_lowering(bni_p, _bni_lower)


# --------------------------------------------------------------------------------------------
# the cases
# --------------------------------------------------------------------------------------------

class Case:
    """One module: a function, its inputs, and whether it needs 64-bit types enabled."""

    def __init__(self, fn: Callable[..., Any], make_args: Callable[[np.random.RandomState], list],
                 desc: str, x64: bool = False, evaluable: bool = True,
                 jit_kwargs: Callable[[], dict[str, Any]] | None = None):
        self.fn, self.make_args, self.desc, self.x64 = fn, make_args, desc, x64
        self.evaluable = evaluable  # False: collectives etc. (text for the parser only)
        self.jit_kwargs = jit_kwargs or dict
        self.name = fn.__name__


CASES: list[Case] = []


def case(make_args: Callable[[np.random.RandomState], list], desc: str, x64: bool = False,
         evaluable: bool = True, jit_kwargs: Callable[[], dict[str, Any]] | None = None
         ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as a module named ``jit_<fn.__name__>``."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        CASES.append(Case(fn, make_args, desc, x64, evaluable, jit_kwargs))
        return fn
    return deco


def ints(r: np.random.RandomState, lo: int, hi: int, shape: tuple[int, ...],
         dtype: Any) -> np.ndarray:
    return r.randint(lo, hi + 1, size=shape).astype(dtype)


def floats(r: np.random.RandomState, shape: tuple[int, ...], dtype: Any,
           scale: float = 1.0) -> np.ndarray:
    return (r.randn(*shape) * scale).astype(np.float32).astype(dtype)


DN = (((1,), (0,)), ((), ()))  # plain matmul dimension numbers


@case(lambda r: [ints(r, -128, 127, (4, 8), np.int8), ints(r, -128, 127, (8, 3), np.int8)],
      "s8 x s8 dot with preferred s32 result (int8 matmul)")
def dot_s8_s32(a, b):
    return lax.dot_general(a, b, DN, preferred_element_type=jnp.int32)


@case(lambda r: [ints(r, -128, 127, (4, 8), np.int8), ints(r, -128, 127, (8, 3), np.int8)],
      "s8 x s8 -> s8 dot: XLA integer wraparound in the result")
def dot_s8_s8(a, b):
    return jnp.dot(a, b)


@case(lambda r: [ints(r, -1000, 1000, (3, 5), np.int32), ints(r, -1000, 1000, (5, 4), np.int32)],
      "s32 x s32 dot, every value and partial sum within 2^24")
def dot_s32(a, b):
    return jnp.dot(a, b)


@case(lambda r: [ints(r, -4000, 4000, (4, 16), np.int32),
                 ints(r, -4000, 4000, (16, 4), np.int32)],
      "s32 dot whose sums exceed 2^24 (the F32 route loses low bits)")
def dot_s32_big(a, b):
    return jnp.dot(a, b)


@case(lambda r: [ints(r, -128, 127, (3, 6), np.int8), floats(r, (6, 2), np.float32)],
      "mixed s8 x f32 dot (JAX converts the s8 operand to f32)")
def dot_mixed_s8_f32(a, b):
    return lax.dot_general(a, b, DN, preferred_element_type=jnp.float32)


@case(lambda r: [ints(r, -50, 50, (3, 6), np.int8), floats(r, (6, 2), np.float32, 20.0)],
      "mixed s8 x f32 dot with s32 result (f32 operand converted to s32 first)")
def dot_mixed_s8_f32_s32(a, b):
    return lax.dot_general(a, b, DN, preferred_element_type=jnp.int32)


@case(lambda r: [ints(r, -128, 127, (2, 3, 5), np.int8), ints(r, -128, 127, (2, 5, 4), np.int8)],
      "batched s8 dot_general (batch dim 0) with s32 result")
def dot_general_batched_s8(a, b):
    return lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))), preferred_element_type=jnp.int32)


@case(lambda r: [floats(r, (5, 2, 3), np.float32), floats(r, (2, 4, 5), np.float32)],
      "f32 dot_general with batch dims and a non-minor contracting dim: 'kbm,bnk->bmn'")
def dot_general_batched_f32(a, b):
    return lax.dot_general(a, b, (((0,), (2,)), ((1,), (0,))))


@case(lambda r: [ints(r, -100, 100, (2, 3, 4), np.int32), ints(r, -100, 100, (3, 4, 2), np.int32)],
      "s32 dot_general contracting two dims (1,2)x(0,1)")
def dot_general_two_contract(a, b):
    return lax.dot_general(a, b, (((1, 2), (0, 1)), ((), ())))


@case(lambda r: [floats(r, (4, 8), np.float32), floats(r, (8, 3), np.float32)],
      "f32 dot")
def dot_f32(a, b):
    return jnp.dot(a, b)


@case(lambda r: [floats(r, (4, 8), np.float32), floats(r, (8, 3), np.float32)],
      "f32 dot with precision=HIGHEST (operand_precision={highest,highest})")
def dot_f32_highest(a, b):
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


@case(lambda r: [floats(r, (4, 6), ml_dtypes.float8_e4m3fn), floats(r, (6, 3), ml_dtypes.float8_e4m3fn)],
      "f8e4m3fn x f8e4m3fn dot straight on fp8 operands, f32 preferred result")
def fp8_dot_direct(a, b):
    return lax.dot_general(a, b, DN, preferred_element_type=jnp.float32)


@case(lambda r: [floats(r, (4, 8), ml_dtypes.bfloat16), floats(r, (8, 3), ml_dtypes.bfloat16)],
      "bf16 x bf16 -> bf16 dot, and the same with preferred f32")
def dot_bf16(a, b):
    return (jnp.dot(a, b),
            lax.dot_general(a, b, DN, preferred_element_type=jnp.float32))


@case(lambda r: [floats(r, (4, 6), ml_dtypes.bfloat16), floats(r, (4, 6), np.float16),
                 floats(r, (4, 6), np.float32)],
      "bf16/f16/f32 mixes with bf16 and f16 constants, converts between them")
def bf16_mix(a, h, f):
    ca = jnp.asarray(np.array([1.5, -2.25, 0.1, 3.0, 1e-3, 300.0], ml_dtypes.bfloat16))
    ch = jnp.asarray(np.array([0.3, 2.0, -1.0, 65000.0, 1e-5, 7.0], np.float16))
    x = a * ca + jnp.bfloat16(0.3)
    y = h * ch - jnp.float16(0.1)
    z = x.astype(jnp.float32) + y.astype(jnp.float32) * f
    return x, y, z.astype(jnp.bfloat16), (h.astype(jnp.bfloat16) * a)


@case(lambda r: [floats(r, (3, 4), np.float64), floats(r, (3, 4), np.float32)],
      "f64 arithmetic, an f64 constant, f32<->f64 converts", x64=True)
def f64_mix(d, f):
    c = jnp.asarray(np.array([0.1, 1.0 / 3.0, 2.0 ** -30, 1e300], np.float64))
    y = d * c + f.astype(jnp.float64)
    return y, (y.astype(jnp.float32) * f), jnp.sum(d * d, axis=1)


@case(lambda r: [floats(r, (4, 5), np.float32, 4.0), floats(r, (4, 5), np.float32, 40.0)],
      "fp8 mixes: f32 -> f8e4m3fn/f8e5m2 converts, fp8 multiply/add, fp8 constants")
def fp8_mix(f, g):
    a = f.astype(jnp.float8_e4m3fn)
    b = g.astype(jnp.float8_e5m2)
    x = a * jnp.float8_e4m3fn(0.5) + jnp.float8_e4m3fn(1.25)
    y = b + jnp.float8_e5m2(3.0)
    z = a.astype(jnp.bfloat16) * b.astype(jnp.bfloat16)
    return x, y, z, x.astype(jnp.float32) + y.astype(jnp.float32)


@case(lambda r: [floats(r, (4, 6), ml_dtypes.float8_e4m3fn), floats(r, (6, 3), ml_dtypes.float8_e5m2)],
      "fp8 inputs: f8e4m3fn x f8e5m2 dot with f32 preferred result")
def fp8_dot(a, b):
    return lax.dot_general(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), DN,
                           preferred_element_type=jnp.float32)


if hasattr(jnp, "float8_e4m3"):  # IEEE-style f8e4m3 (XLA F8E4M3=28): newer JAX only
    @case(lambda r: [floats(r, (4, 5), np.float32, 8.0)],
          "f8e4m3 (IEEE-like, has inf) converts, arithmetic and a constant (newer JAX only)")
    def fp8_e4m3(f):
        a = f.astype(jnp.float8_e4m3)
        return a * jnp.float8_e4m3(1.75), (a.astype(jnp.float32) * 3.0).astype(jnp.float8_e4m3)


@case(lambda r: [floats(r, (3, 4), np.float32), ints(r, 0, 9, (3, 4), np.int32)],
      "tuple results of mixed types, including a nested call (nested jit)")
def tuples(f, i):
    @jax.jit
    def inner(x, y):
        return x * 2.0, y + 1
    p, q = inner(f, i)
    return p, q, (p + q.astype(jnp.float32), i * i)


@case(lambda r: [floats(r, (4,), np.float32), ints(r, 1, 5, (), np.int32)],
      "while loop (fori_loop) with a tuple carry; the trip count is an input")
def while_loop(x, n):
    def body(i, c):
        v, s = c
        return v * 1.5 - 0.25, s + i
    return lax.fori_loop(0, n, body, (x, jnp.int32(0)))


@case(lambda r: [floats(r, (4, 3), ml_dtypes.bfloat16)],
      "while_loop with a bf16 carry and a data-dependent condition")
def while_bf16(x):
    def cond(c):
        return jnp.max(jnp.abs(c[0])) < jnp.bfloat16(100.0)
    def body(c):
        return c[0] * jnp.bfloat16(1.7) + jnp.bfloat16(0.1), c[1] + 1
    return lax.while_loop(cond, body, (x, jnp.int32(0)))


@case(lambda r: [floats(r, (3,), np.float32), ints(r, 0, 1, (), np.int32),
                 ints(r, -1, 3, (), np.int32)],
      "conditionals: lax.cond (pred form) and lax.switch (index form, clamped index)")
def conditionals(x, p, k):
    a = lax.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    b = lax.switch(k, [lambda v: v + 1.0, lambda v: v * v, lambda v: -v], x)
    return a, b


@case(lambda r: [floats(r, (4, 6), np.float32)],
      "f32 reductions: sum/max/min over axes, mean, argmax-free")
def reduce_f32(x):
    return jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(x), jnp.mean(x, axis=(0, 1))


@case(lambda r: [floats(r, (8, 4), ml_dtypes.bfloat16), ints(r, -1000, 1000, (8, 4), np.int32)],
      "bf16 reduction (JAX sums in f32) and s32 sum/max reductions, a multi-output reduce")
def reduce_mixed(x, i):
    m = lax.reduce((i, x.astype(jnp.float32)), (jnp.int32(-2**31), jnp.float32(-np.inf)),
                   lambda a, b: (jnp.maximum(a[0], b[0]), jnp.maximum(a[1], b[1])), (0,))
    return jnp.sum(x, axis=0), jnp.sum(i, axis=1), jnp.max(i), m


@case(lambda r: [floats(r, (3, 4), np.float32) + np.float32(3.0), floats(r, (3, 4), np.float32)],
      "elementwise math: exp log sqrt rsqrt tanh power divide max min neg abs, compare/select")
def elementwise_f32(x, y):
    ax = jnp.abs(x) + 0.5
    return (jnp.exp(y), jnp.log(ax), jnp.sqrt(ax), lax.rsqrt(ax), jnp.tanh(y),
            lax.pow(ax, y), x / (jnp.abs(y) + 1.0), jnp.maximum(x, y), jnp.minimum(x, y), -x,
            jnp.where(x > y, x, y * 2.0), (x == y) | (x < 0.0))


@case(lambda r: [floats(r, (3, 4), ml_dtypes.bfloat16), floats(r, (3, 4), np.float16)],
      "elementwise math in bf16 and f16")
def elementwise_lowp(x, h):
    return jnp.exp(x), x * x - x / jnp.bfloat16(3.0), jnp.sqrt(jnp.abs(h)), h * h + h


@case(lambda r: [ints(r, -2**31, 2**31 - 1, (6,), np.int32), ints(r, -2**31, 2**31 - 1, (6,), np.int32),
                 ints(r, -128, 127, (6,), np.int8)],
      "integer arithmetic with wraparound: add/sub/mul s32 and s8, div/rem, shifts, compare")
def int_arith(a, b, c):
    return (a + b, a - b, a * b, c * c + c, a // jnp.where(b == 0, 1, b), jnp.maximum(a, b),
            jnp.where(a < b, a, -b), c.astype(jnp.uint8) + jnp.uint8(200))


@case(lambda r: [np.array([0.5, -1.7, 3e9, -3e9, np.nan, np.inf, -np.inf, 2.5, -0.0, 127.9,
                           -128.9, 1e-30], np.float32)],
      "convert f32 -> s32/s8/u8/u32 (XLA truncation, saturation, NaN -> 0) and s32 -> f32/bf16")
def convert_f2i(x):
    ce = lax.convert_element_type
    i = ce(x, jnp.int32)
    return i, ce(x, jnp.int8), ce(x, jnp.uint8), ce(x, jnp.uint32), ce(i, jnp.bfloat16), \
        ce(i + 16777217, jnp.float32)


@case(lambda r: [ints(r, -8, 7, (8,), np.int8)],
      "s4 round trip: s8 -> s4 -> s8 and arithmetic after it")
def int4_convert(a):
    return lax.convert_element_type(lax.convert_element_type(a, jnp.int4), jnp.int8) * 2


@case(lambda r: [floats(r, (2, 3), np.float32), floats(r, (4, 3), np.float32)],
      "shape ops: broadcast reshape transpose slice concatenate iota, rev-free")
def shape_ops(x, y):
    b = jnp.broadcast_to(x[:, None, :], (2, 4, 3))
    t = jnp.transpose(b, (2, 0, 1))
    s = lax.slice(y, (1, 0), (3, 3), (1, 2))  # a plain slice (y[1:3, ::2] is a gather in 0.4.x)
    c = jnp.concatenate([x, y[:2]], axis=0)
    io = lax.iota(jnp.int32, 5)
    io2 = lax.broadcasted_iota(jnp.float32, (2, 3), 1)
    return t.reshape(3, 8), s, c, io, io2 + x


@case(lambda r: [floats(r, (6,), np.float32), np.asarray(5, np.int32)],
      "scan (while + dynamic-slice/dynamic-update-slice), dynamic_slice with a start that XLA "
      "clamps, pad (edge and interior, negative), reverse")
def scan_ops(x, i):
    def step(c, v):
        return c + v * 2.0, c
    c, ys = lax.scan(step, jnp.float32(0), x)
    ds = lax.dynamic_slice(x, (i,), (3,))
    dus = lax.dynamic_update_slice(x, jnp.ones(2, jnp.float32), (i,))
    return c, ys, ds, dus, jnp.pad(x, (1, 2)), lax.pad(x, 0.0, [(1, -1, 1)]), jnp.flip(x)


@case(lambda r: [floats(r, (4, 5), np.float32), np.array([3, 0, 9, -1], np.int32),
                 ints(r, 0, 4, (4, 2), np.int32)],
      "gathers: y[1:3, ::2] (a gather in 0.4.x), integer-array indexing with out-of-range "
      "indices (clamped), take_along_axis (batching dims in newer XLA)")
def gather_ops(x, idx, idx2):
    return (x[1:3, ::2], x[:, idx], x[idx % 4], jnp.take_along_axis(x, idx2, axis=1),
            x[idx2[:, 0], idx2[:, 1]])


@case(lambda r: [floats(r, (40,), np.float32)],
      "a 40-element constant (the older JAX prints it elided as {...})")
def const_large(a):
    return a + jnp.asarray(np.arange(40, dtype=np.float32) * np.float32(0.1))


@case(lambda r: [ints(r, -8, 7, (16,), ml_dtypes.int4)],
      "an s4 parameter (optimized dumps show the 4-bit layout {0:E(4)})")
def int4_param(a):
    return lax.convert_element_type(a, jnp.int8) * 3


def _mesh() -> Any:
    from jax.sharding import Mesh
    return Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))


def _matmul_shardings() -> dict[str, Any]:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as PS
    m = _mesh()
    return {"in_shardings": (NamedSharding(m, PS("x", "y")), NamedSharding(m, PS("y", None)))}


@case(lambda r: [floats(r, (8, 4), np.float32), floats(r, (4, 8), np.float32)],
      "sharded f32 matmul on a 2x2 mesh of host devices: sharding={devices=[2,2]<=[4]}, "
      "a Sharding custom-call, an escaped named scope in metadata",
      jit_kwargs=_matmul_shardings)
def sharded_matmul(a, b):
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as PS
    with jax.named_scope('scope "quoted"\\back'):
        c = a @ b
    return lax.with_sharding_constraint(c, NamedSharding(_mesh(), PS("x", None)))


@case(lambda r: [floats(r, (8, 4), np.float32)],
      "shard_map with psum: all-reduce with replica_groups, custom-calls (parser only)",
      evaluable=False)
def psum_shard_map(x):
    try:
        from jax import shard_map
    except ImportError:  # older JAX
        from jax.experimental.shard_map import shard_map
    from jax.sharding import PartitionSpec as PS
    return shard_map(lambda v: lax.psum(v, "x"), mesh=_mesh(), in_specs=PS("x", "y"),
                     out_specs=PS(None, "y"))(x)


def _bn_args(dtype: Any, shape: tuple[int, ...] = (4, 3, 2),
             fi: int = 1) -> Callable[[np.random.RandomState], list]:
    def make(r: np.random.RandomState) -> list:
        n = shape[fi]
        return [(floats(r, shape, np.float32, 2.0) + 1.0).astype(dtype),
                (np.abs(floats(r, (n,), np.float32)) + 0.5).astype(dtype),
                floats(r, (n,), dtype)]
    return make


@case(_bn_args(ml_dtypes.bfloat16),
      "bf16 batch-norm-training (custom lowering to stablehlo.batch_norm_training)")
def bnt_bf16(x, s, o):
    return tuple(bnt_p.bind(x, s, o, epsilon=1e-3, feature_index=1))


@case(_bn_args(np.float32, (4, 2, 3), 2), "f32 batch-norm-training, feature_index=2")
def bnt_f32(x, s, o):
    return tuple(bnt_p.bind(x, s, o, epsilon=1e-5, feature_index=2))


@case(lambda r: _bn_args(ml_dtypes.bfloat16)(r) + [floats(r, (3,), ml_dtypes.bfloat16),
                                                      (np.abs(floats(r, (3,), np.float32)) + 0.5
                                                       ).astype(ml_dtypes.bfloat16)],
      "bf16 batch-norm-inference (custom lowering)")
def bni_bf16(x, s, o, m, v):
    return bni_p.bind(x, s, o, m, v, epsilon=1e-3, feature_index=1)


@case(lambda r: _bn_args(ml_dtypes.bfloat16)(r)[:2]
      + [floats(r, (3,), ml_dtypes.bfloat16),
         (np.abs(floats(r, (3,), np.float32)) + 0.5).astype(ml_dtypes.bfloat16),
         floats(r, (4, 3, 2), ml_dtypes.bfloat16)],
      "bf16 batch-norm-grad (custom lowering; batch-norm-training-upcast must leave it alone)")
def bng_bf16(x, s, m, v, g):
    return tuple(bng_p.bind(x, s, m, v, g, epsilon=1e-3, feature_index=1))


@case(lambda r: _bn_args(np.float32, (4, 2, 3), 2)(r)[:2]
      + [floats(r, (3,), np.float32), np.abs(floats(r, (3,), np.float32)) + 0.5,
         floats(r, (4, 2, 3), np.float32)],
      "f32 batch-norm-grad, feature_index=2")
def bng_f32(x, s, m, v, g):
    return tuple(bng_p.bind(x, s, m, v, g, epsilon=1e-5, feature_index=2))


# --------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------

def _flatten(out: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out)]


def _n_params(text: str) -> int:
    """Number of ENTRY parameters, read from entry_computation_layout={(...)->...}."""
    m = re.search(r"entry_computation_layout=\{\((.*?)\)->", text)
    assert m is not None, "no entry_computation_layout"
    body = m.group(1)
    return 0 if not body else len(re.findall(r"[a-z0-9]+\[[0-9,]*\]", body))


def _set_x64(on: bool) -> None:
    jax.config.update("jax_enable_x64", on)


def run_case(c: Case, outdir: str) -> dict[str, Any]:
    """Lower, compile and run one case; write its files; return its manifest entry."""
    r = np.random.RandomState(sum(map(ord, c.name)))  # deterministic per case
    args = [np.asarray(a) for a in c.make_args(r)]
    _set_x64(c.x64)
    try:
        jitted = jax.jit(c.fn, **c.jit_kwargs())
        lowered = jitted.lower(*args)
        text = lowered.as_text(dialect="hlo")
        outs = _flatten(jitted(*args))
        compiled_text = lowered.compile().as_text() if c.name in DUMPED else None
        debug_text = None
        if c.name in DUMPED:
            try:  # newer JAX: the same text with metadata={...} (op_name, source_file...)
                debug_text = lowered.as_text(dialect="hlo", debug_info=True)
            except TypeError:
                debug_text = None
    finally:
        _set_x64(False)
    assert _n_params(text) == len(args), f"{c.name}: HLO parameters != inputs"
    files = {"hlo": f"{c.name}.hlo.txt", "data": f"{c.name}.npz"}
    with open(os.path.join(outdir, files["hlo"]), "w") as fh:
        fh.write(text)
    arrays: dict[str, np.ndarray] = {}
    dtypes: dict[str, str] = {}
    for prefix, values in (("in", args), ("out", outs)):
        for i, a in enumerate(values):
            arrays[f"{prefix}{i}"] = _storage(a)
            dtypes[f"{prefix}{i}"] = a.dtype.name
    arrays["__dtypes__"] = np.array(json.dumps(dtypes))
    np.savez_compressed(os.path.join(outdir, files["data"]), **arrays)
    if debug_text is not None:
        files["debug"] = f"{c.name}.debug.hlo.txt"
        with open(os.path.join(outdir, files["debug"]), "w") as fh:
            fh.write(debug_text)
    if compiled_text is not None:
        files["compiled"] = f"{c.name}.compiled.hlo.txt"
        with open(os.path.join(outdir, files["compiled"]), "w") as fh:
            fh.write(compiled_text)
    return {"description": c.desc, "files": files, "x64": c.x64,
            "elided_constants": "{...}" in text, "evaluable": c.evaluable and "{...}" not in text,
            "inputs": [_describe(a) for a in args], "outputs": [_describe(a) for a in outs]}


def collect_dumps(outdir: str, manifest: dict[str, Any]) -> None:
    """Copy XLA's before/after-optimization dumps of the DUMPED modules next to their text."""
    for name in DUMPED:
        if name not in manifest["modules"]:
            continue
        for stage, pattern in (("before_optimizations", "before_optimizations"),
                               ("after_optimizations", "*after_optimizations")):
            hits = sorted(glob.glob(os.path.join(_DUMP_DIR, f"module_*.jit_{name}.{pattern}.txt")))
            if not hits:
                continue
            dst = f"{name}.{stage}.txt"
            shutil.copyfile(hits[-1], os.path.join(outdir, dst))
            manifest["modules"][name]["files"][stage] = dst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/data/hlo", help="parent directory of jax-<version>/")
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    ns = ap.parse_args(argv)
    outdir = os.path.join(ns.out, f"jax-{jax.__version__}")
    os.makedirs(outdir, exist_ok=True)
    manifest: dict[str, Any] = {
        "generator": "scripts/gen_hlo_data.py",
        "versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
                     "numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
                     "python": sys.version.split()[0]},
        "backend": jax.default_backend(),
        "xla_flags": NUMERIC_FLAGS,
        "npz_convention": ("in<i>/out<i>; bfloat16 stored as uint16 bits, float8_* as uint8 bits, "
                           "int4/uint4 as int8/uint8 values; __dtypes__ = JSON {key: dtype name}"),
        "modules": {},
    }
    only = {s for s in ns.only.split(",") if s}
    path = os.path.join(outdir, "manifest.json")
    if only and os.path.exists(path):  # regenerate a subset: keep the other modules' entries
        with open(path) as fh:
            manifest["modules"] = json.load(fh)["modules"]
    for c in CASES:
        if only and c.name not in only:
            continue
        manifest["modules"][c.name] = run_case(c, outdir)
        print(f"{c.name}: {len(manifest['modules'][c.name]['outputs'])} outputs")
    collect_dumps(outdir, manifest)
    with open(path, "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
    shutil.rmtree(_DUMP_DIR, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
