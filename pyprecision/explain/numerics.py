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
    """Error of one op's output against the reference, over the elements that reach an output
    (all of them unless a mask says otherwise; X1): max abs; ``scaled``, the max abs error in units
    of the tensor's scale (the largest finite |reference| among those elements; X2); max rel (over
    non-zero reference elements; for integer and predicate values ``scaled`` is the fraction of
    those elements that differ); max ULPs in the output dtype's code space; elements whose
    finiteness differs; ``reached`` of ``elements`` reach an output."""

    max_abs: float
    max_rel: float
    max_ulp: int
    nonfinite: int
    elements: int
    scaled: float = 0.0
    reached: int = -1

    def to_json(self) -> dict[str, Any]:
        """A JSON object."""
        return {"max_abs": self.max_abs, "scaled": self.scaled, "max_rel": self.max_rel,
                "max_ulp": self.max_ulp, "nonfinite": self.nonfinite, "elements": self.elements,
                "reached": self.elements if self.reached < 0 else self.reached}


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


def output_error(a: np.ndarray, r: np.ndarray, dt: Any, mask: np.ndarray | None = None) -> OpError:
    """The error of values ``a`` (of IR dtype ``dt``) against reference values ``r``, over the
    elements where ``mask`` (same shape; None: all) is true."""
    n = int(a.size)
    if mask is not None and mask.shape == a.shape:
        a, r = a[mask], r[mask]
    reached = int(a.size)
    if not dt.is_float:
        diff = np.abs(a.astype(np.float64) - r.astype(np.float64))
        m = float(diff.max()) if diff.size else 0.0
        rel = _max_rel(diff, r.astype(np.float64))
        # discrete values (predicates, indices): the fraction of elements that differ (X2)
        frac = float(np.count_nonzero(diff)) / reached if reached else 0.0
        return OpError(m, rel, int(m), 0, n, frac, reached)
    fa, fr = a.astype(np.float64), r.astype(np.float64)
    both = np.isfinite(fa) & np.isfinite(fr)
    same_special = (np.isnan(fa) & np.isnan(fr)) | (np.isinf(fa) & (fa == fr))
    nonfinite = int(np.count_nonzero(~both & ~same_special))
    diff = np.zeros(fa.shape)
    np.subtract(fa, fr, out=diff, where=both)  # inf - inf never computed: no RuntimeWarning
    diff = np.abs(diff)
    space = code_space(dt.fmt if dt.fmt is not None else "float32")
    if space.fmt is not None:
        got, want = encode(fa, space.fmt, saturate=False), encode(fr, space.fmt, saturate=False)
    else:
        got, want = fa.astype(np.float32).view(np.uint32), fr.astype(np.float32).view(np.uint32)
    cmp = compare_codes(want, got, space)
    ulp = cmp.ulp[both.reshape(-1)]
    m = float(diff.max()) if diff.size else 0.0
    return OpError(m, _max_rel(diff, np.where(both, fr, 0.0)), int(ulp.max()) if ulp.size else 0,
                   nonfinite, n, _scaled(m, np.where(both, fr, 0.0)), reached)


def _scaled(max_abs: float, ref: np.ndarray) -> float:
    """``max_abs`` over the largest |ref| (X2); 0 when both are 0, inf when only the error is not."""
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    if scale > 0:
        return max_abs / scale
    return 0.0 if max_abs == 0 else float("inf")


def _max_rel(diff: np.ndarray, ref: np.ndarray) -> float:
    nz = ref != 0
    if not nz.any():
        return 0.0
    return float((diff[nz] / np.abs(ref[nz])).max())
