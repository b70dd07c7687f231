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

Each IR class has its own copier (decision P23) that knows the attributes the class's constructor
makes (an instruction's links, result, operands and views; a value's owner and uses; ...), and
takes any other attribute through the generic :meth:`_Cloner.map`, so an attribute added later
is still copied, only more slowly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyprecision.ir.core import Block, Function, Module
from pyprecision.ir.gc_pause import paused_gc
from pyprecision.ir.instructions import Instruction
from pyprecision.ir.tensors import NeuronAP, Tensor
from pyprecision.ir.values import ScalarValue, Use, Value

__all__ = ["clone_module"]

#: the IR classes whose instances are copied (subclasses included)
_COPIED = (Instruction, Value, ScalarValue, Tensor, NeuronAP, Block, Function, Module)
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes, complex})


class _Cloner:
    def __init__(self) -> None:
        #: id(original) → its copy; id(None) → None, so a copier can look up an optional link
        self.memo: dict[int, Any] = {id(None): None}
        self.todo: list[tuple[Any, Any]] = []
        self.copied: dict[type, bool] = {}
        self.fillers: dict[type, tuple[_Filler, _Filler]] = {}

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

    def opt(self, x: Any) -> Any:
        """The copy of an IR object or None."""
        return None if x is None else self.obj(x)

    def shells(self, module: Module) -> None:
        """Make the copies' shells of everything the structure reaches (functions, tensors and
        their views, blocks, instructions, their results, scalar operands and views), so the
        copiers find them in ``memo``; anything else is made when a copier first meets it."""
        memo, todo = self.memo, self.todo
        new = object.__new__
        objs: list[Any] = [module]
        for f in module._functions.values():
            objs.append(f)
            for t in f._tensors.values():
                objs.append(t)
                objs.extend(t._aps)
            for b in f.blocks:
                objs.append(b)
                i = b.first
                while i is not None:
                    objs.append(i)
                    if i.result is not None:
                        objs.append(i.result)
                    objs.extend(v for v in i._operands if type(v) is ScalarValue)
                    objs.extend(i.aps)
                    i = i.next
        for x in objs:
            if id(x) not in memo:
                n = memo[id(x)] = new(type(x))
                todo.append((x, n))

    def map(self, x: Any) -> Any:
        """The copy of any attribute value: IR objects copied, containers rebuilt, the rest
        (dtypes, arrays, locations, frozen data) shared."""
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
            if all(type(e) in _ATOMIC for e in x):
                return x
            out = tuple(self.map(e) for e in x)
            return x if all(a is b for a, b in zip(out, x, strict=True)) else out
        if cls is dict:
            return {self.map(k): self.map(v) for k, v in x.items()}
        if cls is set:
            return x.copy() if all(type(e) in _ATOMIC for e in x) else {self.map(e) for e in x}
        return x

    def rest(self, d: dict[str, Any], known: frozenset[str]) -> None:
        """Map, in place, every attribute of ``d`` its class's copier does not know."""
        for k in d.keys() - known:
            v = d[k]
            t = type(v)
            if t in _ATOMIC or (t is tuple and all(type(e) in _ATOMIC for e in v)):
                continue
            d[k] = self.map(v)

    def filler(self, cls: type) -> tuple[_Filler, _Filler]:
        got = self.fillers.get(cls)
        if got is None:
            got = next(((fast, slow) for base, fast, slow in _FILLERS if issubclass(cls, base)),
                       (_fill_generic, _fill_generic))  # fmt: skip
            self.fillers[cls] = got
        return got

    def run(self) -> None:
        todo, fillers = self.todo, self.fillers
        while todo:
            old, new = todo.pop()
            cls = type(old)
            fast, slow = fillers.get(cls) or self.filler(cls)
            try:
                d = fast(self, old)
            except KeyError:  # a reference the shells did not reach: make it now
                d = slow(self, old)
            new.__dict__.update(d)


_Filler = Callable[[_Cloner, Any], dict[str, Any]]


def _fill_generic(c: _Cloner, old: Any) -> dict[str, Any]:
    d = {}
    for k, v in old.__dict__.items():
        d[k] = v if k == "dl" and not c.is_copied(type(v)) else c.map(v)
    return d


# Each class has a fast copier, which finds every IR object it links to in ``memo`` (a KeyError
# when not), and a slow one, which makes the copies it needs.

_INSTRUCTION = frozenset({"parent", "prev", "next", "result", "_operands", "aps", "dl"})


def _fast_instruction(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()  # dl (never mutated) and the rest shared until mapped below
    m = c.memo
    d["parent"] = m[id(d["parent"])]
    d["prev"] = m[id(d["prev"])]
    d["next"] = m[id(d["next"])]
    d["result"] = m[id(d["result"])]
    d["_operands"] = [m[id(v)] for v in d["_operands"]]
    d["aps"] = [m[id(ap)] for ap in d["aps"]]
    c.rest(d, _INSTRUCTION)
    return d


def _slow_instruction(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    for k in ("parent", "prev", "next", "result"):
        d[k] = c.opt(d[k])
    d["_operands"] = [c.opt(v) for v in d["_operands"]]
    d["aps"] = [c.obj(ap) for ap in d["aps"]]
    c.rest(d, _INSTRUCTION)
    return d


_VALUE = frozenset({"owner", "_uses", "shape", "_dtype"})


def _fast_value(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    m = c.memo
    d["owner"] = m[id(d["owner"])]
    d["_uses"] = {Use(m[id(u.user)], u.index): None for u in d["_uses"]}
    c.rest(d, _VALUE)
    return d


def _slow_value(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    d["owner"] = c.opt(d["owner"])
    d["_uses"] = {Use(c.obj(u.user), u.index): None for u in d["_uses"]}
    c.rest(d, _VALUE)
    return d


_TENSOR = frozenset({"function", "_aps", "_counts", "_insts", "shape", "_dtype", "value"})


def _fast_tensor(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    m = c.memo
    d["function"] = m[id(d["function"])]
    d["_aps"] = {m[id(ap)]: None for ap in d["_aps"]}
    d["_counts"] = d["_counts"].copy()
    d["_insts"] = None  # a cache of the views' instructions, rebuilt when asked
    c.rest(d, _TENSOR)
    return d


def _slow_tensor(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    d["function"] = c.opt(d["function"])
    d["_aps"] = {c.obj(ap): None for ap in d["_aps"]}
    d["_counts"] = d["_counts"].copy()
    d["_insts"] = None
    c.rest(d, _TENSOR)
    return d


_VIEW = frozenset({"tensor", "owner", "_index", "_reinterpret"})


def _fast_view(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    m = c.memo
    d["tensor"] = m[id(d["tensor"])]
    d["owner"] = m[id(d["owner"])]
    d["_index"] = m[id(d["_index"])]
    c.rest(d, _VIEW)
    return d


def _slow_view(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    for k in ("tensor", "owner", "_index"):
        d[k] = c.opt(d[k])
    c.rest(d, _VIEW)
    return d


_BLOCK = frozenset({"parent", "first", "last"})


def _fill_block(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    for k in ("parent", "first", "last"):
        d[k] = c.opt(d[k])
    c.rest(d, _BLOCK)
    return d


_FUNCTION = frozenset({"module", "_tensors", "blocks", "_names", "_suffix"})


def _fill_function(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    d["module"] = c.opt(d["module"])
    d["_tensors"] = {k: c.obj(t) for k, t in d["_tensors"].items()}
    d["blocks"] = [c.obj(b) for b in d["blocks"]]
    d["_names"] = d["_names"].copy()
    d["_suffix"] = d["_suffix"].copy()
    c.rest(d, _FUNCTION)
    return d


def _fill_plain(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    c.rest(d, frozenset())
    return d


def _fill_module(c: _Cloner, old: Any) -> dict[str, Any]:
    d = old.__dict__.copy()
    d["_functions"] = {k: c.obj(f) for k, f in d["_functions"].items()}
    c.rest(d, frozenset({"_functions"}))
    return d


#: (class, its fast copier, its slow copier), most specific first; a class none of them covers
#: is copied generically
_FILLERS: list[tuple[type, _Filler, _Filler]] = [
    (Instruction, _fast_instruction, _slow_instruction),
    (Value, _fast_value, _slow_value),
    (Tensor, _fast_tensor, _slow_tensor),
    (NeuronAP, _fast_view, _slow_view),
    (Block, _fill_block, _fill_block),
    (Function, _fill_function, _fill_function),
    (Module, _fill_module, _fill_module),
    (ScalarValue, _fill_plain, _fill_plain),
]


def clone_module(module: Module) -> Module:
    """A copy of ``module`` that prints the same and that every pass rewrites exactly as it
    rewrites ``module`` (names, ids, use and access orders kept); ``module`` is not changed and
    shares only immutable data and constant arrays with the copy."""
    # the copy allocates thousands of objects and frees none: a collection would only walk them
    # (a third of the time)
    with paused_gc(keep=True):  # the copy is kept (P34)
        c = _Cloner()
        c.shells(module)
        out = c.obj(module)
        c.run()
    return out
