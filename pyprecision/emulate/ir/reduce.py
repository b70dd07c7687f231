"""The loop IR's ``argreduce`` on NumPy values: the HLO evaluator's reduce (:mod:`.hlo_reduce`:
its element order and sequential fold; called, not copied) with JAX's argmax / argmin comparator
as the step (decision L21)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import has_nan
from pyprecision.emulate.shared.reduce import fold_steps, reduce_layout
from pyprecision.kernel import FOLD_ROUNDINGS, fold_f32

__all__ = ["arg_reduce", "arg_step", "float32_fold", "narrow_fold"]


def arg_step(kind: str, a: np.ndarray, ia: np.ndarray, b: np.ndarray,
             ib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """JAX's comparator on the pair (a, ia) and the next element (b, ib): the value is ``a`` if
    ``a > b`` (``<`` for min) or ``a`` is NaN, else ``b``; the index is ``ia`` if the value picked
    ``a`` or ``a == b`` and ``ia < ib``, else ``ib``."""
    with np.errstate(invalid="ignore"):
        wins = (a > b) if kind == "max" else (a < b)
        pick = wins | (a != a)
        pick_index = pick | ((a == b) & (ia < ib))
    return np.where(pick, a, b), np.where(pick_index, ia, ib)


def arg_reduce(kind: str, dims: tuple[int, ...], x: np.ndarray, idx: np.ndarray,
               init: np.ndarray, index_init: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the ``kind`` argreduce of ``x`` with indices ``idx`` over ``dims``,
    from (``init``, ``index_init``), folded in the evaluator's order."""
    moved, accs = reduce_layout([np.asarray(x), np.asarray(idx)],
                                [np.asarray(init), np.asarray(index_init)], list(dims))

    def step(accs: list[np.ndarray], elems: list[np.ndarray]) -> list[np.ndarray]:
        return list(arg_step(kind, accs[0], accs[1], elems[0], elems[1]))

    values, indices = fold_steps(moved, accs, step)
    return values, indices


_U32 = np.uint32
_NEG_ZERO = _U32(0x80000000)


def float32_fold(kind: str, acc: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """``reduce``'s sequential fold of float32 values ``x`` over its last axis from float32
    accumulators ``acc`` (x's shape without the last axis) with float32 accumulation, as one
    NumPy call instead of one step per element; None where it would not be bit-identical to the
    steps (decision EM-14):

    * ``add`` / ``mul``: ``kernel.fold_f32`` is the fold itself, one float32 rounding per element
      in index order (EM-17). Without a NaN among the operands, the only NaN is one a step makes
      (inf - inf, 0 x inf): the hardware's default NaN, which every later step passes on as it
      is, as the steps' ``first_nan`` does. With a NaN operand (whose payload the steps choose by
      operand order): None.
    * ``max`` / ``min``: order-free but for ±0 (OP9: max is +0 if any zero is +0, min -0 if any is
      -0), which is set afterwards; with a NaN operand: None.
    """
    if kind not in ("add", "mul", "max", "min") or x.dtype != np.float32 \
            or acc.dtype != np.float32 or x.ndim < 1 or x.shape[-1] == 0:
        return None
    if kind in ("add", "mul"):  # the C fold: None with a NaN operand (EM-17)
        return fold_f32(kind, x, acc)
    if has_nan(x) or has_nan(acc):
        return None
    with np.errstate(all="ignore"):
        pick = np.maximum if kind == "max" else np.minimum
        r = pick(pick.reduce(x, axis=-1), acc)
    zero = r == 0
    if zero.any():
        word = _U32(0) if kind == "max" else _NEG_ZERO  # the zero that wins a tie
        wins = (x.view(_U32) == word).any(axis=-1) | (np.asarray(acc).view(_U32) == word)
        other = _NEG_ZERO if kind == "max" else _U32(0)
        r = np.array(r)
        r.view(_U32)[zero] = np.where(wins, word, other)[zero]
    return r


def narrow_fold(kind: str, acc: np.ndarray, x: np.ndarray, dt: Any) -> np.ndarray | None:
    """``reduce``'s sequential fold, as :func:`float32_fold`, with the accumulation in narrow float
    dtype ``dt`` (bf16, fp16, the fp8s: ``narrow_acc``), ``x`` and ``acc`` float32 arrays of its
    values; None where it would not be bit-identical to the steps, or for any other dtype
    (decision EM-21):

    * ``add`` / ``mul``: each step is the float32 operation rounded once to ``dt`` (EM-11, EM-19:
      what ``binary_rounded`` computes for two values of ``dt``), which ``kernel.fold_f32`` with
      the chain's rounding computes row by row in index order; None with a NaN operand or a step
      that makes one.
    * ``max`` / ``min``: the result is one of the values, ``dt``'s already: :func:`float32_fold`.
    """
    fmt = getattr(dt, "fmt", None)
    if fmt not in FOLD_ROUNDINGS or x.dtype != np.float32 or acc.dtype != np.float32:
        return None
    if kind in ("max", "min"):
        return float32_fold(kind, acc, x)
    if kind not in ("add", "mul") or x.ndim < 1 or x.shape[-1] == 0:
        return None
    return fold_f32(kind, x, acc, rounding=fmt)
