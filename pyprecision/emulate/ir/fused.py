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

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision.emulate.ir.numbers import finite_max
from pyprecision.emulate.shared import blocks, chain
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
    #: those of ``outputs`` only a whole trace wants (no later instruction reads them): handed to
    #: the trace block by block where it takes them so (``SparseTrace.stream``, decision TU20)
    traced: set[int] = field(default_factory=set)


def plan_runs(insts: list[Instruction], keep: AbstractSet[int] = frozenset()
              ) -> dict[int, Run]:
    """The runs of ``insts`` (a function's instructions in order), by start index. ``keep``: ids
    of instructions whose values are outputs of their run even where no later instruction reads
    them (a sparse trace's wanted values, made whole; decision TU10)."""
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
            runs[i] = _run(insts, Run(i, stop, shape, body, hoisted), last_read, keep)
        i = stop
    return runs


def _elementwise_shape(inst: Instruction) -> tuple[int, ...] | None:
    r = inst.result
    if not isinstance(inst, ELEMENTWISE) or r is None:
        return None
    shape = tuple(r.shape)
    return shape if int(np.prod(shape)) >= blocks.MIN_ELEMENTS else None


def _run(insts: list[Instruction], run: Run, last_read: dict[int, int],
         keep: AbstractSet[int]) -> Run:
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
        elif id(inst) in keep:
            run.outputs.add(key)
            run.traced.add(key)
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
            return np.broadcast_to(v, (self.vals[blocks.LENGTH],))
        return self.vals[id(op)]


def run_blocks(run: Run, insts: list[Instruction], num: Any, vals: dict[int, np.ndarray],
               empty: Any = np.empty, sinks: Mapping[int, blocks.Sink] | None = None) -> None:
    """Evaluate ``run`` block by block from the values in ``vals``; store its outputs there, each
    made by ``empty(size, dtype)`` (``blocks.run_in_blocks``), but for those in ``sinks`` (value
    id -> sink), handed over block by block instead."""
    size = int(np.prod(run.shape))
    inputs: dict[Any, np.ndarray] = {key: vals[key] for key in run.inputs}

    def step(inst: Instruction) -> blocks.Step:
        return lambda block: inst.evaluate(_BlockFrame(num, block))

    items = []
    for inst in (insts[k] for k in run.body):
        ops = chain_ops(inst, num)
        items.append(chain.Item(id(inst.result), step(inst),
                                tuple(id(o) for o in inst.operands if not isinstance(o, ScalarValue)),
                                ops, np.dtype(np.int64 if _is_compare(inst) else np.float32)))
    steps = chain.compile_steps(items, set(run.outputs), _ACCEPT)
    whole: set[Any] = set(run.outputs) - sinks.keys() if sinks else set(run.outputs)
    outs = blocks.run_in_blocks(size, inputs, steps, whole, empty=empty, sinks=sinks)
    for key, out in outs.items():
        vals[int(key)] = out.reshape(run.shape)  # type: ignore[call-overload]


# -- the instructions a C chain evaluates (decision EM-15) ------------------------------------

#: the values the IR evaluator's float32 fast paths take (EM-10, EM-11): float32 values, and the
#: int64 0 / 1 of a comparison as a select's predicate
_ACCEPT: frozenset[np.dtype] = frozenset({np.dtype(np.float32), np.dtype(np.int64)})
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "max", "min": "min"}
_COMPARE = {"cmp_eq": "eq", "cmp_ne": "ne", "cmp_lt": "lt", "cmp_le": "le", "cmp_gt": "gt",
            "cmp_ge": "ge"}
#: exact in any precision: the float64 route's value is the float32 operation's
_EXACT_UNARY = {"neg": "neg", "abs": "abs", "relu": "relu", "copy": "copy", "cast": "copy"}
#: IEEE single operations (ops._F32_UNARY)
_IEEE_UNARY = {"sqrt": "sqrt", "square": "square", "reciprocal": "recip"}
#: the chain rounding of each narrow dtype: RNE as ``numbers.round_to``, saturating for the fp8s
#: (their Neuron default; EM-19), fp32r excepted
_NARROW = {"bf16": "round_bf16", "fp16": "round_fp16", "fp8e4": "round_fp8e4",
           "fp8e4m3fn": "round_fp8e4m3fn", "fp8e5": "round_fp8e5"}
_NOT = object()


_BOUNDS: dict[Any, chain.Const] = {}


def _bound(dt: Any) -> chain.Const:
    """The largest finite value of float dtype ``dt`` as a chain constant, one per dtype (a
    segment loads each constant once, however many ``satinf`` read it)."""
    got = _BOUNDS.get(dt)
    if got is None:
        got = _BOUNDS[dt] = chain.Const(np.array([finite_max(dt)], dtype=np.float32))
    return got


def _is_compare(inst: Instruction) -> bool:
    return isinstance(inst, BinaryOp) and inst.is_compare


def _rounding(dt: Any) -> Any:
    """None for fp32 (a float32 value is its own fp32 value), the rounding op for bf16 / fp16
    and the fp8s, ``_NOT`` for any other dtype (fp32r; an integer wraps: not a chain's)."""
    if not dt.is_float:
        return _NOT
    if dt.fmt is None:
        return None
    return _NARROW.get(dt.fmt, _NOT)


def chain_ops(inst: Instruction, num: Any) -> list[chain.Op] | None:
    """``inst``'s value as chain operations where its ``evaluate`` takes a float32 route
    (``emulate/ir/ops.py``: EM-10's IEEE single operations for an fp32 result, EM-11's float32
    operation rounded once for a bf16 / fp16 result of operands of that dtype, exact operations
    rounded once) on operands without a NaN; None otherwise."""
    key = id(inst.result)
    rdt = inst.result.dtype  # type: ignore[union-attr]
    args = tuple(_arg(o, num) for o in inst.operands)
    if isinstance(inst, BinaryOp):
        if not (inst.lhs.dtype.is_float and inst.rhs.dtype.is_float):
            return None
        if inst.is_compare:
            return [(_COMPARE[inst.kind], key, args)]
        name = _BINARY.get(inst.kind)
        rounding = _rounding(rdt)
        if name is None or rounding is _NOT or (
                rounding is not None and not (inst.lhs.dtype is rdt and inst.rhs.dtype is rdt)):
            return None
        return chain.rounded(name, key, args, rounding)
    rounding = _rounding(rdt)
    if rounding is _NOT:
        return None
    if isinstance(inst, UnaryOp):
        src = inst.operands[0].dtype
        if not src.is_float:
            return None
        if inst.kind == "satinf":  # on values of its own dtype: a clamp to ±max (EM-20)
            if src is not rdt:
                return None
            return [("satinf", key, (args[0], _bound(rdt)))]
        if inst.kind in _EXACT_UNARY:
            if inst.kind in ("cast", "copy") and src is rdt:
                return [("copy", key, args)]
            return chain.rounded(_EXACT_UNARY[inst.kind], key, args, rounding)
        name = _IEEE_UNARY.get(inst.kind)
        if name is None or (rounding is not None and src is not rdt):
            return None
        return chain.rounded(name, key, args, rounding)
    if isinstance(inst, SelectOp):  # select exact; rounded where a branch is of another dtype
        if not isinstance(inst.pred, ScalarValue) and inst.pred.dtype.is_float:
            return None
        same = all(o.dtype is rdt for o in inst.operands[1:])
        return chain.rounded("select", key, args, None if same else rounding)
    return None


def _arg(op: Any, num: Any) -> Any:
    if isinstance(op, ScalarValue):  # as _BlockFrame.operand rounds it
        v = num.round_to(np.array(op.value, dtype=np.float64 if op.dtype.is_float else object),
                         op.dtype)
        return chain.Const(np.asarray(v).reshape(-1)[:1])
    return id(op)
