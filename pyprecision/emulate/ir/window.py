"""The loop IR's ``select_and_scatter`` on NumPy values: the HLO evaluator's select-and-scatter
(:mod:`.hlo_window_ops`; called, not copied), given the IR op's window (decision L19)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.emulate.shared.window_ops import Fold, select_and_scatter_with
from pyprecision.hlo import WindowDim

__all__ = ["select_and_scatter"]


def select_and_scatter(op: Any, x: np.ndarray, src: np.ndarray, init: np.ndarray, select: Fold,
                       scatter: Fold) -> np.ndarray:
    """``select_and_scatter`` of the IR op ``op`` (a verified SelectAndScatterOp)."""
    win = [WindowDim(size=k, stride=s, pad_lo=lo, pad_hi=hi)
           for k, s, lo, hi in zip(op.size, op.stride, op.pad_lo, op.pad_hi, strict=True)]
    return np.asarray(select_and_scatter_with(win, x, src, init, select, scatter, op.result.name))
