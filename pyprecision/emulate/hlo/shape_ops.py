"""Data-movement HLO opcodes: broadcast, reshape, transpose, slice, concatenate, iota, reverse,
pad, dynamic-slice, dynamic-update-slice (gather is in hlo_scatter). None of them changes a
value, so none rounds (iota rounds its indices to the element type)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyprecision.emulate.shared.numeric import dtype_of, round_to
from pyprecision.errors import EmulationError
from pyprecision.hlo import typed_attrs

Handler = Callable[[Any, list[Any]], np.ndarray]



def _dims(inst: Any) -> tuple[int, ...]:
    return tuple(inst.shape.dimensions)


def _ints(inst: Any, key: str) -> list[int]:
    v = inst.attr_ints(key)
    if v is None:
        raise EmulationError(f"{inst.name}: {inst.opcode} has no {key}= attribute")
    return v


def broadcast(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """broadcast(x), dimensions={...}: operand dimension i becomes output dimension dims[i]."""
    (x,) = args
    out = _dims(inst)
    dims = inst.attr_ints("dimensions") or []
    if len(dims) != x.ndim:
        raise EmulationError(f"{inst.name}: broadcast dimensions={dims} do not match the operand "
                             f"rank {x.ndim}")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(x, order) if order != list(range(len(dims))) else x
    shape = [1] * len(out)
    for i, d in enumerate(sorted(dims)):
        shape[d] = x.shape[i]
    return np.broadcast_to(x.reshape(shape), out).copy()


def reshape(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """reshape / bitcast (same element type): row-major reinterpretation of the dimensions."""
    (x,) = args
    if x.dtype != dtype_of(inst.shape.element_type):
        raise EmulationError(f"{inst.name}: {inst.opcode} that changes the element type is not "
                             "supported")
    return x.reshape(_dims(inst))


def transpose(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """transpose(x), dimensions={...}: output dimension i is operand dimension dims[i]."""
    (x,) = args
    return np.ascontiguousarray(np.transpose(x, _ints(inst, "dimensions")))


def slice_(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """slice(x), slice={[start:limit:stride], ...}."""
    (x,) = args
    try:
        parts = typed_attrs.slice_of(inst)
    except ValueError as e:
        raise EmulationError(f"{inst.name}: {e}") from None
    if len(parts) != x.ndim:
        raise EmulationError(f"{inst.name}: cannot read slice={inst.attr('slice')}")
    idx = tuple(slice(a, b, s) for a, b, s in parts)
    return np.ascontiguousarray(x[idx])


def concatenate(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """concatenate(a, b, ...), dimensions={d}."""
    (d,) = _ints(inst, "dimensions")
    return np.concatenate(args, axis=d)


def iota(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """iota(), iota_dimension=d: the index along d, rounded to the element type."""
    d = _ints(inst, "iota_dimension")[0]
    dims = _dims(inst)
    idx = np.arange(dims[d], dtype=np.int64)
    shape = [1] * len(dims)
    shape[d] = dims[d]
    return round_to(np.broadcast_to(idx.reshape(shape), dims), inst.shape.element_type)


def reverse(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """reverse(x), dimensions={...}."""
    (x,) = args
    return np.ascontiguousarray(np.flip(x, axis=tuple(_ints(inst, "dimensions"))))


def pad(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """pad(x, v), padding=lo_hi[_interior]x...; negative padding slices."""
    x, v = args
    try:
        specs = typed_attrs.padding_of(inst)
    except ValueError as e:
        raise EmulationError(f"{inst.name}: {e}") from None
    if len(specs) != x.ndim:
        raise EmulationError(f"{inst.name}: cannot read padding={inst.attr('padding')}")
    out = x
    for axis, (lo, hi, interior) in enumerate(specs):
        if interior:
            n = out.shape[axis]
            shape = list(out.shape)
            shape[axis] = n + (n - 1) * interior if n else 0
            grown = np.full(shape, v, dtype=out.dtype)
            sl = [slice(None)] * out.ndim
            sl[axis] = slice(0, None, interior + 1)
            grown[tuple(sl)] = out
            out = grown
        for amount, front in ((lo, True), (hi, False)):
            if amount > 0:
                shape = list(out.shape)
                shape[axis] = amount
                block = np.full(shape, v, dtype=out.dtype)
                out = np.concatenate([block, out] if front else [out, block], axis=axis)
            elif amount < 0:
                sl = [slice(None)] * out.ndim
                sl[axis] = slice(-amount, None) if front else slice(0, out.shape[axis] + amount)
                out = out[tuple(sl)]
    return np.ascontiguousarray(out)


def _starts(x: np.ndarray, sizes: tuple[int, ...], idx: list[np.ndarray]) -> list[int]:
    """Start indices clamped so the window fits (XLA's dynamic-slice rule)."""
    return [int(min(max(int(i), 0), n - s)) for i, n, s in zip(idx, x.shape, sizes, strict=True)]


def dynamic_slice(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """dynamic-slice(x, i0, i1, ...), dynamic_slice_sizes={...}."""
    x, *idx = args
    sizes = tuple(_ints(inst, "dynamic_slice_sizes"))
    st = _starts(x, sizes, idx)
    return np.ascontiguousarray(x[tuple(slice(a, a + s) for a, s in zip(st, sizes, strict=True))])


def dynamic_update_slice(inst: Any, args: list[np.ndarray]) -> np.ndarray:
    """dynamic-update-slice(x, update, i0, i1, ...)."""
    x, upd, *idx = args
    st = _starts(x, upd.shape, idx)
    out = x.copy()
    out[tuple(slice(a, a + s) for a, s in zip(st, upd.shape, strict=True))] = upd
    return out


#: opcode → handler for the data-movement opcodes.
SHAPE_OPS: dict[str, Handler] = {
    "broadcast": broadcast,
    "reshape": reshape,
    "bitcast": reshape,
    "transpose": transpose,
    "slice": slice_,
    "concatenate": concatenate,
    "iota": iota,
    "reverse": reverse,
    "pad": pad,
    "dynamic-slice": dynamic_slice,
    "dynamic-update-slice": dynamic_update_slice,
}
