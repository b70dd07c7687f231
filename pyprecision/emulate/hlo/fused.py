"""The HLO evaluator's runs of elementwise instructions, evaluated a block of elements at a time by
``emulate/shared/blocks.py`` (decision EM-14).

JAX prints XLA's erf expansion of GELU as tens of consecutive elementwise instructions on one large
shape, between which sit only the ``broadcast``s of their scalar constants. In the evaluator's
order (``limits.schedule``) a run is at least ``MIN_RUN`` instructions whose opcode is one of
``FUSABLE`` (arithmetic, math functions, compare, select, clamp, convert: each handler's value at an
element is a function of that element's operands, or of a scalar operand, alone) on one array shape
of at least ``blocks.MIN_ELEMENTS`` elements, every operand of that shape or a scalar. Between them
may sit at most ``MAX_GAP`` instructions in a row of ``HOISTABLE`` opcodes that read none of the
run's values; those are evaluated whole, first (they read no value the run makes, and no
instruction reads memory, so their values are the same).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision.emulate.hlo.ops import BINARY_OPS, UNARY_OPS
from pyprecision.emulate.shared import blocks, chain
from pyprecision.emulate.shared.numeric import dtype_of
from pyprecision.hlo import PrimitiveType

FUSABLE = frozenset({*BINARY_OPS, *UNARY_OPS, "compare", "select", "clamp", "convert"})
HOISTABLE = frozenset({"broadcast", "constant", "reshape", "parameter", "iota"})
MIN_RUN = 3
MAX_GAP = 4


@dataclass
class Run:
    """Positions ``start`` .. ``stop - 1`` of a schedule: ``body`` evaluated block by block,
    ``hoisted`` evaluated whole before it."""

    start: int
    stop: int
    dims: tuple[int, ...]
    body: list[int] = field(default_factory=list)
    hoisted: list[int] = field(default_factory=list)
    #: ids of the full-shape values the body reads but does not make
    inputs: list[int] = field(default_factory=list)
    #: ids of the scalar values it reads
    scalars: list[int] = field(default_factory=list)
    #: ids of the body's values read after the run (or the computation's root)
    outputs: set[int] = field(default_factory=set)
    #: ids of the inputs that are broadcasts of a scalar (a chain reads one value, EM-15)
    splats: set[int] = field(default_factory=set)


def plan_runs(plan: list[tuple[Any, list[int]]], root: Any) -> dict[int, Run]:
    """The runs of a schedule (``limits.schedule``), by start position."""
    insts = [inst for inst, _ in plan]
    last_read: dict[int, int] = {}
    for i, inst in enumerate(insts):
        for o in inst.operands:
            last_read[id(o)] = i
    runs: dict[int, Run] = {}
    i, n = 0, len(insts)
    while i < n:
        dims = _fusable_dims(insts[i])
        if dims is None:
            i += 1
            continue
        body, hoisted, gap = [i], [], list[int]()
        defined = {id(insts[i])}
        j = i + 1
        while j < n and len(gap) <= MAX_GAP:
            inst = insts[j]
            if _fusable_dims(inst) == dims:
                body.append(j)
                hoisted += gap
                gap = []
                defined.add(id(inst))
            elif inst.opcode in HOISTABLE and not any(id(o) in defined for o in inst.operands):
                gap.append(j)
            else:
                break
            j += 1
        if len(body) >= MIN_RUN:
            run = Run(i, body[-1] + 1, dims, body, hoisted)
            _wire(run, insts, last_read, root)
            runs[i] = run
        i = body[-1] + 1
    return runs


def _fusable_dims(inst: Any) -> tuple[int, ...] | None:
    shape = inst.shape
    if inst.opcode not in FUSABLE or shape.is_tuple:
        return None
    dims = tuple(int(d) for d in shape.dimensions)
    size = 1
    for d in dims:
        size *= d
    if size < blocks.MIN_ELEMENTS:
        return None
    for o in inst.operands:  # elementwise: each operand of the result's shape, or a scalar
        if o.shape.is_tuple or (o.shape.dimensions and
                                tuple(int(d) for d in o.shape.dimensions) != dims):
            return None
    return dims


def _wire(run: Run, insts: list[Any], last_read: dict[int, int], root: Any) -> None:
    defined: set[int] = set()
    for k in run.body:
        inst = insts[k]
        for o in inst.operands:
            key = id(o)
            if key in defined or key in run.inputs or key in run.scalars:
                continue
            (run.scalars if not o.shape.dimensions else run.inputs).append(key)
            if o.opcode == "broadcast" and not o.operands[0].shape.dimensions:
                run.splats.add(key)
        defined.add(id(inst))
        if last_read.get(id(inst), -1) >= run.stop or inst is root:
            run.outputs.add(id(inst))


def run_blocks(run: Run, plan: list[tuple[Any, list[int]]], evaluate: Any,
               env: dict[int, Any]) -> None:
    """Evaluate ``run``'s body block by block with ``evaluate(inst, operand values)`` (the
    evaluator's dispatcher) from the values in ``env``; store its outputs there. Where the
    values do not have the declared shapes (a scalar computation the evaluator calls on whole
    arrays at once, HE5) the body is evaluated one instruction at a time."""
    size = 1
    for d in run.dims:
        size *= d
    if any(np.shape(env[k]) != run.dims for k in run.inputs) \
            or any(np.ndim(env[k]) for k in run.scalars):
        for k in run.body:
            inst = plan[k][0]
            env[id(inst)] = evaluate(inst, [env[id(o)] for o in inst.operands])
        return

    def step(inst: Any) -> blocks.Step:
        return lambda block: evaluate(inst, [block[id(o)] for o in inst.operands])

    splats = {key: chain.Const(np.asarray(env[key]).reshape(-1)[:1]) for key in run.splats}
    items = []
    for inst in (plan[k][0] for k in run.body):
        ops = chain_ops(inst, splats)
        items.append(chain.Item(id(inst), step(inst), tuple(id(o) for o in inst.operands), ops,
                                dtype_of(inst.shape.element_type) if ops else None))
    steps = chain.compile_steps(items, set(run.outputs))
    outs = blocks.run_in_blocks(size, {key: env[key] for key in run.inputs}, steps,
                                set(run.outputs), {key: env[key] for key in run.scalars})
    for key, out in outs.items():
        env[int(key)] = out.reshape(run.dims)  # type: ignore[call-overload]


# -- the instructions a C chain evaluates (decision EM-15) ------------------------------------

P = PrimitiveType
#: element types whose values a chain's float32 registers hold, and the rounding to each
_ROUND = {P.F32: None, P.BF16: "round_bf16", P.F16: "round_fp16"}
_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
           "maximum": "max", "minimum": "min"}
_UNARY = {"negate": "neg", "abs": "abs", "sqrt": "sqrt"}
_COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}


def chain_ops(inst: Any, splats: dict[int, chain.Const]) -> list[chain.Op] | None:
    """``inst``'s value as chain operations, where it is the handler's (``hlo/ops.py``) on
    operands without a NaN: the float32 IEEE operation on the float32 values of the operands,
    rounded once to nearest even to a bf16 / f16 result (round_to, no saturation); compare and
    select exact; a convert between these types one rounding of the exact value. None
    otherwise. ``splats``: the operands that are one value everywhere, by id."""
    t = inst.shape.element_type
    op, key = inst.opcode, id(inst)
    args = tuple(splats.get(id(o), id(o)) for o in inst.operands)
    types = [o.shape.element_type for o in inst.operands]
    if op == "compare":
        name = _COMPARE.get(inst.attr("direction") or "")
        if name is None or inst.attr("type") == "TOTALORDER" or types[0] not in _ROUND:
            return None
        return [(name, key, args)]
    if t not in _ROUND:
        return None
    if op == "select":
        return [("select", key, args)] if types[1] == t and types[2] == t else None
    if op == "convert":
        return [(_ROUND[t] or "copy", key, args)] if types[0] in _ROUND else None
    name = _BINARY.get(op) or _UNARY.get(op)
    if name is None or any(u != t for u in types):
        return None
    return chain.rounded(name, key, args, _ROUND[t])
