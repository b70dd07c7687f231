"""Consecutive elementwise steps of a run compiled into one program of the C core (decision EM-15).

Inside a run (``blocks.run_in_blocks``) each executor describes the instructions it can: an
instruction's value as a few register operations of ``kernel.chain.OPS`` (an IEEE single
operation, then a rounding to bf16 / fp16 where its element type is one), each naming the keys
of the block values it reads. :func:`compile_steps` replaces every stretch of at least
``MIN_SEGMENT`` such instructions by one step that runs their program in C over the block and
returns the values read after the stretch; the other instructions stay the executor's NumPy
steps. When the C program meets a NaN (whose payload the NumPy routes choose by rules of their
own) or a dtype it was not written for, that block's stretch runs as the NumPy steps instead, so
every value is the one the executor's own handlers compute. tests/emulate/test_chain.py checks
both executors against their unchained evaluation.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.emulate.shared.blocks import LENGTH, Step
from pyprecision.kernel import CHAIN_DTYPES, ChainProgram

#: stretches shorter than this stay NumPy steps (one C call saves nothing on one operation)
MIN_SEGMENT = 2


@dataclass(frozen=True, eq=False)
class Const:
    """An operand that is one value for every lane (an IR immediate, already rounded)."""

    value: np.ndarray


#: one register operation: (operation, the key it defines, the keys or Consts it reads)
Op = tuple[str, Hashable, tuple[Any, ...]]


def rounded(name: str, key: Hashable, args: tuple[Any, ...], rounding: str | None) -> list[Op]:
    """Operation ``name`` defining ``key``, then, when ``rounding`` is given, that rounding of
    its exact value (kept under ``(key, "exact")``)."""
    if rounding is None:
        return [(name, key, args)]
    return [(name, (key, "exact"), args), (rounding, key, ((key, "exact"),))]


@dataclass
class Item:
    """One instruction of a run: its key and NumPy step, the keys it reads, and, where the
    executor can express it, its register operations (the last defines ``key``) and the dtype
    its value has in the block."""

    key: Hashable
    step: Step
    reads: tuple[Hashable, ...]
    ops: list[Op] | None = None
    dtype: np.dtype | None = None


def compile_steps(items: Sequence[Item], outputs: set[Hashable],
                  accept: frozenset[np.dtype] = frozenset(CHAIN_DTYPES)) -> list[tuple[Hashable, Step]]:
    """The steps of a run: ``items`` in order, each stretch of at least ``MIN_SEGMENT`` items
    with ops one step (its key a :class:`Segment`, its value a dict of the stretch's values
    read by a later item or in ``outputs``). ``accept``: the input dtypes the executor's own
    steps treat as the program does (others take the NumPy steps)."""
    steps: list[tuple[Hashable, Step]] = []
    i, n = 0, len(items)
    while i < n:
        j = i
        while j < n and items[j].ops is not None:
            j += 1
        if j - i >= MIN_SEGMENT:
            later = set(outputs)
            for it in items[j:]:
                later.update(it.reads)
            seg = Segment(items[i:j], later, accept)
            steps.append((seg, seg))
            i = j
        else:
            steps.append((items[i].key, items[i].step))
            i += 1
    return steps


class Segment:
    """A stretch of items run as one C program per block; called on a block's values."""

    def __init__(self, items: Sequence[Item], later: set[Hashable], accept: frozenset[np.dtype]):
        self.items, self.accept = list(items), accept
        self.needed = [it.key for it in items if it.key in later]
        ops = [op for it in items for op in it.ops or ()]
        defined = {dst for _, dst, _ in ops}
        # registers: the inputs first (each key read from outside, and each Const), then the
        # values, a register reused once its value is read for the last time
        self.inputs: list[Any] = []
        reg: dict[Any, int] = {}
        for _, _, args in ops:
            for a in args:
                if (isinstance(a, Const) or a not in defined) and a not in reg:
                    reg[a] = len(self.inputs)
                    self.inputs.append(a)
        last: dict[Any, int] = {}
        for k, (_, _, args) in enumerate(ops):
            for a in args:
                last[a] = k
        for key in self.needed:
            last[key] = len(ops)
        free: list[int] = []
        n_regs = len(self.inputs)
        code = []
        for k, (name, dst, args) in enumerate(ops):
            if free:
                r = free.pop()
            else:
                r, n_regs = n_regs, n_regs + 1
            code.append((name, r, *(reg[a] for a in args)))
            for a in set(args):
                if last.get(a) == k:
                    free.append(reg[a])
            reg[dst] = r
            if last.get(dst, -1) < k:  # never read: its register is free again
                free.append(r)
        dtypes = {it.key: it.dtype for it in items}
        self.program = ChainProgram(code, max(n_regs, 1), len(self.inputs),
                               [(reg[key], dtypes[key]) for key in self.needed])

    def __call__(self, block: dict[Hashable, Any]) -> dict[Hashable, Any]:
        """The stretch's values read after it, on one block (the program's, or its items' own
        steps' where the program meets a NaN or an input dtype outside ``accept``)."""
        n = block[LENGTH]
        args = [a.value if isinstance(a, Const) else block[a] for a in self.inputs]
        if all(np.asarray(x).dtype in self.accept for x in args):
            outs = self.program([np.asarray(x) for x in args], n)
            if outs is not None:
                return dict(zip(self.needed, outs, strict=True))
        local = dict(block)  # a NaN, or a dtype of its own: the executor's steps
        for it in self.items:
            local[it.key] = np.asarray(it.step(local))
        return {key: local[key] for key in self.needed}
