#!/usr/bin/env python3
"""Generate the argmax / top-k models of the lowering (a classifier's predictions and accuracy,
top-k over logits, argmax / argmin / top-k on NaNs, ties and signed zeros) with JAX, with XLA:CPU's
outputs, into the directory of ``scripts/gen_lower_models.py``::

    /work/jaxvenv/bin/python scripts/gen_lower_argmax.py --out tests/data/models

writes ``<out>/jax-<version>/<name>.hlo.txt``, ``.debug.hlo.txt`` and ``.npz`` per model (the files
and npz convention of gen_lower_models.py, whose ``run_model`` this script calls) and adds the
models' entries to that directory's ``manifest.json``, keeping every other entry. JAX is a tool
for making data here, never a dependency of pyprecision or its tests.

The models (f32 unless said, indices s32). The manifest's ``notes.discrete_outputs`` names the
outputs that are decisions (indices, an accuracy): rounding the matmul operands to bf16 need not
change them, so they are compared exactly, never by distance.

* ``mlp_classifier`` — ``logits = relu(x @ W1 + b1) @ W2 + b2`` (batch 8, 16 → 32 → 10), the
  predictions ``jnp.argmax(logits, axis=-1)`` and the accuracy ``mean(preds == labels)``; W2's
  column 7 and b2[7] are copies of column 3 and b2[3], so classes 3 and 7 tie bit for bit and the
  lower index (3) must win wherever they are the largest;
* ``topk_logits`` — ``logits = x @ W`` (4 × 12 → 16) and ``lax.top_k(logits, 5)`` (values and
  indices); W's columns 9 and 12 copy columns 2 and 5, so values tie and the lower index comes
  first;
* ``argmax_cases`` — no matmul: ``jnp.argmax`` / ``jnp.argmin`` along each axis and over the
  whole array (``axis=None``, ``keepdims``) of an f32 input full of NaNs, ±0, ±inf and ties, the
  same on a bf16 input, and ``lax.top_k`` of the f32 input (NaN first, then +inf; ties by lower index).
"""
from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_lower_models as G  # noqa: E402  (sets XLA_FLAGS before JAX starts)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from lower_models import F32, MatMul, Model, model  # noqa: E402

MODELS: list[Model] = []


def _model(make_args: Any, desc: str, **kw: Any) -> Any:
    return model(make_args, desc, into=MODELS, **kw)


def _classifier_args(r: np.random.RandomState) -> list[np.ndarray]:
    x = r.standard_normal((8, 16)).astype(np.float32)
    w1 = (r.standard_normal((16, 32)) / np.sqrt(16)).astype(np.float32)
    b1 = (0.1 * r.standard_normal(32)).astype(np.float32)
    w2 = (r.standard_normal((32, 10)) / np.sqrt(32)).astype(np.float32)
    b2 = (0.1 * r.standard_normal(10)).astype(np.float32)
    b2[3] += 1.5  # class 3 (and its copy 7) win often
    w2[:, 7], b2[7] = w2[:, 3], b2[3]
    labels = np.array([9, 3, 6, 0, 7, 6, 3, 1], np.int32)  # 5 of 8 right; row 4 says 7, its tie
    return [x, labels, w1, b1, w2, b2]


@_model(_classifier_args, "MLP classifier 16->32 (relu) ->10, batch 8: logits, argmax predictions, "
        "accuracy mean(preds == labels); classes 3 and 7 tie bit for bit",
        notes={"discrete_outputs": [1, 2]})
def mlp_classifier(mm: MatMul) -> Any:
    def f(x: Any, labels: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        h = jax.nn.relu(mm.einsum("bi,ih->bh", x, w1) + b1)
        logits = mm.einsum("bh,hc->bc", h, w2) + b2
        preds = jnp.argmax(logits, axis=-1)
        return logits, preds, jnp.mean((preds == labels).astype(F32))
    return f


def _topk_args(r: np.random.RandomState) -> list[np.ndarray]:
    x = r.standard_normal((4, 12)).astype(np.float32)
    w = (r.standard_normal((12, 16)) / np.sqrt(12)).astype(np.float32)
    w[:, 9], w[:, 12] = w[:, 2], w[:, 5]
    return [x, w]


@_model(_topk_args, "logits = x[4,12] @ W[12,16]; lax.top_k(logits, 5); columns 9, 12 of W copy "
        "2, 5 (tied values, lower index first)", notes={"discrete_outputs": [2]})
def topk_logits(mm: MatMul) -> Any:
    def f(x: Any, w: Any) -> Any:
        logits = mm.einsum("bk,kn->bn", x, w)
        values, indices = lax.top_k(logits, 5)
        return logits, values, indices
    return f


def _cases_args(r: np.random.RandomState) -> list[np.ndarray]:
    n, z, inf = np.nan, 0.0, np.inf
    y = np.array([[1, 5, 5, 2, -1, 0],
                  [n, 3, n, 7, -inf, 1],
                  [-z, z, -z, z, -1, -2],
                  [inf, 4, inf, -inf, n, 4],
                  [-inf, -inf, -inf, -inf, -inf, -inf]], np.float32)
    b = r.standard_normal((4, 6)).astype(ml_dtypes.bfloat16)
    b[1, 4] = b[1, 1]  # a tie along axis 1
    b[3, 2] = b[0, 2]  # and along axis 0
    b[2, 5] = np.nan
    return [y, b]


@_model(_cases_args, "jnp.argmax / argmin along each axis and over all elements of an f32 input "
        "with NaN, +-0, +-inf and ties, the same on bf16, and lax.top_k(y, 3)", ref_bf16mm=False)
def argmax_cases(mm: MatMul) -> Any:
    def f(y: Any, b: Any) -> Any:
        tv, ti = lax.top_k(y, 3)
        return (jnp.argmax(y, axis=1), jnp.argmin(y, axis=1), jnp.argmax(y, axis=0),
                jnp.argmin(y, axis=0), jnp.argmax(y, keepdims=True), jnp.argmin(y, keepdims=True),
                jnp.argmax(b, axis=1), jnp.argmin(b, axis=0), tv, ti)
    return f


def main(argv: list[str] | None = None) -> int:
    """Generate the models (``--only``: a subset) and merge them into the manifest."""
    return G.add_models(MODELS, "scripts/gen_lower_argmax.py", __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    assert F32 is jnp.float32
    sys.exit(main())
