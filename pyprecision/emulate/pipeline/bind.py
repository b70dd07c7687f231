"""One argument binder for HLO modules: the ENTRY parameters from named input arrays (an inputs
.npz) or from a list, with the same checks everywhere (count, shape, dtype; one clear error line
each) and the names of the arrays no parameter took (decision V20).

Keys: ``arg<n>``, ``in<n>`` (tests/data/hlo) or the parameter's own name. Raw bits (uint8 /
uint16, or numpy's untyped void) of a bf16/fp8/fp4 parameter are viewed as its ml_dtypes type; a
float array of a narrower float type is widened exactly when ``widen`` (e.g. bf16 data for a
parameter that ``upcast-all-to-fp32`` made f32).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyprecision.errors import EmulationError

__all__ = ["Bound", "as_logical", "bind_arguments", "parameter_keys"]

#: arrays of an inputs file that are metadata, never parameters (hlo-run's raw-bits side table)
_METADATA = ("__dtypes__",)


@dataclass
class Bound:
    """The bound ENTRY arguments in parameter order, and the input names no parameter took."""

    args: list[np.ndarray]
    unused: list[str] = field(default_factory=list)

    def warning(self, source: str = "inputs") -> str | None:
        """One line naming the unused arrays (None when every array was used)."""
        if not self.unused:
            return None
        names = ", ".join(self.unused)
        return (f"{source}: {len(self.unused)} array(s) not used by any ENTRY parameter: {names} "
                "(parameters are matched by arg<n>, in<n> or their name)")


def parameter_keys(n: int, name: str) -> tuple[str, str, str]:
    """The keys that bind parameter number ``n`` named ``name``, in the order they are tried."""
    return (f"arg{n}", f"in{n}", name)


def as_logical(arr: np.ndarray, want: np.dtype, widen: bool = True) -> np.ndarray:
    """Raw bits (uint8/uint16/int, or numpy's untyped void) of a bf16/fp8 input viewed as its
    ml_dtypes type; with ``widen`` a float input of a narrower float type widened exactly when
    the parameter is wider."""
    raw = arr.dtype.kind in "ui" or arr.dtype.type is np.void
    if arr.dtype != want and want.kind == "V" and raw and arr.dtype.itemsize == want.itemsize:
        return arr.view(want)
    if widen and arr.dtype != want and _is_float(arr.dtype) and _is_float(want) \
            and want.itemsize > arr.dtype.itemsize:
        return arr.astype(want)
    return arr


def _is_float(dt: np.dtype) -> bool:
    return dt in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)) \
        or (dt.kind == "V" and dt.type is not np.void)


def _parameters(module: Any) -> list[Any]:
    return sorted(module.entry.parameters, key=lambda p: p.parameter_number or 0)


def _check(p: Any, arr: np.ndarray, key: str, source: str) -> None:
    from pyprecision import hlo

    want = np.dtype(hlo.numpy_dtype(p.shape.element_type))
    text = p.shape.to_text(with_layout=False)
    if tuple(arr.shape) != tuple(p.shape.dimensions):
        raise EmulationError(f"{source}: input '{key}' has shape {tuple(arr.shape)}, parameter "
                             f"{p.parameter_number} '{p.name}' needs {text}")
    if arr.dtype != want:
        raise EmulationError(f"{source}: input '{key}' has dtype {arr.dtype}, parameter "
                             f"{p.parameter_number} '{p.name}' needs {text} ({want})")


def bind_arguments(
    module: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    *,
    source: str = "inputs",
    widen: bool = False,
) -> Bound:
    """The ENTRY arguments of HLO ``module`` from ``inputs``: a mapping (keys ``arg<n>``,
    ``in<n>`` or the parameter name) or a sequence in parameter order. Every parameter must be
    given, with its shape and dtype (after raw bits are relabelled); anything else is an
    EmulationError of one line that starts with ``source``. Tuple parameters take a tuple in a
    sequence and cannot be named in a mapping."""
    from pyprecision import hlo

    params = _parameters(module)
    if not isinstance(inputs, Mapping):
        items = list(inputs)
        if len(items) != len(params):
            raise EmulationError(f"{source}: ENTRY {module.entry.name} takes {len(params)} "
                                 f"parameter(s), got {len(items)} input(s)")
        args = []
        for p, a in zip(params, items, strict=True):
            if p.shape.is_tuple:
                args.append(a)  # checked leaf by leaf where the tuple is flattened
                continue
            want = np.dtype(hlo.numpy_dtype(p.shape.element_type))
            arr = as_logical(np.asarray(a), want, widen)
            _check(p, arr, f"#{p.parameter_number}", source)
            args.append(arr)
        return Bound(args)
    used: set[str] = set()
    args = []
    for p in params:
        n = p.parameter_number
        keys = parameter_keys(n, p.name)
        key = next((k for k in keys if k in inputs), None)
        if key is None:
            raise EmulationError(f"{source}: no input for parameter {n} '{p.name}' (expected key "
                                 f"{keys[0]}, {keys[1]} or {keys[2]})")
        if p.shape.is_tuple:
            raise EmulationError(f"{source}: parameter {n} '{p.name}' has a tuple shape; "
                                 "an inputs file cannot hold it (give the leaves as parameters)")
        used.add(key)
        want = np.dtype(hlo.numpy_dtype(p.shape.element_type))
        arr = as_logical(np.asarray(inputs[key]), want, widen)
        _check(p, arr, key, source)
        args.append(arr)
    unused = [k for k in inputs if k not in used and k not in _METADATA]
    return Bound(args, unused)
