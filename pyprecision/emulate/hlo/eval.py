"""Evaluate an HLO module on NumPy data: ``run_hlo(module, args) -> list[ndarray]``.

Every instruction's result is rounded to its element type (``hlo_numeric.round_to``: the cast
core for bf16/f16/fp8, NumPy for f32, exact f64, wraparound integers, XLA float→int converts).
Opcodes live in ``hlo_ops`` (elementwise), ``hlo_shape_ops`` (data movement) and ``hlo_dot``
(dot, batch norm); this file holds the dispatcher and the opcodes that call computations
(call, fusion, while, conditional, reduce) plus tuples. Decisions (dot accumulation
order, transcendental functions, reduce order): docs/decisions/hlo-eval.md.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

import numpy as np

from pyprecision.emulate.hlo import dot as hlo_dot
from pyprecision.emulate.hlo.eval_calls import VECTORIZABLE, CallingOps
from pyprecision.emulate.hlo.fused import plan_runs, run_blocks
from pyprecision.emulate.hlo.limits import (
    MAX_WHILE_ITERATIONS,
    Budget,
    Limits,
    TimeBudgetExceeded,
    check_module_memory,
    schedule,
    shape_bytes,
)
from pyprecision.emulate.hlo.ops import ELEMENTWISE
from pyprecision.emulate.hlo.shape_ops import SHAPE_OPS
from pyprecision.emulate.shared.conv import convolution
from pyprecision.emulate.shared.misc_ops import MISC_OPS
from pyprecision.emulate.shared.numeric import check_value, dtype_of
from pyprecision.emulate.shared.reduce import fast_fold, fold_steps, reduce_layout
from pyprecision.emulate.shared.sort import topk_op
from pyprecision.errors import EmulationError
from pyprecision.hlo import opcodes

Value = Union[np.ndarray, tuple]  # noqa: UP007 -- an array, or a tuple of Values

__all__ = ["Evaluator", "Limits", "MAX_WHILE_ITERATIONS", "run_hlo"]

_VECTORIZABLE = VECTORIZABLE


def run_hlo(module: Any, args: list[np.ndarray], limits: Limits | None = None) -> list[np.ndarray]:
    """Evaluate ``module``'s ENTRY computation on ``args`` (its parameters in order), within
    ``limits`` (while iterations, wall time, call depth, result size: see :class:`Limits`).

    Inputs must have exactly the parameter's shape and the NumPy dtype of its element type
    (bf16/fp8 as ml_dtypes arrays, s4/u4 as int8/uint8, pred as bool); a tuple-shaped parameter
    takes a tuple. The result is a list of arrays: the root value, or a tuple result flattened in
    order (depth first). Raises EmulationError on a mismatch or an unsupported opcode.
    """
    entry = module.entry
    params = entry.parameters
    if len(args) != len(params):
        raise EmulationError(f"ENTRY {entry.name} takes {len(params)} parameter(s), "
                             f"got {len(args)} input(s)")
    values = [_check_input(p, a, f"parameter {p.parameter_number} ({p.name})", p.shape)
              for p, a in zip(params, args, strict=True)]
    ev = Evaluator(module, limits)
    check_module_memory(module, ev.budget)  # before anything is allocated
    result = ev.call(entry, values)
    return _flatten(result)


def _check_input(param: Any, a: Any, what: str, shape: Any) -> Value:
    if shape.is_tuple:
        if not isinstance(a, (tuple, list)) or len(a) != len(shape.tuple_shapes):
            raise EmulationError(f"{what}: expected a tuple of {len(shape.tuple_shapes)} arrays "
                                 f"for {shape.to_text(with_layout=False)}")
        return tuple(_check_input(param, x, f"{what}[{i}]", s)
                     for i, (x, s) in enumerate(zip(a, shape.tuple_shapes, strict=True)))
    want_dt = dtype_of(shape.element_type)
    arr = np.asarray(a)
    want = shape.to_text(with_layout=False)
    if tuple(arr.shape) != tuple(shape.dimensions):
        raise EmulationError(f"{what}: expected shape {want}, got an array of shape "
                             f"{tuple(arr.shape)}")
    if arr.dtype != want_dt:
        raise EmulationError(f"{what}: expected {want} ({want_dt.name}), got dtype "
                             f"{arr.dtype.name}")
    check_value(arr, shape.element_type, what)
    return arr


def _flatten(v: Value) -> list[np.ndarray]:
    if isinstance(v, tuple):
        out: list[np.ndarray] = []
        for x in v:
            out.extend(_flatten(x))
        return out
    return [v]


class Evaluator(CallingOps):
    """Evaluates computations of one module; ``call(computation, args)`` is the entry point."""

    def __init__(self, module: Any, limits: Limits | None = None):
        self.module = module
        self.limits = limits or Limits()
        self.budget = Budget(self.limits)
        self._sized: set[int] = set()  # instructions whose result size was checked
        self._constants: dict[int, np.ndarray] = {}
        self._order: dict[int, list[tuple[Any, list[int]]]] = {}
        self._runs: dict[int, dict[int, Any]] = {}
        self.handlers: dict[str, Callable[[Any, list[Any]], Value]] = {
            **ELEMENTWISE, **SHAPE_OPS,
            "dot": hlo_dot.dot,
            "batch-norm-training": hlo_dot.batch_norm_training,
            "batch-norm-inference": hlo_dot.batch_norm_inference,
            "batch-norm-grad": hlo_dot.batch_norm_grad,
            "tuple": lambda inst, a: tuple(a),
            "get-tuple-element": _get_tuple_element,
            "constant": self._constant,
            "call": self._call,
            "fusion": self._fusion,
            "while": self._while,
            "conditional": self._conditional,
            "reduce": self._reduce,
            "convolution": convolution,
            "topk": topk_op,
            **MISC_OPS,
            **self.calling_handlers(),
        }

    # -- computations ----------------------------------------------------------------------
    def call(self, comp: Any, args: list[Value]) -> Value:
        """Evaluate computation ``comp`` with parameter values ``args``; return the root value."""
        params = comp.parameters
        if len(params) != len(args):
            raise EmulationError(f"computation {comp.name} takes {len(params)} parameter(s), "
                                 f"got {len(args)}")
        env: dict[int, Value] = {id(p): a for p, a in zip(params, args, strict=True)}
        plan = self._order.get(id(comp))
        if plan is None:
            plan = self._order[id(comp)] = schedule(comp)
            self._runs[id(comp)] = plan_runs(plan, comp.root)
        runs = self._runs[id(comp)]
        self.budget.enter(comp.name)
        try:
            i = 0
            while i < len(plan):
                run = runs.get(i)  # elementwise instructions block by block (EM-14)
                for k in run.hoisted if run is not None else (i,):
                    inst = plan[k][0]
                    if id(inst) not in env:
                        if inst.opcode == "parameter":
                            raise EmulationError(f"{inst.name}: parameter("
                                                 f"{inst.parameter_number}) of {comp.name} has "
                                                 "no argument")
                        env[id(inst)] = self.evaluate(inst, [env[id(o)] for o in inst.operands])
                if run is not None:
                    run_blocks(run, plan, self.evaluate, env)
                stop = run.stop if run is not None else i + 1
                for k in range(i, stop):
                    for key in plan[k][1]:  # values no later instruction reads (HE18)
                        env.pop(key, None)
                i = stop
        finally:
            self.budget.leave()
        return env[id(comp.root)]

    def evaluate(self, inst: Any, operands: list[Value]) -> Value:
        """The value of one instruction given its operand values."""
        handler = self.handlers.get(inst.opcode)
        if handler is None:
            rec = opcodes.record(inst.opcode)  # its record says why (decision OP1)
            why = f": {inst.opcode} {rec.evaluation}" if rec and rec.evaluation else ""
            raise EmulationError(f"unsupported opcode '{inst.opcode}' in instruction "
                                 f"{inst.name}{why}")
        self.budget.check_time(inst.name)
        if id(inst) not in self._sized:
            self.budget.check_bytes(shape_bytes(inst.shape), inst.name,
                                    f"the result {inst.shape.to_text(with_layout=False)}")
            self._sized.add(id(inst))
        try:
            return handler(inst, operands)
        except EmulationError:
            raise
        except (ValueError, TypeError, IndexError, KeyError) as e:
            raise EmulationError(f"{inst.name} ({inst.opcode}): {e}") from e

    # -- opcodes ---------------------------------------------------------------------------
    def _constant(self, inst: Any, args: list[Value]) -> np.ndarray:
        cached = self._constants.get(id(inst))
        if cached is not None:
            return cached
        if inst.literal_text is not None and "..." in inst.literal_text:
            raise EmulationError(f"{inst.name}: the constant's literal is elided ({{...}}) in "
                                 "the text, so its values are unknown")
        try:
            value = np.asarray(inst.literal())
        except EmulationError:
            raise
        except Exception as e:  # the literal parser's own errors
            raise EmulationError(f"{inst.name}: cannot read constant literal: {e}") from e
        want = dtype_of(inst.shape.element_type)
        if value.dtype != want:
            value = value.astype(want)
        value = value.reshape(tuple(inst.shape.dimensions))
        self._constants[id(inst)] = value
        return value

    def _call(self, inst: Any, args: list[Value]) -> Value:
        return self.call(self._called(inst, "to_apply"), args)

    def _fusion(self, inst: Any, args: list[Value]) -> Value:
        return self.call(self._called(inst, "calls"), args)

    def _while(self, inst: Any, args: list[Value]) -> Value:
        cond = self._called(inst, "condition")
        body = self._called(inst, "body")
        (state,) = args
        cap = self.limits.max_while_iterations
        go, k = True, 0
        try:
            for k in range(cap + 1):  # noqa: B007 -- k is reported
                go = bool(np.asarray(self.call(cond, [state])))
                if not go:
                    return state
                if k == cap:
                    break
                state = self.call(body, [state])
        except TimeBudgetExceeded as e:
            if e.while_reported:
                raise
            err = TimeBudgetExceeded(
                f"{inst.name}: while loop stopped after {k} iteration(s) by the time budget of "
                f"{self.limits.time_budget:g} s; its condition {cond.name} last gave {go} "
                "(time_budget= / hlo-run --time-budget)")
            err.while_reported = True
            raise err from None
        raise EmulationError(f"{inst.name}: while loop did not finish within {cap} iterations; its "
                             f"condition {cond.name} last gave {go} (max_while_iterations= / "
                             "hlo-run --max-while-iterations)")

    def _conditional(self, inst: Any, args: list[Value]) -> Value:
        """conditional(pred, t_arg, f_arg), true_computation=, false_computation=; or
        conditional(index, args...), branch_computations={...} (an index out of range takes the
        last branch, as XLA does)."""
        selector = np.asarray(args[0])
        if inst.attr("branch_computations") is not None:
            names = [n.strip().lstrip("%") for n in
                     inst.attr("branch_computations").strip("{}").split(",") if n.strip()]
            by_name = {c.name: c for c in inst.called_computations}
            if not names or any(n not in by_name for n in names):
                raise EmulationError(f"{inst.name}: cannot resolve branch_computations")
            k = int(selector)
            k = k if 0 <= k < len(names) else len(names) - 1
            return self.call(by_name[names[k]], [args[1 + k]])
        if bool(selector):
            return self.call(self._called(inst, "true_computation"), [args[1]])
        return self.call(self._called(inst, "false_computation"), [args[2]])

    def _reduce(self, inst: Any, args: list[Value]) -> Value:
        """reduce(inputs..., inits...), dimensions={...}: the reducer is applied sequentially
        over the reduced elements in row-major order, starting from the init value."""
        n = len(args) // 2
        inputs = [_array(x, inst) for x in args[:n]]
        inits = [_array(x, inst) for x in args[n:]]
        dims = sorted(inst.attr_ints("dimensions") or [])
        comp = self._called(inst, "to_apply")
        moved, accs = reduce_layout(inputs, inits, dims)
        if n == 1:
            fast = fast_fold(comp, accs[0], moved[0])
            if fast is not None:
                return fast
        if all(i.opcode in _VECTORIZABLE for i in comp.instructions):
            accs = fold_steps(moved, accs, lambda a, e: self._apply_reducer(comp, a, e))
        else:
            shape = accs[0].shape
            accs = fold_steps(moved, accs,
                              lambda a, e: self._apply_scalarwise(comp, a, e, shape))
        return accs[0] if n == 1 else tuple(accs)

    def _apply_reducer(self, comp: Any, accs: list[np.ndarray],
                       elems: list[np.ndarray]) -> list[np.ndarray]:
        r = self.call(comp, [*accs, *elems])
        return list(r) if isinstance(r, tuple) else [r]

    def _apply_scalarwise(self, comp: Any, accs: list[np.ndarray], elems: list[np.ndarray],
                          shape: tuple[int, ...]) -> list[np.ndarray]:
        out = [a.copy() for a in accs]
        for idx in np.ndindex(*shape):
            r = self._apply_reducer(comp, [np.asarray(a[idx]) for a in accs],
                                    [np.asarray(e[idx]) for e in elems])
            for o, v in zip(out, r, strict=True):
                o[idx] = v
        return out


def _array(v: Value, inst: Any) -> np.ndarray:
    if isinstance(v, tuple):
        raise EmulationError(f"{inst.name}: {inst.opcode} got a tuple where an array is needed")
    return v


def _get_tuple_element(inst: Any, args: list[Value]) -> Value:
    (t,) = args
    idx = inst.attr_ints("index")
    if not isinstance(t, tuple) or not idx or not 0 <= idx[0] < len(t):
        raise EmulationError(f"{inst.name}: get-tuple-element index is out of range")
    return t[idx[0]]
