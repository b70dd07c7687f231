"""A chain of elementwise steps evaluated one block of elements at a time (decision EM-14).

Both executors find runs of elementwise instructions on one large shape (the HLO evaluator in
``emulate/hlo/fused.py``, the IR evaluator in ``emulate/ir/fused.py``) and hand them here: each
step is evaluated on ``BLOCK`` elements of its operands at a time, so a chain's intermediates stay
in the core's cache, and only the values read after the run are written out whole. A step's value
at an element depends on that element's operands alone (the planners take only such steps), so a
block has the bits the whole array would have.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

#: elements per block: 64 Ki float32 are 256 KiB, so a chain's handful of live blocks sit in L2
#: (MiniLM-L6 under none, one thread: 16 Ki 1.47 s, 32 Ki 1.41 s, 64 Ki 1.39 s, 128 Ki 1.52 s)
BLOCK = 1 << 16
#: shapes smaller than this run whole (a block loop would only add calls)
MIN_ELEMENTS = 2 * BLOCK

#: one step: the block's values so far (operands by key) -> its value on the block, or a dict of
#: values by key (a step that defines several, ``emulate/shared/chain.py``)
Step = Callable[[dict[Hashable, Any]], Any]
#: the key of the block's length among its values
LENGTH = "block-length"
#: where a value goes block by block instead of being made whole: ``sink(start, stop, block)``
Sink = Callable[[int, int, np.ndarray], None]


def run_in_blocks(
    size: int,
    inputs: dict[Hashable, np.ndarray],
    steps: list[tuple[Hashable, Step]],
    outputs: set[Hashable],
    scalars: dict[Hashable, Any] | None = None,
    empty: Callable[[int, np.dtype], np.ndarray] = np.empty,
    sinks: Mapping[Any, Sink] | None = None,
) -> dict[Hashable, np.ndarray]:
    """Evaluate ``steps`` (key, function) in order, block by block over ``size`` elements.

    ``inputs`` are arrays of ``size`` elements, sliced per block (a broadcast scalar stays a
    broadcast); ``scalars`` are passed to every block as they are. Returns the flat arrays of
    the ``outputs`` keys, each made by ``empty(size, dtype)`` (e.g. :meth:`Recycler.empty`).
    ``sinks``: keys whose values are handed over block by block instead, ``sink(start, stop,
    block)`` in block order, never made whole (decision TU20)."""
    flat = {key: _flat(np.asarray(x)) for key, x in inputs.items()}
    outs: dict[Hashable, np.ndarray] = {}
    for s in range(0, size, BLOCK):
        e = min(s + BLOCK, size)
        block: dict[Hashable, Any] = dict(scalars or {})
        block[LENGTH] = e - s
        for key, x in flat.items():
            block[key] = x[s:e]
        for key, step in steps:
            r = step(block)
            values = r.items() if isinstance(r, dict) else ((key, r),)
            for k, v in values:
                v = block[k] = np.asarray(v)
                if k in outputs:
                    out = outs.get(k)
                    if out is None:
                        out = outs[k] = empty(size, v.dtype)
                    out[s:e] = v
                elif sinks is not None and k in sinks:
                    sinks[k](s, e, v)
    return outs


def _flat(x: np.ndarray) -> np.ndarray:
    """``x`` as one flat dimension; a broadcast scalar (every stride 0) stays a broadcast."""
    if x.size and not any(x.strides):
        return np.lib.stride_tricks.as_strided(x, shape=(x.size,), strides=(0,), writeable=False)
    return x.reshape(-1)


def _refs(bufs: list[np.ndarray], i: int) -> int:
    return sys.getrefcount(bufs[i])


class Recycler:
    """Output buffers for the runs of one evaluation that makes many whole values nobody keeps
    long (a whole sparse trace, decision EM-22): each buffer is handed out again, as a view of
    the dtype asked for, once no array refers to it any more (its reference count back to the
    recycler's own), so its pages are written once per evaluation instead of faulted in and
    zeroed by the kernel for every value. At most ``cap`` bytes of buffers are kept; past that,
    for object arrays and off CPython, ``empty`` is ``np.empty``. Dropping the recycler frees its
    buffers."""

    #: the count of a buffer only the recycler's list refers to (measured, not assumed)
    UNUSED = _refs([np.empty(1, np.uint8)], 0)

    def __init__(self, cap: int = 1 << 30) -> None:
        self.cap, self.held = int(cap), 0
        self._bufs: dict[int, list[np.ndarray]] = {}
        self._on = sys.implementation.name == "cpython"

    def empty(self, size: int, dtype: np.dtype) -> np.ndarray:
        """An uninitialised array of ``size`` elements of ``dtype``."""
        dtype = np.dtype(dtype)
        n = int(size) * dtype.itemsize
        if dtype.hasobject:  # references, not bytes
            return np.empty(size, dtype)
        bufs = self._bufs.get(n)
        if bufs is not None:
            for i in range(len(bufs)):
                if _refs(bufs, i) <= self.UNUSED:
                    return bufs[i].view(dtype)
        if not self._on or n == 0 or self.held + n > self.cap:
            return np.empty(size, dtype)
        buf = np.empty(n, np.uint8)
        self._bufs.setdefault(n, []).append(buf)
        self.held += n
        return buf.view(dtype)
