"""Which elements of each HLO instruction's result reach an output (decision X1).

A backward pass over the module from the ENTRY root: the root's elements all reach an output; an
elementwise op passes its mask to its operands; ``select`` passes it to the branch its predicate
chose, element by element (the predicate's values come from the all-fp32 reference run); ``slice``,
``dynamic-slice``, ``pad``, ``concatenate``, ``broadcast``, ``reshape``, ``transpose`` move it to
the operand elements they read; a ``call`` passes it into its callee and back out through its
parameters. Every other op is conservative: if any of its elements reach an output, every element
of every operand does. The masks are keyed by row path (``call.1/select.3``), as the rows are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["reach_masks"]

_ELEMENTWISE = frozenset([
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power", "atan2",
    "and", "or", "xor", "not", "shift-left", "shift-right-arithmetic", "shift-right-logical",
    "negate", "abs", "sqrt", "rsqrt", "cbrt", "floor", "ceil", "round-nearest-even",
    "round-nearest-afz", "sign", "copy", "exponential", "exponential-minus-one", "log", "log-plus-one",
    "tanh",
    "logistic", "sine", "cosine", "tan", "erf", "is-finite", "compare", "convert", "clamp", "real",
    "imag", "popcnt", "count-leading-zeros", "reduce-precision",
])
_SLICE_DIM = re.compile(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\]")

Values = Callable[[str], "np.ndarray | None"]  # row path -> the reference values, if known
Mask = np.ndarray


def reach_masks(module: Any, values: Values) -> dict[str, Mask]:
    """``{row path: bool array of the instruction's result shape}``; tuple-shaped instructions get a
    0-d array (any element reached)."""
    out: dict[str, Mask] = {}
    entry = module.entry
    _backprop(entry, "", _full(entry.root.shape, True), values, out)
    return out


def _full(shape: Any, v: bool) -> Mask:
    if shape.is_tuple:
        return np.array(v)
    return np.full(tuple(shape.dimensions), v, dtype=bool)


def _merge(masks: dict[int, Mask], inst: Any, m: Mask) -> None:
    old = masks.get(id(inst))
    if old is None:
        masks[id(inst)] = m.copy()
    elif old.shape == m.shape:
        old |= m
    else:  # a shape mismatch: be conservative
        masks[id(inst)] = _full(inst.shape, bool(old.any() or m.any()))


def _backprop(comp: Any, prefix: str, root_mask: Mask, values: Values,
              out: dict[str, Mask]) -> list[Mask]:
    """Masks of ``comp``'s parameters given its root's mask; records every instruction's mask."""
    masks: dict[int, Mask] = {id(comp.root): root_mask}
    order = comp.post_order([comp.root])
    for inst in reversed(order):
        m = masks.get(id(inst))
        if m is None:
            m = masks[id(inst)] = _full(inst.shape, False)
        out[prefix + inst.name] = m
        if not inst.operands:
            continue
        if not m.any():
            for o in inst.operands:
                _merge(masks, o, _full(o.shape, False))
            continue
        if inst.opcode == "call" and len(inst.called_computations) == 1:
            callee = inst.called_computations[0]
            params = _backprop(callee, f"{prefix}{inst.name}/", m, values, out)
            by_number = {p.parameter_number: pm for p, pm in zip(callee.parameters, params,
                                                                  strict=True)}
            for i, o in enumerate(inst.operands):
                _merge(masks, o, by_number.get(i, _full(o.shape, True)))
            continue
        for o, om in zip(inst.operands, _operand_masks(inst, m, prefix, values), strict=True):
            _merge(masks, o, om)
    return [masks.get(id(p), _full(p.shape, False)) for p in comp.parameters]


def _operand_masks(inst: Any, m: Mask, prefix: str, values: Values) -> list[Mask]:
    ops = inst.operands
    try:
        got = _precise(inst, m, prefix, values)
    except (ValueError, IndexError, TypeError):
        got = None
    if got is None or any(g.shape != _full(o.shape, False).shape for g, o in zip(got, ops,
                                                                                 strict=True)):
        return [_full(o.shape, True) for o in ops]
    return got


def _same(o: Any, m: Mask) -> Mask:
    """An elementwise operand: the result's mask, or all of it for a broadcast scalar."""
    if o.shape.is_tuple or tuple(o.shape.dimensions) != m.shape:
        return _full(o.shape, bool(m.any()))
    return m


def _precise(inst: Any, m: Mask, prefix: str, values: Values) -> list[Mask] | None:
    op, ops = inst.opcode, inst.operands
    if op in _ELEMENTWISE:
        return [_same(o, m) for o in ops]
    if op == "select":
        pred = values(prefix + ops[0].name)
        if pred is None or np.shape(pred) != m.shape:  # unknown lanes: both branches, elementwise
            return [_same(o, m) for o in ops]
        p = np.asarray(pred) != 0
        return [_same(ops[0], m), _same(ops[1], m & p), _same(ops[2], m & ~p)]
    if op in ("reshape", "bitcast"):
        return [m.reshape(tuple(ops[0].shape.dimensions))]
    if op == "transpose":
        perm = inst.attr_ints("dimensions") or []
        return [np.transpose(m, np.argsort(perm))]
    if op == "broadcast":
        dims = inst.attr_ints("dimensions") or []
        other = tuple(d for d in range(m.ndim) if d not in dims)
        r = np.any(m, axis=other) if other else m
        return [np.transpose(r, np.argsort(np.argsort(dims))) if dims else r]
    if op == "slice":
        parts = _SLICE_DIM.findall(inst.attr("slice") or "")
        om = _full(ops[0].shape, False)
        om[tuple(slice(int(a), int(b), int(s) if s else 1) for a, b, s in parts)] = m
        return [om]
    if op == "concatenate":
        (d,) = inst.attr_ints("dimensions") or [0]
        cuts = np.cumsum([o.shape.dimensions[d] for o in ops])[:-1]
        return list(np.split(m, cuts, axis=d))
    if op == "dynamic-slice":
        return _dynamic_slice(inst, m, prefix, values)
    if op == "pad":
        return _pad(inst, m)
    return None


def _dynamic_slice(inst: Any, m: Mask, prefix: str, values: Values) -> list[Mask] | None:
    x, *idx = inst.operands
    starts = []
    for o, n, s in zip(idx, x.shape.dimensions, m.shape, strict=True):
        v = values(prefix + o.name)
        if v is None or np.size(v) != 1:
            return None
        starts.append(int(min(max(int(np.asarray(v).reshape(-1)[0]), 0), n - s)))
    om = _full(x.shape, False)
    om[tuple(slice(a, a + s) for a, s in zip(starts, m.shape, strict=True))] = m
    return [om] + [_full(o.shape, True) for o in idx]


def _pad(inst: Any, m: Mask) -> list[Mask] | None:
    cfg = inst.attr("padding") or ""
    parts = [tuple(int(v) for v in p.split("_")) for p in cfg.split("x") if p]
    if len(parts) != m.ndim or any(len(p) != 3 and len(p) != 2 for p in parts):
        return None
    sel = []
    for p, n in zip(parts, inst.operands[0].shape.dimensions, strict=True):
        lo, _hi, interior = (*p, 0) if len(p) == 2 else p
        if lo < 0 or _hi < 0:
            return None
        sel.append(slice(lo, lo + (n - 1) * (interior + 1) + 1, interior + 1) if n else slice(0, 0))
    return [m[tuple(sel)], _full(inst.operands[1].shape, bool(m.any()))]
