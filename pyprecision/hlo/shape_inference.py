"""The shape rules of the elementwise and data-movement opcodes (after XLA's ``ShapeInference`` and
``ShapeVerifier``), as the verifier checks them; the records that name them, one per opcode, are
in :mod:`pyprecision.hlo.opcodes` (``opcodes.OPCODES[name] = Rule(min_operands, max_operands,
infer)``), which imports the rules: this module and ``shape_rules_compute`` import no table (a
leaf, so no import circle). ``infer(inst, operand_shapes)`` returns
the result shape the rule implies (compared with the declared one, layouts ignored) or None where
the rule constrains the operands only; a violation raises ValueError with the reason. Opcodes with
``infer=None`` are known (they parse and print) but their shapes are not checked — collectives,
async wrappers, infeed/outfeed and the like, which a single-program evaluator does not model.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyprecision.hlo import typed_attrs as T
from pyprecision.hlo import window as W
from pyprecision.hlo.shape import Shape
from pyprecision.hlo.types import PrimitiveType, is_float, is_integer

P = PrimitiveType
Infer = Callable[[Any, list[Shape]], "Shape | None"]


@dataclass(frozen=True)
class Rule:
    """Operand count bounds (``max_operands=None``: any number) and the shape rule."""

    min_operands: int
    max_operands: int | None
    infer: Infer | None = None


def compatible(a: Shape, b: Shape) -> bool:
    """XLA's ShapeUtil::Compatible: same element types and dimensions, layouts ignored."""
    if a.is_tuple or b.is_tuple:
        return a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes) and all(
            compatible(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes, strict=True))
    return a.element_type == b.element_type and a.dimensions == b.dimensions


def _h(s: Shape) -> str:
    return s.to_text(with_layout=False)


def _array(s: Shape, what: str) -> Shape:
    if s.is_tuple or s.element_type in (P.TOKEN, P.OPAQUE_TYPE):
        raise ValueError(f"{what} must be an array, got {_h(s)}")
    return s


def _like(s: Shape, t: PrimitiveType | None = None, dims: tuple[int, ...] | None = None) -> Shape:
    return Shape.array(s.element_type if t is None else t, s.dimensions if dims is None else dims)


def _ints(inst: Any, key: str, required: bool = True) -> list[int]:
    v = inst.attr_ints(key)
    if v is None:
        if required:
            raise ValueError(f"{inst.opcode} needs a {key}= attribute")
        return []
    return v


def _dims_in_range(dims: list[int], rank: int, key: str) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        raise ValueError(f"{key}={{{','.join(map(str, dims))}}} must be distinct dimensions below "
                         f"the rank {rank}")


# -- elementwise ----------------------------------------------------------------------------
def _unary(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    if inst.opcode == "is-finite":
        if not is_float(x.element_type):
            raise ValueError(f"is-finite needs a float operand, got {_h(x)}")
        return _like(x, P.PRED)
    if inst.opcode in ("real", "imag") or (inst.opcode == "abs" and x.element_type in (P.C64,
                                                                                      P.C128)):
        return _like(x, P.F32 if x.element_type == P.C64 else (
            P.F64 if x.element_type == P.C128 else x.element_type))
    return _like(x)


def _same_dims(ops: list[Shape], what: str) -> None:
    first = ops[0]
    for s in ops[1:]:
        if s.dimensions != first.dimensions:
            raise ValueError(f"{what} need operands of the same dimensions, got "
                             + " and ".join(_h(o) for o in ops) + " (no implicit broadcasting)")


def _binary(inst: Any, ops: list[Shape]) -> Shape:
    a, b = _array(ops[0], "operand 0"), _array(ops[1], "operand 1")
    _same_dims([a, b], inst.opcode)
    if a.element_type != b.element_type and inst.opcode != "complex":
        raise ValueError(f"{inst.opcode} needs operands of one element type, got {_h(a)} and "
                         f"{_h(b)}")
    if inst.opcode == "compare":
        T.comparison(inst)
        return _like(a, P.PRED)
    if inst.opcode == "complex":
        return _like(a, P.C64 if a.element_type == P.F32 else P.C128)
    return _like(a)


def _select(inst: Any, ops: list[Shape]) -> Shape:
    p, a, b = (_array(s, f"operand {i}") for i, s in enumerate(ops))
    if p.element_type != P.PRED:
        raise ValueError(f"select's predicate must be pred, got {_h(p)}")
    if not compatible(a, b):
        raise ValueError(f"select's branches differ: {_h(a)} and {_h(b)}")
    if p.dimensions and p.dimensions != a.dimensions:
        raise ValueError(f"select's predicate {_h(p)} does not match {_h(a)}")
    return _like(a)


def _clamp(inst: Any, ops: list[Shape]) -> Shape:
    lo, x, hi = (_array(s, f"operand {i}") for i, s in enumerate(ops))
    for b in (lo, hi):
        if b.element_type != x.element_type or (b.dimensions and b.dimensions != x.dimensions):
            raise ValueError(f"clamp bound {_h(b)} does not match the operand {_h(x)}")
    return _like(x)


def _convert(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    return _like(x, inst.shape.element_type)


def _bitcast_convert(inst: Any, ops: list[Shape]) -> Shape | None:
    from pyprecision.hlo.types import bit_width

    x = _array(ops[0], "the operand")
    t = inst.shape.element_type
    a, b = bit_width(x.element_type), bit_width(t)
    if a == b:
        return _like(x, t)
    if a > b:
        if a % b:
            raise ValueError(f"bitcast-convert from {a}-bit to {b}-bit types")
        return _like(x, t, x.dimensions + (a // b,))
    if b % a or not x.dimensions or x.dimensions[-1] != b // a:
        raise ValueError(f"bitcast-convert to a wider type needs a last dimension of {b // a}")
    return _like(x, t, x.dimensions[:-1])


def _reduce_precision(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    e, m = _ints(inst, "exponent_bits"), _ints(inst, "mantissa_bits")
    if not is_float(x.element_type) or len(e) != 1 or len(m) != 1 or e[0] < 1 or m[0] < 0:
        raise ValueError("reduce-precision needs a float operand, exponent_bits >= 1 and "
                         "mantissa_bits >= 0")
    return _like(x)


# -- data movement --------------------------------------------------------------------------
def _broadcast(inst: Any, ops: list[Shape]) -> Shape | None:
    x = _array(ops[0], "the operand")
    dims = _ints(inst, "dimensions", required=False)
    out = inst.shape
    if len(dims) != x.rank:
        raise ValueError(f"broadcast dimensions={{{','.join(map(str, dims))}}} do not match the "
                         f"operand rank {x.rank}")
    _dims_in_range(dims, out.rank, "dimensions")
    for i, d in enumerate(dims):  # HLO broadcast keeps sizes (no degenerate 1 -> n expansion)
        if x.dimensions[i] != out.dimensions[d]:
            raise ValueError(f"operand dimension {i} ({x.dimensions[i]}) cannot broadcast to "
                             f"result dimension {d} ({out.dimensions[d]}): sizes must be equal")
    return _like(x, dims=out.dimensions)


def _count(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _reshape(inst: Any, ops: list[Shape]) -> Shape | None:
    x = _array(ops[0], "the operand")
    out = inst.shape
    if any(out.dynamic) or any(x.dynamic):
        return None
    if _count(x.dimensions) != _count(out.dimensions):
        raise ValueError(f"reshape from {_h(x)} to {_h(out)} changes the element count")
    return _like(x, dims=out.dimensions)


def _transpose(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    perm = _ints(inst, "dimensions")
    if sorted(perm) != list(range(x.rank)):
        raise ValueError(f"transpose dimensions={{{','.join(map(str, perm))}}} is not a "
                         f"permutation of {x.rank} dimensions")
    return _like(x, dims=tuple(x.dimensions[p] for p in perm))


def _slice(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    spec = T.slice_of(inst)
    if len(spec) != x.rank:
        raise ValueError(f"slice= has {len(spec)} dimension(s), the operand rank is {x.rank}")
    dims = []
    for d, (start, limit, stride) in enumerate(spec):
        if not (0 <= start <= limit <= x.dimensions[d]) or stride < 1:
            raise ValueError(f"slice [{start}:{limit}:{stride}] does not fit dimension {d} of "
                             f"size {x.dimensions[d]}")
        dims.append((limit - start + stride - 1) // stride)
    return _like(x, dims=tuple(dims))


def _concatenate(inst: Any, ops: list[Shape]) -> Shape:
    arrs = [_array(s, f"operand {i}") for i, s in enumerate(ops)]
    d = _ints(inst, "dimensions")
    first = arrs[0]
    if len(d) != 1 or not 0 <= d[0] < first.rank:
        raise ValueError(f"concatenate needs one dimension below the rank {first.rank}")
    k = d[0]
    for s in arrs[1:]:
        if s.element_type != first.element_type or s.rank != first.rank or any(
                a != b for i, (a, b) in enumerate(zip(s.dimensions, first.dimensions, strict=True))
                if i != k):
            raise ValueError(f"concatenate operands {_h(first)} and {_h(s)} differ outside "
                             f"dimension {k}")
    dims = list(first.dimensions)
    dims[k] = sum(s.dimensions[k] for s in arrs)
    return _like(first, dims=tuple(dims))


def _iota(inst: Any, ops: list[Shape]) -> Shape | None:
    d = _ints(inst, "iota_dimension")
    if len(d) != 1 or not 0 <= d[0] < max(inst.shape.rank, 1) or inst.shape.is_tuple:
        raise ValueError(f"iota_dimension must be one dimension below the rank {inst.shape.rank}")
    return None


def _reverse(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    _dims_in_range(_ints(inst, "dimensions"), x.rank, "dimensions")
    return _like(x)


def _pad(inst: Any, ops: list[Shape]) -> Shape:
    x, v = _array(ops[0], "the operand"), _array(ops[1], "the padding value")
    if v.rank or v.element_type != x.element_type:
        raise ValueError(f"pad value must be a {_h(_like(x, dims=()))} scalar, got {_h(v)}")
    spec = T.padding_of(inst)
    if len(spec) != x.rank:
        raise ValueError(f"padding= has {len(spec)} dimension(s), the operand rank is {x.rank}")
    dims = []
    for d, (lo, hi, interior) in enumerate(spec):
        n = x.dimensions[d]
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise ValueError(f"padding {lo}_{hi}_{interior} leaves a negative size in dimension "
                             f"{d}")
        dims.append(size)
    return _like(x, dims=tuple(dims))


def _index_scalars(ops: list[Shape], what: str) -> None:
    for s in ops:
        if s.is_tuple or s.rank or not is_integer(s.element_type):
            raise ValueError(f"{what} start indices must be integer scalars, got {_h(s)}")


def _dynamic_slice(inst: Any, ops: list[Shape]) -> Shape:
    x = _array(ops[0], "the operand")
    if len(ops) != x.rank + 1:
        raise ValueError(f"dynamic-slice of a rank-{x.rank} operand takes {x.rank} start "
                         f"indices, got {len(ops) - 1}")
    _index_scalars(ops[1:], "dynamic-slice")
    sizes = _ints(inst, "dynamic_slice_sizes")
    if len(sizes) != x.rank or any(not 0 <= s <= n for s, n in zip(sizes, x.dimensions,
                                                                     strict=True)):
        raise ValueError(f"dynamic_slice_sizes {sizes} do not fit {_h(x)}")
    return _like(x, dims=tuple(sizes))


def _dynamic_update_slice(inst: Any, ops: list[Shape]) -> Shape:
    x, u = _array(ops[0], "the operand"), _array(ops[1], "the update")
    if len(ops) != x.rank + 2:
        raise ValueError(f"dynamic-update-slice of a rank-{x.rank} operand takes {x.rank} start "
                         f"indices, got {len(ops) - 2}")
    _index_scalars(ops[2:], "dynamic-update-slice")
    if u.element_type != x.element_type or u.rank != x.rank or any(
            a > b for a, b in zip(u.dimensions, x.dimensions, strict=True)):
        raise ValueError(f"update {_h(u)} does not fit the operand {_h(x)}")
    return _like(x)


def _tuple(inst: Any, ops: list[Shape]) -> Shape:
    return Shape.tuple_of(list(ops))


def _get_tuple_element(inst: Any, ops: list[Shape]) -> Shape:
    t = ops[0]
    idx = _ints(inst, "index")
    if not t.is_tuple:
        raise ValueError(f"get-tuple-element of a non-tuple {_h(t)}")
    if len(idx) != 1 or not 0 <= idx[0] < len(t.tuple_shapes):
        raise ValueError(f"get-tuple-element index {idx} is out of range for {_h(t)}")
    return t.tuple_shapes[idx[0]]


def _no_operands(inst: Any, ops: list[Shape]) -> None:
    return None


__all__ = ["Rule", "compatible", "W"]
