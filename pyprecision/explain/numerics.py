"""Per-op emulated error: every op's output after the passes against an all-fp32 run.

``run_ir`` returns only the program's outputs, so the values of every op are read by *probing*: a
copy of the program (through its text) gets one extra output tensor per SSA value and a store into
it at the end of the function, and is run once. The reference is the program as written with every
float value, tensor, scalar and constant retyped to float32 (when that is not possible — a bitcast
or reinterpreted view pins a width — the program as written is the reference, and a note says so).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pyprecision.emulate import run_ir
from pyprecision.errors import PyPrecisionError
from pyprecision.ir import IRBuilder, Module, ScalarValue, Tensor, float32, parse, to_text, verify
from pyprecision.kernel import encode
from pyprecision.verify import as_logical, code_space, compare_codes

__all__ = ["OpError", "all_fp32_reference", "op_errors", "output_error", "probe_values"]


@dataclass(frozen=True)
class OpError:
    """Error of one op's output against the reference: max abs, max rel (over non-zero reference
    elements), max ULPs in the output dtype's code space, and elements whose finiteness differs."""

    max_abs: float
    max_rel: float
    max_ulp: int
    nonfinite: int
    elements: int

    def to_json(self) -> dict[str, Any]:
        """A JSON object."""
        return {"max_abs": self.max_abs, "max_rel": self.max_rel, "max_ulp": self.max_ulp,
                "nonfinite": self.nonfinite, "elements": self.elements}


def probe_values(module: Module, inputs: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, Any]]:
    """``{"%name": (values as float64 / int64, IR dtype)}`` for every SSA value of ``@main``."""
    copy = parse(to_text(module), verify=False)
    f = copy.main
    builder = IRBuilder(function=f)
    builder.set_insertion_point_to_end(f.blocks[-1])
    probes: dict[str, tuple[str, Any]] = {}
    for inst in list(f.instructions()):
        v = inst.result
        if v is None:
            continue
        t = Tensor(f.unique_tensor_name(f"probe.{v.name}"), tuple(v.shape), v.dtype, kind="output")
        f.add_tensor(t)
        builder.create_store(v, t)
        probes[t.name] = (f"%{v.name}", v.dtype)
    types = {t.name: np.dtype(t.dtype.np_dtype) for t in f.inputs}
    args = {k: as_logical(a, types[k]) for k, a in inputs.items() if k in types}
    outs = run_ir(copy, args)
    return {key: (_numbers(outs[name]), dt) for name, (key, dt) in probes.items()}


def _numbers(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind in "iub":
        return a.astype(np.int64)
    return a.astype(np.float64)


def all_fp32_reference(text: str, filename: str = "<program>") -> tuple[Module, str | None]:
    """The program with every float dtype replaced by float32, and a note when that was not
    possible (then the program as written is returned)."""
    module = parse(text, filename=filename)
    f = module.main
    if any(getattr(t, "is_reinterpreted", False) for t in f.tensors) or any(
            getattr(i, "reinterpret", None) for i in f.instructions()):
        return parse(text, filename=filename), ("the program reinterprets bits, so the reference "
                                                "is the program as written, not all-fp32")
    for t in f.tensors:
        if t.dtype.is_float and t.dtype is not float32:
            value = None if t.value is None or np.ndim(t.value) == 0 else \
                np.asarray(t.value).astype(np.float32)
            t.mutate_tensor_ty(float32)
            if value is not None:
                t.value = value
    for inst in f.instructions():
        if inst.result is not None and inst.result.dtype.is_float and inst.result.dtype is not float32:
            inst.dtype = float32
        for op in inst.operands:
            if isinstance(op, ScalarValue) and op.dtype.is_float and op.dtype is not float32:
                op.dtype = float32
    try:
        verify(module)
    except PyPrecisionError as exc:
        note = f"all-fp32 retyping failed ({exc}); the reference is the program as written"
        return parse(text, filename=filename), note
    return module, None


def op_errors(after: dict[str, tuple[np.ndarray, Any]],
              ref: dict[str, tuple[np.ndarray, Any]]) -> dict[str, OpError]:
    """Per value present in both runs with the same shape: its error against the reference."""
    out = {}
    for key, (a, dt) in after.items():
        if key not in ref or ref[key][0].shape != a.shape or a.size == 0:
            continue
        out[key] = output_error(a, ref[key][0], dt)
    return out


def output_error(a: np.ndarray, r: np.ndarray, dt: Any) -> OpError:
    """The error of values ``a`` (of IR dtype ``dt``) against reference values ``r``."""
    if not dt.is_float:
        diff = np.abs(a.astype(np.float64) - r.astype(np.float64))
        m = float(diff.max()) if diff.size else 0.0
        rel = _max_rel(diff, r.astype(np.float64))
        return OpError(m, rel, int(m), 0, int(a.size))
    fa, fr = a.astype(np.float64), r.astype(np.float64)
    both = np.isfinite(fa) & np.isfinite(fr)
    same_special = (np.isnan(fa) & np.isnan(fr)) | (np.isinf(fa) & (fa == fr))
    nonfinite = int(np.count_nonzero(~both & ~same_special))
    diff = np.where(both, np.abs(fa - fr), 0.0)
    space = code_space(dt.fmt if dt.fmt is not None else "float32")
    if space.fmt is not None:
        got, want = encode(fa, space.fmt, saturate=False), encode(fr, space.fmt, saturate=False)
    else:
        got, want = fa.astype(np.float32).view(np.uint32), fr.astype(np.float32).view(np.uint32)
    cmp = compare_codes(want, got, space)
    ulp = cmp.ulp[both.reshape(-1)]
    return OpError(float(diff.max()) if diff.size else 0.0, _max_rel(diff, np.where(both, fr, 0.0)),
                   int(ulp.max()) if ulp.size else 0, nonfinite, int(a.size))


def _max_rel(diff: np.ndarray, ref: np.ndarray) -> float:
    nz = ref != 0
    if not nz.any():
        return 0.0
    return float((diff[nz] / np.abs(ref[nz])).max())
