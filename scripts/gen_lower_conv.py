#!/usr/bin/env python3
"""Generate the grouped-convolution and pooling-gradient models of the lowering with JAX, with
XLA:CPU's outputs, into the directory of ``scripts/gen_lower_models.py``::

    /work/jaxvenv/bin/python scripts/gen_lower_conv.py --out tests/data/models

writes ``<out>/jax-<version>/<name>.hlo.txt``, ``.debug.hlo.txt`` and ``.npz`` per model (the files
and npz convention of gen_lower_models.py, whose ``run_model`` this script calls) and adds the
models' entries to that directory's ``manifest.json``, keeping every other entry. JAX is a tool
for making data here, never a dependency of pyprecision or its tests.

The models (all f32, NHWC activations and HWIO kernels as flax writes them):

* ``dw_separable`` — a depthwise-separable block (MobileNet): depthwise 3x3 convolution
  (``feature_group_count`` = channels = 4) + bias + relu, pointwise 1x1 convolution 4→8 + bias
  + relu;
* ``grouped_conv`` — a grouped 3x3 convolution 8→8 with 4 groups (ResNeXt), stride 2, SAME, +
  relu, then a 1x1 grouped convolution with 2 groups;
* ``dw_separable_grad`` — ``jax.grad`` of ``sum(dw_separable(x)²)`` with respect to both kernels
  and both biases: the depthwise kernel's gradient is a ``batch_group_count`` convolution; no
  ``ref_bf16mm`` (JAX's backward convolutions would read an unrounded cotangent);
* ``maxpool_cnn_grad`` — ``jax.grad`` of a conv 3x3 + relu → 2x2/2 max-pool (``lax.reduce_window``
  with ``max``) → dense CNN's squared-error loss with respect to its weights: the pool's
  gradient is a ``select-and-scatter`` (select ``ge``, scatter ``add``); no ``ref_bf16mm``.
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
from jax import lax  # noqa: E402
from lower_models import F32, MatMul, Model, model  # noqa: E402

MODELS: list[Model] = []


def _model(make_args: Any, desc: str, **kw: Any) -> Any:
    return model(make_args, desc, into=MODELS, **kw)


def conv(mm: MatMul, x: Any, w: Any, groups: int = 1, stride: int = 1) -> Any:
    """NHWC x HWIO -> NHWC, SAME padding, ``feature_group_count=groups`` (operands rounded to
    bf16 with f32 sums in the reference, as ``MatMul.conv``)."""
    x, w, kw = mm._operands(x, w)
    return lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups, **kw)


def _normal(r: np.random.RandomState, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * r.standard_normal(shape)).astype(np.float32)


def _dw_args(r: np.random.RandomState) -> list[np.ndarray]:
    return [_normal(r, 2, 8, 8, 4), _normal(r, 3, 3, 1, 4, scale=1 / 3),
            _normal(r, 4, scale=0.1), _normal(r, 1, 1, 4, 8, scale=0.5), _normal(r, 8, scale=0.1)]


def _dw_block(mm: MatMul, x: Any, kd: Any, bd: Any, kp: Any, bp: Any) -> Any:
    h = jax.nn.relu(conv(mm, x, kd, groups=x.shape[-1]) + bd)
    return jax.nn.relu(conv(mm, h, kp) + bp)


@_model(_dw_args, "depthwise-separable block: depthwise 3x3 conv (feature_group_count=4) + bias + "
        "relu, pointwise 1x1 conv 4->8 + bias + relu; x NHWC [2,8,8,4]")
def dw_separable(mm: MatMul) -> Any:
    def f(x: Any, kd: Any, bd: Any, kp: Any, bp: Any) -> Any:
        return _dw_block(mm, x, kd, bd, kp, bp)
    return f


def _grouped_args(r: np.random.RandomState) -> list[np.ndarray]:
    return [_normal(r, 2, 7, 7, 8), _normal(r, 3, 3, 2, 8, scale=0.25), _normal(r, 8, scale=0.1),
            _normal(r, 1, 1, 4, 6, scale=0.5)]


@_model(_grouped_args, "grouped conv 3x3 8->8, 4 groups, stride 2, SAME, + bias + relu, then a "
        "1x1 grouped conv 8->6 with 2 groups; x NHWC [2,7,7,8]")
def grouped_conv(mm: MatMul) -> Any:
    def f(x: Any, k1: Any, b1: Any, k2: Any) -> Any:
        h = jax.nn.relu(conv(mm, x, k1, groups=4, stride=2) + b1)
        return conv(mm, h, k2, groups=2)
    return f


@_model(_dw_args, "jax.grad of sum(dw_separable(x)^2) w.r.t. both kernels and biases: the "
        "depthwise kernel's gradient is a batch_group_count=4 convolution", ref_bf16mm=False)
def dw_separable_grad(mm: MatMul) -> Any:
    def loss(kd: Any, bd: Any, kp: Any, bp: Any, x: Any) -> Any:
        return jnp.sum(_dw_block(mm, x, kd, bd, kp, bp) ** 2)

    def f(x: Any, kd: Any, bd: Any, kp: Any, bp: Any) -> Any:
        return jax.grad(loss, argnums=(0, 1, 2, 3))(kd, bd, kp, bp, x)
    return f


def _pool_args(r: np.random.RandomState) -> list[np.ndarray]:
    return [_normal(r, 2, 8, 8, 3), _normal(r, 3, 3, 3, 4, scale=0.3), _normal(r, 4, scale=0.1),
            _normal(r, 64, 5, scale=0.15), _normal(r, 2, 5)]


@_model(_pool_args, "jax.grad of the squared error of conv 3x3 3->4 + relu, 2x2/2 max-pool "
        "(lax.reduce_window max), dense 64->5 w.r.t. its weights: the pool's gradient is a "
        "select-and-scatter", ref_bf16mm=False)
def maxpool_cnn_grad(mm: MatMul) -> Any:
    def loss(k: Any, b: Any, wd: Any, x: Any, y: Any) -> Any:
        h = jax.nn.relu(conv(mm, x, k) + b)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        out = mm.einsum("bk,kn->bn", h.reshape(h.shape[0], -1), wd)
        return jnp.sum((out - y) ** 2)

    def f(x: Any, k: Any, b: Any, wd: Any, y: Any) -> Any:
        return jax.grad(loss, argnums=(0, 1, 2))(k, b, wd, x, y)
    return f


def main(argv: list[str] | None = None) -> int:
    """Generate the models (``--only``: a subset) and merge them into the manifest."""
    return G.add_models(MODELS, "scripts/gen_lower_conv.py", __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    assert F32 is jnp.float32
    sys.exit(main())
