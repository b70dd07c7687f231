"""The IR evaluator's runs of elementwise instructions, evaluated a block of elements at a time by
``emulate/shared/blocks.py`` (decision EM-14).

The lowering writes an activation such as erf-GELU as a chain of tens of elementwise
instructions on one large shape (MiniLM-L6: ~40 per layer on [8, 128, 1536]). Evaluated one
instruction at a time, each reads and writes whole arrays that no cache holds; evaluated one block
of elements at a time, the chain's intermediates stay in the core's cache and only the
values read after the run are written out whole.

Every instruction taken here (``UnaryOp``, ``BinaryOp``, ``SelectOp``) is elementwise in the IR's
rules (each value operand has the result's shape, immediates are scalars) and its ``evaluate`` is a
function of each element's operand values alone: the same lanes, the same NaN rules (first_nan is
per lane), the same cast-core rounding (round to nearest even; the IR evaluator has no stochastic
rounding, whose bits would depend on the position). So the value of every element is the same
whether it is computed in a block or in the whole array; tests/emulate/test_ir_fused.py checks it
against the unfused evaluator on every real model and on random chains (hypothesis).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision.emulate.shared import blocks
from pyprecision.ir import (
    BinaryOp,
    BroadcastOp,
    Instruction,
    ReshapeOp,
    SBAtomLoad,
    ScalarValue,
    SelectOp,
    UnaryOp,
)

#: runs shorter than this run one instruction at a time
MIN_RUN = 3

ELEMENTWISE = (UnaryOp, BinaryOp, SelectOp)
#: instructions that may sit between a run's instructions and are evaluated, whole and in their
#: order, before the run when they read none of its values: the loads, broadcasts and reshapes
#: that feed a chain its constants (a run reads no memory and writes none, so moving a load or a
#: value's reshape before it changes no value)
HOISTABLE = (SBAtomLoad, BroadcastOp, ReshapeOp)
#: at most this many hoisted instructions in a row inside a run
MAX_GAP = 4


@dataclass
class Run:
    """Instructions ``start`` .. ``stop - 1`` of the function: ``body``, elementwise on one
    shape and evaluated block by block, and ``hoisted``, evaluated whole before them."""

    start: int
    stop: int
    shape: tuple[int, ...]
    body: list[int] = field(default_factory=list)
    hoisted: list[int] = field(default_factory=list)
    #: ids of values defined outside the run that it reads
    inputs: list[int] = field(default_factory=list)
    #: ids of values the run defines and a later instruction reads: written out whole
    outputs: set[int] = field(default_factory=set)


def plan_runs(insts: list[Instruction]) -> dict[int, Run]:
    """The runs of ``insts`` (a function's instructions in order), by start index."""
    last_read: dict[int, int] = {}
    for i, inst in enumerate(insts):
        for op in inst.operands:
            if not isinstance(op, ScalarValue):
                last_read[id(op)] = i
    runs: dict[int, Run] = {}
    i, n = 0, len(insts)
    while i < n:
        shape = _elementwise_shape(insts[i])
        if shape is None:
            i += 1
            continue
        body, hoisted, defined = [i], [], {id(insts[i].result)}
        j, gap = i + 1, list[int]()
        while j < n and len(gap) <= MAX_GAP:
            inst = insts[j]
            if _elementwise_shape(inst) == shape:
                body.append(j)
                hoisted += gap
                gap = []
                defined.add(id(inst.result))
            elif isinstance(inst, HOISTABLE) and not any(
                    id(op) in defined for op in inst.operands if not isinstance(op, ScalarValue)):
                gap.append(j)
            else:
                break
            j += 1
        stop = body[-1] + 1
        if len(body) >= MIN_RUN:
            runs[i] = _run(insts, Run(i, stop, shape, body, hoisted), last_read)
        i = stop
    return runs


def _elementwise_shape(inst: Instruction) -> tuple[int, ...] | None:
    r = inst.result
    if not isinstance(inst, ELEMENTWISE) or r is None:
        return None
    shape = tuple(r.shape)
    return shape if int(np.prod(shape)) >= blocks.MIN_ELEMENTS else None


def _run(insts: list[Instruction], run: Run, last_read: dict[int, int]) -> Run:
    defined: set[int] = set()
    for k in run.body:
        inst = insts[k]
        for op in inst.operands:
            if not isinstance(op, ScalarValue) and id(op) not in defined \
                    and id(op) not in run.inputs:
                run.inputs.append(id(op))
        key = id(inst.result)
        defined.add(key)
        if last_read.get(key, -1) >= run.stop:  # (a hoisted instruction reads none of them)
            run.outputs.add(key)
    return run


class _BlockFrame:
    """The frame a run's instructions see: one block of each operand, flat."""

    def __init__(self, num: Any, vals: dict[Any, Any]):
        self.num, self.vals = num, vals

    def operand(self, op: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
        if isinstance(op, ScalarValue):
            v = self.num.round_to(
                np.array(op.value, dtype=np.float64 if op.dtype.is_float else object), op.dtype
            )
            return np.broadcast_to(v, self.vals[_LENGTH].shape)
        return self.vals[id(op)]


_LENGTH = "length"  # the key of a block-long placeholder in the block's values


def run_blocks(run: Run, insts: list[Instruction], num: Any,
               vals: dict[int, np.ndarray]) -> None:
    """Evaluate ``run`` block by block from the values in ``vals``; store its outputs there."""
    size = int(np.prod(run.shape))
    inputs: dict[Any, np.ndarray] = {key: vals[key] for key in run.inputs}
    inputs[_LENGTH] = np.broadcast_to(np.zeros((), np.uint8), (size,))

    def step(inst: Instruction) -> blocks.Step:
        return lambda block: inst.evaluate(_BlockFrame(num, block))

    steps: list[tuple[Any, blocks.Step]] = [(id(insts[k].result), step(insts[k]))
                                            for k in run.body]
    outs = blocks.run_in_blocks(size, inputs, steps, set(run.outputs))
    for key, out in outs.items():
        vals[int(key)] = out.reshape(run.shape)  # type: ignore[call-overload]
