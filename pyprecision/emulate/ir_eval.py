"""Execute a loop-level IR function on NumPy data.

Every instruction computes exactly (float64, which is correctly rounded for + - * / sqrt of operands of at
most fp32 precision; exact integers) and rounds once to its result dtype through the cast core (RNE, Neuron
default saturation). Matmul accumulates in fp32 sequentially over K, products rounded to fp32, no FMA.
Integer results wrap (two's complement). Decisions: docs/decisions/ir.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pyprecision
from pyprecision.errors import EmulationError
from pyprecision.ir import (
    FLOAT_DTYPES,
    AffineLoad,
    AffineStore,
    BinaryOp,
    CallOp,
    DType,
    Function,
    GenericLoad,
    GenericStore,
    Instruction,
    Module,
    NeuronAP,
    OffloadedMemCpy,
    OpaqueOp,
    SBAtomLoad,
    ScalarValue,
    SelectOp,
    SingleValueTensor,
    Tensor,
    TensorContractOp,
    TensorScalarGEPOp,
    UnaryOp,
    Value,
    verify,
)

__all__ = ["convert", "from_storage", "round_to", "run_ir", "to_storage"]

_FLOAT_STORAGE = {np.dtype(d.storage) for d in FLOAT_DTYPES}


# -- numbers ------------------------------------------------------------------------------------------
def round_to(x: Any, dt: DType) -> np.ndarray:
    """Round exact values ``x`` (float64 array, or integers for int→float) to ``dt``.

    Floats: float32 by numpy (RNE), the narrow formats by ``pyprecision.quantize`` (RNE, Neuron default
    saturation); result float64. Integers: wrap modulo 2**bits; result int64 (uint64 for uint64).
    """
    a = np.asarray(x)
    if dt.is_float:
        if dt.fmt is None:
            return a.astype(np.float32).astype(np.float64)
        if a.dtype.kind == "f" and a.dtype != np.float64:
            a = a.astype(np.float64)
        return np.asarray(pyprecision.quantize(a, dt.fmt), dtype=np.float64)
    return _wrap(a, dt)


def _wrap(a: np.ndarray, dt: DType) -> np.ndarray:
    if a.dtype == object:
        m = 1 << dt.bits
        v = np.array([int(i) % m for i in a.ravel()], dtype=object).reshape(a.shape)
        if dt.kind == "int":
            v = np.array([i - m if i >= m >> 1 else i for i in v.ravel()], dtype=object).reshape(
                a.shape
            )
        return v.astype(np.uint64 if dt.kind == "uint" and dt.bits == 64 else np.int64)
    if dt.bits == 64:
        return a.astype(np.uint64 if dt.kind == "uint" else np.int64)
    u = a.astype(np.int64) & ((1 << dt.bits) - 1)
    if dt.kind == "int":
        u = np.where(u >= (1 << (dt.bits - 1)), u - (1 << dt.bits), u)
    return u.astype(np.int64)


def convert(x: Any, src: DType | None, dst: DType) -> np.ndarray:
    """Convert values of dtype ``src`` to ``dst``: the identity when the dtypes are equal (so a same-dtype
    load, store, copy or cast never changes a value — not even an fp8 ±inf under saturation), else
    ``round_to``. ``src=None`` means exact values of no particular dtype."""
    if src is dst:
        return np.asarray(x)
    return round_to(x, dst)


def to_storage(x: np.ndarray, dt: DType) -> np.ndarray:
    """Values (already representable in ``dt``) as an array of ``dt.np_dtype``."""
    if dt.is_float and dt.fmt is not None and dt.np_dtype != np.float32:
        # exact: the values are representable; saturate=False keeps an fp8 ±inf as ±inf
        return np.asarray(pyprecision.cast(np.asarray(x, dtype=np.float64), dt.fmt, saturate=False))
    return np.asarray(x).astype(dt.np_dtype)


def from_storage(a: np.ndarray, dt: DType) -> np.ndarray:
    """An array of ``dt.np_dtype`` as internal values (float64, or int64 / uint64)."""
    if dt.is_float:
        return np.asarray(a).astype(np.float64)
    return np.asarray(a).astype(np.uint64 if dt.kind == "uint" and dt.bits == 64 else np.int64)


def _view(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Reinterpret the bits of ``src`` values as ``dst`` (same width)."""
    return from_storage(to_storage(x, src).view(dst.np_dtype), dst)


# -- the interpreter ------------------------------------------------------------------------------------
class _Frame:
    def __init__(self, module: Module | None, f: Function, mem: dict[int, np.ndarray]):
        self.module, self.f, self.mem = module, f, mem
        self.vals: dict[int, np.ndarray] = {}

    def operand(self, op: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
        if isinstance(op, ScalarValue):
            v = round_to(
                np.array(op.value, dtype=np.float64 if op.dtype.is_float else object), op.dtype
            )
            return v if shape is None else np.broadcast_to(v, shape)
        return self.vals[id(op)]

    def read(self, ap: NeuronAP) -> np.ndarray:
        x = self.mem[id(ap.tensor)]
        return _view(x, ap.tensor.dtype, ap.reinterpret) if ap.reinterpret is not None else x

    def write(
        self, ap: NeuronAP, x: np.ndarray, src: DType | None, rows: np.ndarray | None = None
    ) -> None:
        x = convert(x, src, ap.dtype)
        if ap.reinterpret is not None:
            x = _view(x, ap.reinterpret, ap.tensor.dtype)
        buf = self.mem[id(ap.tensor)]
        if rows is None:
            self.mem[id(ap.tensor)] = np.array(
                np.broadcast_to(x, buf.shape), dtype=buf.dtype, order="C"
            )
            return
        x = np.broadcast_to(x, (len(rows),) + buf.shape[1:])
        for i, r in enumerate(rows):  # sequential: a later row wins on a repeated index
            buf[r] = x[i]

    def rows(self, idx: Any, n_rows: int, what: str) -> np.ndarray:
        r = self.vals[id(idx)]
        bad = (r < 0) | (r >= n_rows)
        if np.any(bad):
            raise EmulationError(f"{what}: index {r[bad][0]} out of range [0, {n_rows})")
        return r.astype(np.int64)

    def run(self) -> None:
        for inst in self.f.instructions():
            handler = _HANDLERS.get(type(inst))
            if handler is None:
                raise EmulationError(f"cannot emulate {type(inst).__name__}")
            out = handler(self, inst)
            if inst.result is not None:
                self.vals[id(inst.result)] = np.asarray(out)


def _load(fr: _Frame, inst: Any) -> np.ndarray:
    x = fr.read(inst.src)
    if isinstance(inst, GenericLoad):
        x = x[fr.rows(inst.index, x.shape[0], f"generic_load @{inst.tensor.name}")]
    elif isinstance(inst, SBAtomLoad) and inst.has_partition_broadcast:
        x = np.broadcast_to(x, inst.result.shape)  # type: ignore[union-attr]
    return convert(x, inst.src.dtype, inst.result.dtype)


def _store(fr: _Frame, inst: Any) -> None:
    rows = None
    if isinstance(inst, GenericStore):
        rows = fr.rows(inst.index, inst.tensor.shape[0], f"generic_store @{inst.tensor.name}")
    fr.write(inst.dst, fr.operand(inst.src), inst.src.dtype, rows)


def _unary_float(kind: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if kind in ("copy", "cast"):
            return x
        if kind == "neg":
            return -x
        if kind == "abs":
            return np.abs(x)
        if kind == "exp":
            return np.exp(x)
        if kind == "log":
            return np.log(x)
        if kind == "sqrt":
            return np.sqrt(x)
        if kind == "rsqrt":
            return 1.0 / np.sqrt(x)
        if kind == "reciprocal":
            return 1.0 / x
        if kind == "relu":
            return np.where(np.isnan(x), x, np.where(x > 0, x, 0.0))
        if kind == "tanh":
            return np.tanh(x)
        if kind == "sigmoid":
            return 1.0 / (1.0 + np.exp(-x))
        if kind == "square":
            return x * x
    raise EmulationError(f"unknown unary op {kind!r}")


def _unary(fr: _Frame, inst: UnaryOp) -> np.ndarray:
    src: Value = inst.data  # type: ignore[assignment]
    x, sdt, rdt = fr.vals[id(src)], src.dtype, inst.result.dtype  # type: ignore[union-attr]
    if inst.kind == "bitcast":
        return _view(x, sdt, rdt)
    if inst.kind in ("cast", "copy") and sdt is rdt:
        return x
    if inst.kind == "cast" and sdt.is_float and rdt.is_integer:
        return from_storage(pyprecision.float_to_int(x, rdt.np_dtype), rdt)
    if inst.kind == "cast" and sdt.is_integer and rdt.is_float:
        return round_to(x, rdt)
    if rdt.is_integer:
        return round_to(_int_unary(inst.kind, x), rdt)
    return round_to(_unary_float(inst.kind, x), rdt)


def _int_unary(kind: str, x: np.ndarray) -> np.ndarray:
    o = x.astype(object)
    table: dict[str, Callable[[Any], Any]] = {
        "cast": lambda v: v,
        "copy": lambda v: v,
        "neg": lambda v: -v,
        "abs": abs,
        "relu": lambda v: max(v, 0),
        "square": lambda v: v * v,
    }
    if kind not in table:
        raise EmulationError(f"'{kind}' is not defined on integers")
    fn = table[kind]
    return np.array([fn(int(v)) for v in o.ravel()], dtype=object).reshape(x.shape)


def _binary_values(kind: str, a: np.ndarray, b: np.ndarray, is_float: bool) -> np.ndarray:
    if is_float:
        with np.errstate(all="ignore"):
            ops: dict[str, Callable[[Any, Any], Any]] = {
                "add": np.add,
                "sub": np.subtract,
                "mul": np.multiply,
                "div": np.divide,
                "max": np.maximum,
                "min": np.minimum,
                "cmp_eq": np.equal,
                "cmp_ne": np.not_equal,
                "cmp_lt": np.less,
                "cmp_le": np.less_equal,
                "cmp_gt": np.greater,
                "cmp_ge": np.greater_equal,
            }
            return ops[kind](a.astype(np.float64), b.astype(np.float64))
    a, b = np.broadcast_arrays(a.astype(object), b.astype(object))
    out = [_int_binop(kind, int(x), int(y)) for x, y in zip(a.ravel(), b.ravel(), strict=True)]
    return np.array(out, dtype=object).reshape(a.shape)


def _int_binop(kind: str, x: int, y: int) -> int:
    if kind == "div":
        if y == 0:
            raise EmulationError("integer division by zero")
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    table: dict[str, Callable[[int, int], int]] = {
        "add": lambda p, q: p + q,
        "sub": lambda p, q: p - q,
        "mul": lambda p, q: p * q,
        "max": max,
        "min": min,
        "and": lambda p, q: p & q,
        "or": lambda p, q: p | q,
        "xor": lambda p, q: p ^ q,
        "cmp_eq": lambda p, q: int(p == q),
        "cmp_ne": lambda p, q: int(p != q),
        "cmp_lt": lambda p, q: int(p < q),
        "cmp_le": lambda p, q: int(p <= q),
        "cmp_gt": lambda p, q: int(p > q),
        "cmp_ge": lambda p, q: int(p >= q),
    }
    return table[kind](x, y)


def _binary(fr: _Frame, inst: BinaryOp) -> np.ndarray:
    shape = inst.result.shape  # type: ignore[union-attr]
    a, b = (fr.operand(o, shape) for o in inst.operands)
    is_float = inst.lhs.dtype.is_float
    r = _binary_values(inst.kind, a, b, is_float)
    if inst.is_compare:
        return np.asarray(r, dtype=np.int64).astype(np.int64)
    return round_to(r, inst.result.dtype)  # type: ignore[union-attr]


def _select(fr: _Frame, inst: SelectOp) -> np.ndarray:
    shape = inst.result.shape  # type: ignore[union-attr]
    p, a, b = (fr.operand(o, shape) for o in inst.operands)
    if inst.result.dtype.is_float:  # type: ignore[union-attr]
        a, b = a.astype(np.float64), b.astype(np.float64)
    else:
        a, b = a.astype(object), b.astype(object)
    return round_to(np.where(p != 0, a, b), inst.result.dtype)  # type: ignore[union-attr]


def _matmul(fr: _Frame, inst: TensorContractOp) -> np.ndarray:
    s = fr.operand(inst.stationary).astype(
        np.float32
    )  # exact: every float dtype is a subset of fp32
    m = fr.operand(inst.moving).astype(np.float32)
    acc = np.zeros((s.shape[1], m.shape[1]), dtype=np.float32)
    with np.errstate(all="ignore"):
        for k in range(s.shape[0]):  # sequential K order, each product and each sum rounded to fp32
            acc = acc + np.multiply.outer(s[k], m[k])
    return round_to(acc.astype(np.float64), inst.result.dtype)  # type: ignore[union-attr]


def _gep(fr: _Frame, inst: TensorScalarGEPOp) -> None:
    shape = inst.dst.shape
    a, b = (fr.operand(o, shape) for o in inst.operands)
    fr.write(inst.dst, _binary_values(inst.kind, a, b, inst.dst.dtype.is_float), None)


def _memcpy(fr: _Frame, inst: OffloadedMemCpy) -> None:
    fr.write(inst.dst, fr.read(inst.src), inst.src.dtype)


def _call(fr: _Frame, inst: CallOp) -> None:
    if fr.module is None:
        raise EmulationError("a call needs the module")
    g = fr.module.get_function(inst.callee)
    mem = _initial_memory(g)
    for ap, t in zip(inst.ins, g.inputs, strict=True):
        mem[id(t)] = convert(fr.read(ap), ap.dtype, t.dtype)
    _Frame(fr.module, g, mem).run()
    for ap, t in zip(inst.outs, g.outputs, strict=True):
        fr.write(ap, mem[id(t)], t.dtype)


def _opaque(fr: _Frame, inst: OpaqueOp) -> None:
    ins = [fr.read(a) for a in inst.ins]
    outs = inst.outs
    if inst.kernel == "copy" and len(ins) == len(outs):
        for ap, x, a in zip(outs, ins, inst.ins, strict=True):
            _need_shape(inst, ap, x)
            fr.write(ap, x, a.dtype)
    elif inst.kernel == "add" and len(outs) == 1 and ins:
        total = np.zeros(outs[0].shape)
        for x in ins:
            _need_shape(inst, outs[0], x)
            total = total + x.astype(np.float64)
        fr.write(outs[0], total, None)
    elif inst.kernel == "softmax" and len(ins) == 1 and len(outs) == 1:
        _need_shape(inst, outs[0], ins[0])
        x = ins[0].astype(np.float64)
        with np.errstate(all="ignore"):
            e = np.exp(x - np.max(x, axis=-1, keepdims=True))
            fr.write(outs[0], e / np.sum(e, axis=-1, keepdims=True), None)
    else:
        raise EmulationError(
            f"opaque kernel {inst.kernel!r} with {len(ins)} ins / {len(outs)} outs "
            "is not known to the emulator (known: copy, add, softmax)"
        )


def _need_shape(inst: Instruction, ap: NeuronAP, x: np.ndarray) -> None:
    if tuple(x.shape) != ap.shape:
        raise EmulationError(
            f"opaque kernel: @{ap.tensor.name} {list(ap.shape)} vs input {list(x.shape)}"
        )


_HANDLERS: dict[type, Callable[[_Frame, Any], Any]] = {
    AffineLoad: _load,
    SBAtomLoad: _load,
    GenericLoad: _load,
    AffineStore: _store,
    GenericStore: _store,
    UnaryOp: _unary,
    BinaryOp: _binary,
    SelectOp: _select,
    TensorContractOp: _matmul,
    TensorScalarGEPOp: _gep,
    OffloadedMemCpy: _memcpy,
    CallOp: _call,
    OpaqueOp: _opaque,
}


# -- binding ------------------------------------------------------------------------------------------
def _initial_memory(f: Function) -> dict[int, np.ndarray]:
    mem: dict[int, np.ndarray] = {}
    for t in f.tensors:
        if isinstance(t, SingleValueTensor):
            v = np.array(t.value, dtype=np.float64 if t.dtype.is_float else object)
            mem[id(t)] = np.array(np.broadcast_to(round_to(v, t.dtype), t.shape), order="C")
        elif t.is_const:
            mem[id(t)] = from_storage(t.value, t.dtype)  # type: ignore[arg-type]
        else:
            mem[id(t)] = from_storage(np.zeros(t.shape, dtype=t.dtype.np_dtype), t.dtype)
    return mem


def _bind_input(t: Tensor, x: Any) -> np.ndarray:
    a = np.asarray(x)
    if a.shape != t.shape:
        raise EmulationError(
            f"input @{t.name}: shape {list(a.shape)} does not match declared {list(t.shape)}"
        )
    is_float = a.dtype.kind == "f" or a.dtype in _FLOAT_STORAGE
    if t.dtype.is_float:
        if not is_float:
            raise EmulationError(
                f"input @{t.name}: {t.dtype.name} tensor needs a float array, got {a.dtype}"
            )
        if a.dtype == t.dtype.np_dtype and t.dtype.fmt != "fp32r":
            return from_storage(a, t.dtype)  # already in the declared dtype: bound unchanged
        return round_to(a.astype(np.float64), t.dtype)
    if a.dtype.kind not in "iub":
        raise EmulationError(
            f"input @{t.name}: {t.dtype.name} tensor needs an integer array, got {a.dtype}"
        )
    info = np.iinfo(t.dtype.np_dtype)
    if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
        raise EmulationError(
            f"input @{t.name}: values outside the {t.dtype.name} range [{info.min}, {info.max}]"
        )
    return from_storage(a.astype(t.dtype.np_dtype), t.dtype)


def run_ir(
    module: Module | Function,
    inputs: dict[str, np.ndarray],
    function: str | None = None,
    check: bool = True,
) -> dict[str, np.ndarray]:
    """Run a function (``function``, else ``@main``, else the first) on ``inputs`` (keyed by input tensor
    name) and return ``{output tensor name: array of its storage dtype}``. The module is verified first
    (VerifyError) unless ``check=False``; bad inputs raise EmulationError."""
    if isinstance(module, Function):
        f, mod = module, module.module
    else:
        mod = module
        try:
            f = module.get_function(function) if function is not None else module.main
        except (KeyError, ValueError):
            raise EmulationError(
                f"no function @{function}" if function else "module has no functions"
            ) from None
    if check:
        verify(mod if mod is not None else f)
    mem = _initial_memory(f)
    names = {t.name for t in f.inputs}
    unknown = sorted(set(inputs) - names)
    if unknown:
        raise EmulationError(
            f"unknown input(s) {', '.join(unknown)} for @{f.name} "
            f"(inputs: {', '.join(sorted(names)) or 'none'})"
        )
    missing = [t.name for t in f.inputs if t.name not in inputs]
    if missing:
        raise EmulationError(f"missing input(s) for @{f.name}: {', '.join(missing)}")
    for t in f.inputs:
        mem[id(t)] = _bind_input(t, inputs[t.name])
    _Frame(mod, f, mem).run()
    return {t.name: np.ascontiguousarray(to_storage(mem[id(t)], t.dtype)) for t in f.outputs}
