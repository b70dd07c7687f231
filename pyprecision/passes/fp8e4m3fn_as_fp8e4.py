"""``--experimental-unsafe-fp8e4m3fn-as-fp8e4m3`` (spec 003 §6.3, CAST_SEMANTICS.md §7): fp8e4m3fn data
relabelled as fp8e4, a bit view that changes meanings (0x78 → +inf, 0x79–0x7e → NaN).

Decision P16 (docs/decisions/passes.md): the device keeps no e4m3fn anywhere. Bytes that already exist are
viewed, not converted — a const's bytes and an immediate scalar's code are kept and read as fp8e4; a
boundary tensor keeps the host's declared dtype and every access to it reads or writes through an
``as float8e4`` view. Everything computed on the device (internal tensors, SSA values, casts) is simply
typed fp8e4, so a cast *to* e4m3fn now rounds to fp8e4. The inputs and outputs of a function that
another function of the module calls are device memory too, and are relabelled like internal tensors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pyprecision.ir import (
    CallOp,
    DType,
    Function,
    Module,
    NeuronAP,
    ScalarValue,
    SingleValueTensor,
    Tensor,
    float8e4,
    float8e4m3fn,
)
from pyprecision.passes.base import FunctionPass, functions_of
from pyprecision.passes.weights import static_cast_values


def relabel_codes(values: np.ndarray) -> np.ndarray:
    """fp8e4m3fn values → the fp8e4 values with the same bit patterns (an array of float8e4's dtype)."""
    from pyprecision.kernel import reinterpret  # passes -> kernel (ARCHITECTURE)

    codes = np.asarray(values, dtype=float8e4m3fn.np_dtype).view(np.uint8)
    viewed, _report = reinterpret(codes, "fp8e4m3fn", "fp8e4")
    return np.asarray(viewed).astype(float8e4.np_dtype, copy=False)


def _relabel_number(x: float) -> float:
    """An e4m3fn literal (rounded to e4m3fn by the cast core, as the IR defines it) read as fp8e4."""
    code = static_cast_values(np.array([x], dtype=np.float64), float8e4m3fn)
    return float(relabel_codes(code)[0])


@dataclass(frozen=True)
class Fp8e4m3fnAsFp8e4(FunctionPass):
    """float8e4m3fn T → float8e4 T (bytes kept); input/output @t : float8e4m3fn → accessed ``as float8e4``."""

    name: ClassVar[str] = "fp8e4m3fn-as-fp8e4"

    def run(self, unit: Module | Function) -> bool:
        """Run on every function (a function another one calls has device, not host, I/O)."""
        funcs = functions_of(unit)
        called = {i.callee for f in funcs for i in f.instructions() if isinstance(i, CallOp)}
        changed = False
        for f in funcs:
            changed |= self.run_on_function(f, host_boundary=f.name not in called)
        return changed

    def run_on_function(self, f: Function, host_boundary: bool = True) -> bool:
        """Tensors first (so views see the final tensor dtype), then views, values and scalars.
        ``host_boundary``: the function's inputs/outputs are the host's (not filled by a call)."""
        changed = False
        for t in f.tensors:
            changed |= self.relabel_tensor(t, host_boundary)
        for inst in f.instructions():
            for ap in inst.aps:
                changed |= self.relabel_view(ap)
            for op in inst.operands:
                if isinstance(op, ScalarValue) and op.dtype is float8e4m3fn:
                    op.value = _relabel_number(float(op.value))
                    op.mutate_tensor_ty(float8e4)
                    changed = True
            if inst.result is not None and inst.result.dtype is float8e4m3fn:
                inst.result.mutate_tensor_ty(float8e4)
                changed = True
        return changed

    def relabel_tensor(self, t: Tensor, host_boundary: bool = True) -> bool:
        """A const keeps its bytes under the new label; an internal tensor is retyped; a host
        boundary tensor keeps the host's dtype (its accesses get a view instead)."""
        if t.dtype is not float8e4m3fn or (host_boundary and t.is_input_or_output):
            return False
        if isinstance(t, SingleValueTensor):
            splat: Any = t.value  # a SingleValueTensor's value is a number
            t.value = _relabel_number(float(splat))  # type: ignore[assignment]
        elif t.value is not None:
            t.value = relabel_codes(t.value)
        t.mutate_tensor_ty(float8e4)
        return True

    def relabel_view(self, ap: NeuronAP) -> bool:
        """Access a boundary e4m3fn tensor ``as float8e4``; an ``as float8e4m3fn`` view becomes
        ``as float8e4``."""
        seen: DType = ap.dtype
        if seen is not float8e4m3fn:
            return False
        ap.reinterpret = float8e4
        return True
