"""dot (general dimension numbers) and batch-norm-training/inference.

Accumulation policy (docs/decisions/hlo-eval.md):

* all-integer dot: exact integer products and sums (int64, two's complement), wrapped once to the
  output type — identical to XLA's accumulation in the output type, because wraparound
  arithmetic is a ring;
* float dot: operands widened exactly to the accumulation type (float64 when the output or an
  operand is F64, else float32), every product rounded to it, products summed sequentially in
  contracting-index order (row-major over the contracting dimensions in the order listed) from a
  +0 accumulator with a rounding after every addition and no FMA (``pyprecision.kernel.pe_matmul``;
  so a sum of -0 products is +0, docs/decisions/numerics.md N5), then the sum rounded once to the
  output type.
  So an f32 dot equals ``pyprecision.int_dot``'s F32 route, and a bf16 dot is an f32 dot
  rounded once to bf16. ``operand_precision`` does not change this.

Batch norm is computed in float64 from the exact inputs (two-pass variance, epsilon read as the
f32 XLA stores) and each result is rounded once to its element type.
"""
from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import is_float_type, is_int_type, round_to, widen
from pyprecision.errors import CastError, EmulationError
from pyprecision.hlo import PrimitiveType
from pyprecision.kernel import pe_matmul

P = PrimitiveType


def _dim_numbers(inst: Any) -> tuple[list[int], list[int], list[int], list[int]]:
    def get(key: str) -> list[int]:
        return inst.attr_ints(key) or []
    return (get("lhs_batch_dims"), get("rhs_batch_dims"), get("lhs_contracting_dims"),
            get("rhs_contracting_dims"))


def _canonical(x: np.ndarray, batch: list[int], contract: list[int],
               lhs: bool) -> tuple[np.ndarray, list[int]]:
    """x as [batch..., M, K] (lhs) or [batch..., K, N] (rhs); also the free dims' sizes."""
    free = [d for d in range(x.ndim) if d not in batch and d not in contract]
    bshape = [x.shape[d] for d in batch]
    fsizes = [x.shape[d] for d in free]
    k = prod(x.shape[d] for d in contract)
    if lhs:
        t = np.transpose(x, batch + free + contract).reshape(bshape + [prod(fsizes), k])
    else:
        t = np.transpose(x, batch + contract + free).reshape(bshape + [k, prod(fsizes)])
    return t, fsizes


def dot(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """dot(lhs, rhs) with lhs/rhs batch and contracting dimensions."""
    lhs, rhs = args
    lb, rb, lc, rc = _dim_numbers(inst)
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise EmulationError(f"{inst.name}: lhs/rhs batch or contracting dimension counts differ")
    for dl, dr in zip(lb + lc, rb + rc, strict=True):
        if lhs.shape[dl] != rhs.shape[dr]:
            raise EmulationError(f"{inst.name}: lhs dimension {dl} ({lhs.shape[dl]}) does not "
                                 f"match rhs dimension {dr} ({rhs.shape[dr]})")
    a, mdims = _canonical(lhs, lb, lc, lhs=True)
    b, ndims = _canonical(rhs, rb, rc, lhs=False)
    out_t = inst.shape.element_type
    types = [o.shape.element_type for o in inst.operands]
    if is_int_type(out_t) and all(is_int_type(t) or t == P.PRED for t in types):
        with np.errstate(all="ignore"):
            acc = np.matmul(a.astype(np.int64), b.astype(np.int64))
    else:
        acc_dt = np.float64 if P.F64 in (out_t, *types) else np.float32
        try:
            acc = pe_matmul(widen(a), widen(b), acc_dt)
        except CastError as e:  # a result too large for memory, named before allocation
            raise EmulationError(f"{inst.name}: {e}") from None
    out_dims = [lhs.shape[d] for d in lb] + mdims + ndims
    return round_to(acc.reshape(out_dims), out_t)


# -- batch norm ----------------------------------------------------------------------------

def _bn_params(inst: Any, x: np.ndarray) -> tuple[float, int]:
    eps_text = inst.attr("epsilon")
    fi = inst.attr_ints("feature_index")
    if eps_text is None or not fi:
        raise EmulationError(f"{inst.name}: {inst.opcode} needs epsilon= and feature_index=")
    if not 0 <= fi[0] < x.ndim:
        raise EmulationError(f"{inst.name}: feature_index={fi[0]} is out of range")
    return float(np.float32(float(eps_text))), fi[0]


def _feature_view(v: np.ndarray, fi: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[fi] = v.shape[0]
    return np.asarray(widen(v), dtype=np.float64).reshape(shape)


def _check_float(inst: Any) -> None:
    for o in inst.operands:
        if not is_float_type(o.shape.element_type):
            raise EmulationError(f"{inst.name}: {inst.opcode} needs floating-point operands")


def batch_norm_training(inst: Any, args: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """(normalized, batch mean, batch variance) of x over every dimension but feature_index."""
    _check_float(inst)
    x, scale, offset = args
    eps, fi = _bn_params(inst, x)
    xs = np.asarray(widen(x), dtype=np.float64)
    axes = tuple(d for d in range(x.ndim) if d != fi)
    mean = xs.mean(axis=axes, keepdims=True)
    var = ((xs - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (xs - mean) / np.sqrt(var + eps) * _feature_view(scale, fi, x.ndim) \
        + _feature_view(offset, fi, x.ndim)
    ts = [s.element_type for s in inst.shape.tuple_shapes]
    return (round_to(y, ts[0]), round_to(mean.reshape(-1), ts[1]),
            round_to(var.reshape(-1), ts[2]))


def batch_norm_inference(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """scale * (x - mean) / sqrt(variance + epsilon) + offset, per feature."""
    _check_float(inst)
    x, scale, offset, mean, var = args
    eps, fi = _bn_params(inst, x)
    xs = np.asarray(widen(x), dtype=np.float64)
    n = x.ndim
    y = (xs - _feature_view(mean, fi, n)) / np.sqrt(_feature_view(var, fi, n) + eps) \
        * _feature_view(scale, fi, n) + _feature_view(offset, fi, n)
    return round_to(y, inst.shape.element_type)


def batch_norm_grad(inst: Any, args: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """(grad operand, grad scale, grad offset) of batch norm at the given mean/variance:
    x̂ = (x - mean)/sqrt(var + eps), grad_offset = Σ dy, grad_scale = Σ dy·x̂,
    grad_x = scale/sqrt(var + eps) · (dy - grad_offset/N - x̂·grad_scale/N)."""
    _check_float(inst)
    x, scale, mean, var, dy = args
    eps, fi = _bn_params(inst, x)
    n = x.ndim
    axes = tuple(d for d in range(n) if d != fi)
    count = x.size // x.shape[fi] if x.shape[fi] else 0
    xs = np.asarray(widen(x), dtype=np.float64)
    g = np.asarray(widen(dy), dtype=np.float64)
    inv = 1.0 / np.sqrt(_feature_view(var, fi, n) + eps)
    xhat = (xs - _feature_view(mean, fi, n)) * inv
    d_offset = g.sum(axis=axes, keepdims=True)
    d_scale = (g * xhat).sum(axis=axes, keepdims=True)
    dx = _feature_view(scale, fi, n) * inv * (g - d_offset / count - xhat * d_scale / count)
    ts = [s.element_type for s in inst.shape.tuple_shapes]
    return (round_to(dx, ts[0]), round_to(d_scale.reshape(-1), ts[1]),
            round_to(d_offset.reshape(-1), ts[2]))
