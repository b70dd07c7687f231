"""A structural copy of a module that the passes can rewrite as they would a fresh lowering
(decision P21).

``copy.deepcopy`` is wrong for the IR in two ways: it copies the ``DType`` singletons (a frozen
dataclass has no ``__deepcopy__``, so every copied value gets a new, equal-but-not-identical dtype,
and the passes' and the evaluator's ``dtype is ir.float32`` tests fail on it), and it recurses
along the blocks' ``prev``/``next`` chains (one Python frame per link: a long function exceeds the
recursion limit). :func:`clone_module` copies every IR object (module, functions, blocks,
instructions, values, scalars, tensors, views) without recursion, keeps the order of every list,
dict and set (use lists, tensor accesses, name sets: what the passes iterate), the names, ids and
name counters (so names a pass makes in the copy are the ones it makes in a fresh lowering), and
shares what no pass changes in place: dtypes, strings, numbers, debug locations, and constant
tensors' NumPy arrays (a pass that retypes a constant assigns a new array; it never writes into
the old one).
"""

from __future__ import annotations

from typing import Any

from pyprecision.ir.core import Block, Function, Module
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.tensors import NeuronAP, Tensor
from pyprecision.ir.values import ScalarValue, Use, Value

__all__ = ["clone_module"]

#: the IR classes whose instances are copied (subclasses included)
_COPIED = (Instruction, Value, ScalarValue, Tensor, NeuronAP, Block, Function, Module)
#: attributes shared as they are, whatever they hold (a debug location is never mutated)
_SHARED_ATTRS = frozenset({"dl", "value"})
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes, complex})


class _Cloner:
    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.todo: list[tuple[Any, Any]] = []
        self.copied: dict[type, bool] = {}

    def is_copied(self, cls: type) -> bool:
        known = self.copied.get(cls)
        if known is None:
            known = self.copied[cls] = issubclass(cls, _COPIED)
        return known

    def obj(self, x: Any) -> Any:
        """The copy of an IR object (a shell filled later: no recursion along references)."""
        new = self.memo.get(id(x))
        if new is None:
            new = object.__new__(type(x))
            self.memo[id(x)] = new
            self.todo.append((x, new))
        return new

    def map(self, x: Any) -> Any:
        cls = type(x)
        if cls in _ATOMIC:
            return x
        if self.is_copied(cls):
            return self.obj(x)
        if cls is list:
            return [self.map(e) for e in x]
        if cls is Use:
            return Use(self.obj(x.user), x.index)
        if cls is tuple:
            out = tuple(self.map(e) for e in x)
            return x if all(a is b for a, b in zip(out, x, strict=True)) else out
        if cls is dict:
            return {self.map(k): self.map(v) for k, v in x.items()}
        if cls is set:
            return x.copy() if all(type(e) in _ATOMIC for e in x) else {self.map(e) for e in x}
        return x  # dtypes, arrays, locations, frozen data: shared

    def run(self) -> None:
        todo = self.todo
        while todo:
            old, new = todo.pop()
            d = {}
            for k, v in old.__dict__.items():
                d[k] = v if k in _SHARED_ATTRS and not self.is_copied(type(v)) else self.map(v)
            new.__dict__.update(d)


def clone_module(module: Module) -> Module:
    """A copy of ``module`` that prints the same and that every pass rewrites exactly as it
    rewrites ``module`` (names, ids, use and access orders kept); ``module`` is not changed and
    shares only immutable data and constant arrays with the copy."""
    c = _Cloner()
    out = c.obj(module)
    c.run()
    return out
