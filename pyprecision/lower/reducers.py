"""Reducers recognised by meaning, not by spelling (decision OP3).

A reducer (the ``to_apply`` of reduce, reduce-window and scatter) of two scalar parameters becomes
one IR reduce kind (add, mul, max, min, and, or) when what it computes is that kind, however it is
written:

* ``op(p0, p1)`` or ``op(p1, p0)`` for an opcode whose record has that reducer kind (the kinds are
  commutative: ``add(y, x) ≡ add``);
* on pred, any computation of pred elementwise opcodes (and, or, xor, not, compare, select, copy,
  pred constants) is run on all four argument pairs: its truth table *is* its meaning, so
  PyTorch/XLA's ``torch.all`` reducer ``and(compare(x, false), NE, compare(y, false), NE)`` is
  ``and`` and ``torch.any``'s ``or(...)`` is ``or``;
* on integers, ``select(compare(a, b), GT|GE, a, b)`` is max and LT|LE is min (also with the
  branches and the comparison swapped): equal integers are the same bits, so ties cannot differ.
  On floats it is not max (``select(NaN > y, NaN, y)`` is y; XLA's max propagates the NaN, and
  ``select(-0 > +0, -0, +0)`` depends on the order), so a float reducer written so is not a kind.
"""
from __future__ import annotations

from typing import Any

from pyprecision.hlo import opcodes, typed_attrs

__all__ = ["reducer_kind"]

_PRED_OPS = {"and", "or", "xor", "not", "compare", "select", "copy", "constant", "parameter",
             "convert"}
#: truth table over (p0, p1) in (F,F), (F,T), (T,F), (T,T) -> IR kind
_TABLES: dict[tuple[bool, ...], str] = {(False, False, False, True): "and", (False, True, True, True): "or"}
_MAX_MIN = {"GT": "max", "GE": "max", "LT": "min", "LE": "min"}
_FLIP = {"max": "min", "min": "max"}


def reducer_kind(comp: Any) -> str | None:
    """The IR reduce kind ``comp`` computes, or None (not a kind: lowered generically or refused)."""
    if comp is None:
        return None
    params = sorted(comp.parameters, key=lambda q: q.parameter_number or 0)
    if len(params) != 2 or any(p.shape.is_tuple or p.shape.dimensions for p in params):
        return None
    t = params[0].shape.element_type
    if params[1].shape.element_type != t or comp.root.shape.is_tuple:
        return None
    root = comp.root
    rec = opcodes.record(root.opcode)
    if rec is not None and rec.reducer is not None and _is_pair(root.operands, params):
        return rec.reducer
    if t.name == "PRED":
        return _pred_kind(comp, params)
    if t.name[0] in "SU":  # s8..s64, u8..u64
        return _select_kind(root, params)
    return None


def _is_pair(operands: list[Any], params: list[Any]) -> bool:
    return len(operands) == 2 and {id(o) for o in operands} == {id(p) for p in params}


def _select_kind(root: Any, params: list[Any]) -> str | None:
    """max / min for ``select(compare(a, b), a, b)`` of the two parameters in any arrangement."""
    if root.opcode != "select" or len(root.operands) != 3:
        return None
    pred, on_true, on_false = root.operands
    if pred.opcode != "compare" or not _is_pair([on_true, on_false], params):
        return None
    a, b = pred.operands
    if not _is_pair([a, b], params) or pred.attr("type") not in (None, "SIGNED", "UNSIGNED"):
        return None
    kind = _MAX_MIN.get(pred.attr("direction") or "")
    if kind is None:
        return None
    return kind if a is on_true else _FLIP[kind]


def _pred_kind(comp: Any, params: list[Any]) -> str | None:
    """Run a pred reducer on the four argument pairs; its truth table names the kind."""
    order = comp.post_order([comp.root])
    if any(i.opcode not in _PRED_OPS or i.shape.is_tuple or i.shape.dimensions
           or i.shape.element_type.name != "PRED" and i.opcode != "compare" for i in order):
        return None
    table = []
    for x in (False, True):
        for y in (False, True):
            v = _run(order, {id(params[0]): x, id(params[1]): y})
            if v is None:
                return None
            table.append(v)
    return _TABLES.get(tuple(table))


def _run(order: list[Any], env: dict[int, bool]) -> bool | None:
    for inst in order:
        if id(inst) in env:
            continue
        a = [env[id(o)] for o in inst.operands]
        op = inst.opcode
        if op == "constant":
            text = (inst.literal_text or "").strip().strip("{}").strip()
            if text not in ("true", "false", "0", "1"):
                return None
            v = text in ("true", "1")
        elif op == "parameter":
            return None
        elif op in ("copy", "convert"):
            v = a[0]
        elif op == "not":
            v = not a[0]
        elif op == "and":
            v = a[0] and a[1]
        elif op == "or":
            v = a[0] or a[1]
        elif op == "xor":
            v = a[0] != a[1]
        elif op == "select":
            v = a[1] if a[0] else a[2]
        else:  # compare of pred operands: false < true
            if any(o.shape.element_type.name != "PRED" for o in inst.operands):
                return None
            direction, _ = typed_attrs.comparison(inst)
            p, q = int(a[0]), int(a[1])
            v = {"EQ": p == q, "NE": p != q, "LT": p < q, "LE": p <= q, "GT": p > q,
                 "GE": p >= q}[direction]
        env[id(inst)] = v
    return env[id(order[-1])]
