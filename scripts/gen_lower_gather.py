#!/usr/bin/env python3
"""Generate the gather / scatter models of the lowering (embedding lookups and their gradient) with
JAX, with XLA:CPU's outputs, into the directory of ``scripts/gen_lower_models.py``::

    /work/jaxvenv/bin/python scripts/gen_lower_gather.py --out tests/data/models

writes ``<out>/jax-<version>/<name>.hlo.txt``, ``.debug.hlo.txt`` and ``.npz`` per model (the files
and npz convention of gen_lower_models.py, whose ``run_model`` this script calls) and adds the
models' entries to that directory's ``manifest.json``, keeping every other entry. JAX is a tool
for making data here, never a dependency of pyprecision or its tests.

The models (all f32, indices s32 unless said):

* ``embed_mlp`` — ``jnp.take(table, ids, axis=0)`` (JAX's default ``fill`` mode: a gather, a
  range mask and a select) → layer norm → dense 8→16 + tanh → dense 16→4; ids in range, negative ones wrapped;
* ``take_along`` — ``logits = x @ W``, then ``logits[rows]`` (NumPy-style indexing: XLA clamps an
  out-of-range row) and ``jnp.take_along_axis(logits, idx, axis=1, mode="clip")`` (a batched
  gather, ``operand_batching_dims``), with indices past both ends that XLA clamps, and
  ``jnp.take(logits, cols, axis=1, mode="clip")`` with u32 ``cols`` (a gather of columns; JAX
  converts the u32 indices to s32 first);
* ``embed_grad`` — ``jax.grad`` of ``sum(tanh(take(table, ids) @ W) ** 2)`` with respect to
  ``table`` and ``W``: the lookup's gradient is a ``scatter`` with an add combiner, ids repeated so
  that updates collide.
"""
from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_lower_models as G  # noqa: E402  (sets XLA_FLAGS before JAX starts)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from lower_models import F32, MatMul, Model, model  # noqa: E402

MODELS: list[Model] = []


def _model(make_args: Any, desc: str, **kw: Any) -> Any:
    return model(make_args, desc, into=MODELS, **kw)


def _layer_norm(x: Any) -> Any:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5)


def _embed_args(r: np.random.RandomState) -> list[np.ndarray]:
    table = r.standard_normal((16, 8)).astype(np.float32)
    ids = np.array([[0, 3, 15, -1, 7], [3, 3, -16, 9, 2]], np.int32)  # -1 → 15, -16 → 0
    w1 = (r.standard_normal((8, 16)) / np.sqrt(8)).astype(np.float32)
    b1 = (0.1 * r.standard_normal(16)).astype(np.float32)
    w2 = (r.standard_normal((16, 4)) / np.sqrt(16)).astype(np.float32)
    b2 = (0.1 * r.standard_normal(4)).astype(np.float32)
    return [table, ids, w1, b1, w2, b2]


@_model(_embed_args, "jnp.take(table[16,8], ids[2,5], axis=0) (fill mode), layer norm, "
        "dense 8->16 + tanh, dense 16->4")
def embed_mlp(mm: MatMul) -> Any:
    def f(table: Any, ids: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        h = _layer_norm(jnp.take(table, ids, axis=0))
        h = jnp.tanh(mm.einsum("bsd,de->bse", h, w1) + b1)
        return mm.einsum("bse,ef->bsf", h, w2) + b2
    return f


def _take_along_args(r: np.random.RandomState) -> list[np.ndarray]:
    x = r.standard_normal((4, 6)).astype(np.float32)
    w = (r.standard_normal((6, 10)) / np.sqrt(6)).astype(np.float32)
    rows = np.array([3, 0, 7, -2, -9, 1], np.int32)  # 7 → 3 (clamped); -2 → 2; -9 → -5 → 0
    idx = np.array([[0, 9], [12, -1], [5, -20], [3, 10]], np.int32)  # clip: 12 → 9, -20 → 0
    cols = np.array([4, 0, 13, 2], np.uint32)  # clip: 13 → 9
    return [x, w, rows, idx, cols]


@_model(_take_along_args, "logits = x[4,6] @ W[6,10]; logits[rows] (clamped rows), "
        "take_along_axis(logits, idx, axis=1, mode='clip') (a batched gather), "
        "take(logits, cols_u32, axis=1, mode='clip')")
def take_along(mm: MatMul) -> Any:
    def f(x: Any, w: Any, rows: Any, idx: Any, cols: Any) -> Any:
        logits = mm.einsum("bk,kn->bn", x, w)
        return (logits[rows], jnp.take_along_axis(logits, idx, axis=1, mode="clip"),
                jnp.take(logits, cols, axis=1, mode="clip"))
    return f


def _grad_args(r: np.random.RandomState) -> list[np.ndarray]:
    table = r.standard_normal((10, 6)).astype(np.float32)
    ids = np.array([[1, 4, 4, 9], [0, 4, 1, -1]], np.int32)  # 4 three times, 1 twice, -1 → 9
    w = (r.standard_normal((6, 5)) / np.sqrt(6)).astype(np.float32)
    return [table, ids, w]


@_model(_grad_args, "jax.grad of sum(tanh(take(table[10,6], ids[2,4]) @ W[6,5])^2) w.r.t. table "
        "(a scatter-add, colliding ids) and W", ref_bf16mm=False)
def embed_grad(mm: MatMul) -> Any:
    def loss(table: Any, ids: Any, w: Any) -> Any:
        e = jnp.take(table, ids, axis=0)
        return jnp.sum(jnp.tanh(mm.einsum("bsd,de->bse", e, w)) ** 2)

    def f(table: Any, ids: Any, w: Any) -> Any:
        return jax.grad(loss, argnums=(0, 2))(table, ids, w)
    return f


def main(argv: list[str] | None = None) -> int:
    """Generate the models (``--only``: a subset) and merge them into the manifest."""
    return G.add_models(MODELS, "scripts/gen_lower_gather.py", __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    assert F32 is jnp.float32
    sys.exit(main())
