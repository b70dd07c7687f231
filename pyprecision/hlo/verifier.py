"""The HLO verifier (after XLA's ``HloVerifier``): run by :func:`pyprecision.hlo.parse` and after
every pass that changed a module.

Checks, in this order, the first failure being the one reported:

1. per computation: at least one instruction, unique names, at most one ROOT, operands inside
   the computation, parameter numbers distinct and dense (0..n-1);
2. every instruction: a known opcode, layouts that fit their shapes' ranks (a permutation of
   the dimensions, or ``{}`` for scalars);
3. no operand cycle or self-reference (an iterative walk: a cycle is an error, never a hang);
4. the call graph: no computation calls itself, directly or through others;
5. every instruction's operand count and result shape against its opcode's rule
   (``opcodes.OPCODES``, one record per opcode: XLA's ShapeInference; layouts are not compared);
6. the module's ``entry_computation_layout`` (when present) against the ENTRY signature.

:func:`verify` raises :class:`VerifyError` ``file:line:col: message`` (the position is known for
parsed modules); :func:`check` is the same walk raising :class:`ParseError` (what ``parse`` uses).
"""
from __future__ import annotations

from typing import Any

from pyprecision.errors import ParseError, VerifyError
from pyprecision.hlo.model import HloComputation, HloInstruction, HloModule
from pyprecision.hlo.opcodes import OPCODES, infer
from pyprecision.hlo.shape import Shape
from pyprecision.hlo.shape_inference import compatible


class _Failure(Exception):
    def __init__(self, message: str, where: Any = None):
        super().__init__(message)
        self.message = message
        self.where = where


def verify(module: HloModule, after: str | None = None) -> None:
    """Raise VerifyError (``file:line:col: computation: instruction: reason``) at the first rule
    the module breaks; ``after`` names the pass that just ran (it ends the message)."""
    try:
        _verify(module)
    except _Failure as f:
        line, col = _position(f.where)
        suffix = f" (after pass '{after}')" if after else ""
        where = f"{module.filename}:{line}:{col}: " if line else ""  # made by a pass: no line
        raise VerifyError(f"{where}{f.message}{suffix}") from None


def check(module: HloModule) -> None:
    """:func:`verify` raising ParseError with the failing instruction's line and column."""
    try:
        _verify(module)
    except _Failure as f:
        line, col = _position(f.where)
        raise ParseError(f.message, line, col, module.filename) from None


def _position(where: Any) -> tuple[int, int]:
    loc = getattr(where, "location", None)
    return loc if loc is not None else (0, 0)


def _h(s: Shape) -> str:
    return s.to_text(with_layout=False)


def _verify(module: HloModule) -> None:
    for comp in module.computations:
        _structure(comp)
    for comp in module.computations:
        for inst in comp.instructions:
            _opcode_and_layout(comp, inst)
        _no_cycles(comp)
    _no_recursion(module)
    for comp in module.computations:
        for inst in comp.instructions:
            _shape_rule(comp, inst)
    _entry_layout(module)


def _structure(comp: HloComputation) -> None:
    if not comp.instructions:
        raise _Failure(f"{comp.name}: the computation has no instructions", comp)
    members = {id(i) for i in comp.instructions}
    names: set[str] = set()
    roots = [i for i in comp.instructions if i.is_root]
    if len(roots) > 1:
        raise _Failure(f"{comp.name}: {len(roots)} ROOT instructions ({roots[0].name}, "
                       f"{roots[1].name})", roots[1])
    numbers: dict[int, HloInstruction] = {}
    for inst in comp.instructions:
        if inst.name in names:
            raise _Failure(f"{comp.name}: duplicate instruction name '{inst.name}'", inst)
        names.add(inst.name)
        if inst.opcode == "parameter":
            n = inst.parameter_number
            if n is None or n in numbers:
                raise _Failure(f"{comp.name}: parameter({n}) appears twice", inst)
            numbers[n] = inst
        for op in inst.operands:
            if id(op) not in members:
                raise _Failure(f"{comp.name}: '{inst.name}' uses '{op.name}', which is not in "
                               "the computation", inst)
    missing = [k for k in range(len(numbers)) if k not in numbers]
    if missing:
        top = max(numbers)
        raise _Failure(f"{comp.name}: parameter numbers must be 0..{len(numbers) - 1}; "
                       f"parameter({missing[0]}) is missing", numbers[top])


def _opcode_and_layout(comp: HloComputation, inst: HloInstruction) -> None:
    if inst.opcode not in OPCODES:
        raise _Failure(f"{comp.name}: {inst.name}: unknown opcode '{inst.opcode}'", inst)
    _layouts(comp, inst, inst.shape)


def _layouts(comp: HloComputation, inst: HloInstruction, shape: Shape) -> None:
    stack = [shape]
    while stack:
        s = stack.pop()
        if s.is_tuple:
            stack.extend(s.tuple_shapes)
            continue
        if s.layout is None:
            continue
        m2m = s.layout.minor_to_major
        if sorted(m2m) != list(range(s.rank)):
            raise _Failure(f"{comp.name}: {inst.name}: layout {s.layout.to_text()} does not fit "
                           f"the rank-{s.rank} shape {_h(s)} (it must list each dimension "
                           "once)", inst)


def _no_cycles(comp: HloComputation) -> None:
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in comp.instructions:
        if id(start) in state:
            continue
        stack: list[tuple[HloInstruction, int]] = [(start, 0)]
        state[id(start)] = 1
        while stack:
            inst, k = stack[-1]
            if k == len(inst.operands):
                stack.pop()
                state[id(inst)] = 2
                continue
            stack[-1] = (inst, k + 1)
            op = inst.operands[k]
            s = state.get(id(op))
            if s == 1:
                path = [i.name for i, _ in stack]
                cycle = path[path.index(op.name):] + [op.name]
                what = ("uses itself" if op is inst else
                        "is in an operand cycle: " + " -> ".join(cycle))
                raise _Failure(f"{comp.name}: {inst.name} {what}", inst)
            if s is None:
                state[id(op)] = 1
                stack.append((op, 0))


def _callees(comp: HloComputation) -> list[tuple[HloInstruction, HloComputation]]:
    return [(i, c) for i in comp.instructions for c in i.called_computations]


def _no_recursion(module: HloModule) -> None:
    state: dict[int, int] = {}
    for start in module.computations:
        if id(start) in state:
            continue
        stack = [(start, _callees(start), 0)]
        state[id(start)] = 1
        while stack:
            comp, calls, k = stack[-1]
            if k == len(calls):
                stack.pop()
                state[id(comp)] = 2
                continue
            stack[-1] = (comp, calls, k + 1)
            inst, callee = calls[k]
            s = state.get(id(callee))
            if s == 1:
                what = "calls itself" if callee is comp else f"calls {callee.name}, which calls " \
                    f"back into {comp.name}"
                raise _Failure(f"{comp.name}: {inst.name}: the computation {what} (HLO has no "
                               "recursion)", inst)
            if s is None:
                state[id(callee)] = 1
                stack.append((callee, _callees(callee), 0))


def _shape_rule(comp: HloComputation, inst: HloInstruction) -> None:
    try:
        want = infer(inst, [o.shape for o in inst.operands])
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise _Failure(f"{comp.name}: {inst.name}: {e}", inst) from None
    if want is not None and not compatible(want, inst.shape):
        raise _Failure(f"{comp.name}: {inst.name}: {inst.opcode} of "
                       + ", ".join(_h(o.shape) for o in inst.operands)
                       + f" gives {_h(want)}, but the instruction says {_h(inst.shape)}", inst)


def _entry_layout(module: HloModule) -> None:
    raw = module.attr("entry_computation_layout")
    if raw is None:
        return
    from pyprecision.hlo.shape_text import parse_program_shape

    entry = module.entry
    try:
        ps = parse_program_shape(raw)
    except ParseError as e:
        raise _Failure(f"entry_computation_layout: {e.message}", entry) from None
    params = entry.parameters
    if len(ps.parameters) != len(params):
        raise _Failure(f"entry_computation_layout has {len(ps.parameters)} parameter(s), ENTRY "
                       f"{entry.name} has {len(params)}", entry)
    for p, s in zip(params, ps.parameters, strict=True):
        if not compatible(p.shape, s):
            raise _Failure(f"entry_computation_layout gives parameter {p.parameter_number} the "
                           f"shape {_h(s)}, ENTRY {entry.name} says {_h(p.shape)}", p)
    if ps.result is not None and not compatible(ps.result, entry.root.shape):
        raise _Failure(f"entry_computation_layout's result {_h(ps.result)} differs from ENTRY "
                       f"{entry.name}'s root {_h(entry.root.shape)}", entry.root)
