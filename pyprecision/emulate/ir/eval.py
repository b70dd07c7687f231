"""Execute a loop-level IR function on NumPy data.

Every instruction computes exactly (float64, which is correctly rounded for + - * / sqrt of operands of at
most fp32 precision; exact integers) and rounds once to its result dtype through the cast core (RNE, Neuron
default saturation). Matmul accumulates in fp32 sequentially over K, products rounded to fp32, no FMA.
Integer results wrap (two's complement). Float values are held as float32 arrays (exact: every float
dtype is a subset of fp32), each value and each memory tensor is dropped after its last use, and memory
shares the arrays it is given (inputs, constants, stored values) read-only, copying only when a row
store writes into one (decisions EM-8, EM-9 in docs/decisions/ir.md).
"""

from __future__ import annotations

import types
from typing import Any, Protocol

import numpy as np

import pyprecision
from pyprecision.emulate.ir.bits import bit_count, reduce_precision
from pyprecision.emulate.ir.fused import Run, plan_runs, run_blocks
from pyprecision.emulate.ir.index import gather, scatter, sort_perm
from pyprecision.emulate.ir.numbers import (
    TileRounding,
    convert,
    finite_max,
    from_storage,
    round_to,
    to_storage,
    view_bits,
)
from pyprecision.emulate.ir.ops import (
    binary_rounded,
    binary_values,
    int_unary,
    matmul_batched,
    matmul_fp32,
    pe_transpose,
    unary_float,
    unary_rounded,
)
from pyprecision.emulate.ir.reduce import arg_reduce, float32_fold, narrow_fold
from pyprecision.emulate.ir.window import select_and_scatter
from pyprecision.emulate.shared import blocks
from pyprecision.emulate.shared.blocks import Recycler
from pyprecision.errors import EmulationError
from pyprecision.ir import (
    FLOAT_DTYPES,
    CallOp,
    DType,
    Function,
    Instruction,
    Module,
    NeuronAP,
    OpaqueOp,
    ScalarValue,
    SingleValueTensor,
    Tensor,
    TensorContractOp,
    is_identity_matrix,
    paused_gc,
    verify,
)

__all__ = ["SparseTrace", "run_ir"]

_FLOAT_STORAGE = {np.dtype(d.storage) for d in FLOAT_DTYPES}

def saturate_inf(x: np.ndarray, dt: DType, src: DType | None = None) -> np.ndarray:
    """±inf → ±(the largest finite value of ``dt``), then rounded to ``dt``; NaN stays NaN.

    ``x`` of dtype ``src``: where that is ``dt`` and every lane is finite, ``x`` itself (its values
    are ``dt``'s, which round to themselves; decision EM-13). NaN lanes keep the rounding, which
    gives them ``dt``'s NaN encoding."""
    if src is dt and bool(np.isfinite(x).all()):
        return np.asarray(x)
    top = finite_max(dt)
    y = np.where(np.isinf(x), np.copysign(top, x), x)
    return round_to(y, dt)


def is_own_value(x: np.ndarray, dt: DType) -> bool:
    """Whether ``round_to(x, dt)`` is ``x`` itself, for float32 ``x`` whose lanes are values of
    float dtype ``dt``: no NaN (the rounding quiets a signalling one and gives it ``dt``'s NaN
    encoding) and, where ``dt``'s rounding saturates (the fp8 formats), no ±inf (EM-13, EM-14)."""
    if not x.size:
        return True
    lo, hi = np.minimum.reduce(x, axis=None), np.maximum.reduce(x, axis=None)
    if np.isnan(lo) or np.isnan(hi):
        return False
    return not (dt.fmt is not None and _SATURATES.get(dt.fmt, True) and (np.isinf(lo) or
                                                                           np.isinf(hi)))


_SATURATES = {f.name: bool(f.default_saturate) for f in pyprecision.formats()}


#: the numerics an instruction's ``evaluate`` reads through ``ev.num`` (``ir`` never imports them)
NUMERICS = types.SimpleNamespace(
    saturate_inf=saturate_inf,
    is_own_value=is_own_value,
    round_to=round_to,
    convert=convert,
    from_storage=from_storage,
    view_bits=view_bits,
    float_to_int=pyprecision.float_to_int,
    binary_values=binary_values,
    binary_rounded=binary_rounded,
    unary_rounded=unary_rounded,
    int_unary=int_unary,
    unary_float=unary_float,
    matmul_fp32=matmul_fp32,
    matmul_batched=matmul_batched,
    pe_transpose=pe_transpose,
    gather=gather,
    scatter=scatter,
    sort_perm=sort_perm,
    select_and_scatter=select_and_scatter,
    arg_reduce=arg_reduce,
    float32_fold=float32_fold,
    narrow_fold=narrow_fold,
    reduce_precision=reduce_precision,
    bit_count=bit_count,
)


# -- the interpreter ------------------------------------------------------------------------------------
def _frame_numerics() -> types.SimpleNamespace:
    """NUMERICS with one frame's ``TileRounding`` for its roundings and casts (the identity test,
    ``ir.is_identity_matrix``, remembers the read-only identities it found for every frame and
    every pass alike; EM-16, P29)."""
    tiles = TileRounding()

    def unary_rounded(kind: str, x: np.ndarray, dt: Any, src: Any = None) -> np.ndarray:
        if kind in ("cast", "copy") and dt.is_float and np.asarray(x).dtype == np.float32:
            return tiles(x, dt)  # unary_float is the identity for these
        return NUMERICS.unary_rounded(kind, x, dt, src)

    return types.SimpleNamespace(**{**vars(NUMERICS), "round_to": tiles, "convert": tiles.convert,
                                    "unary_rounded": unary_rounded})


class TraceComplete(Exception):
    """Raised out of the run by a ``SparseTrace`` made with ``stop=True`` once it holds every
    instruction it wants: the rest of the program is not evaluated and the run has no outputs
    (decision TU11)."""


class StreamSink(Protocol):
    """A value taken block by block (:meth:`SparseTrace.stream`): called with each block in order
    (``start``, ``stop``, the block's flat values), then closed once."""

    def __call__(self, start: int, stop: int, block: np.ndarray) -> None: ...

    def close(self) -> None: ...


class SparseTrace(dict[int, np.ndarray]):
    """A trace that keeps the evaluator's fast paths (decision V26): the values the run makes
    anyway — an instruction evaluated on its own, a batched dot's results that are read, a fused
    run's outputs that are read after it — are recorded as ``id(instruction) → values`` (what a
    full trace records for them), for the instructions in ``wanted`` only, until ``budget`` bytes
    are recorded; values inside a fused run or nobody reads are not made for it. Values are still
    dropped after their last use (the trace keeps its own reference). With ``whole`` every
    instruction in ``wanted`` is recorded (what a full trace records for it): a fused run makes
    each wanted value one of its outputs (decision TU10), while the others are still freed after
    their last use: a full trace of a few instructions in the memory and nearly the time of an
    untraced run. With ``stop`` the run ends (:class:`TraceComplete`) as soon as every wanted
    instruction is recorded."""

    def __init__(self, wanted: set[int], budget: int, whole: bool = False, stop: bool = False):
        super().__init__()
        self.wanted, self.budget, self.whole, self.stop = wanted, int(budget), whole, stop

    def stream(self, key: int, shape: tuple[int, ...], block: int) -> StreamSink | None:
        """Where instruction ``key``'s value (of ``shape``), made in a fused run that nothing after
        reads, goes block by block (of ``block`` elements, the last one shorter) instead of being
        made whole and recorded (decision TU20): a sink, closed when the run ends; None (here,
        always) records it whole."""
        return None

    def record(self, key: int, value: np.ndarray) -> None:
        """Keep ``value`` as instruction ``key``'s when it was asked for, is not kept yet and fits."""
        if key in self.wanted and key not in self and value.nbytes <= self.budget:
            self[key] = value
            self.budget -= value.nbytes
            if self.stop and len(self) == len(self.wanted):
                raise TraceComplete


class _Frame:
    """What an instruction's ``evaluate`` sees: operand values, memory, the numerics (``num``)."""

    num = NUMERICS

    def __init__(
        self,
        module: Module | None,
        f: Function,
        mem: dict[int, np.ndarray],
        trace: dict[int, np.ndarray] | None = None,
    ):
        self.module, self.f, self.mem = module, f, mem
        self.num = _frame_numerics()
        self.vals: dict[int, np.ndarray] = {}
        self.trace = trace
        #: tensors whose buffer only memory holds (made by a row store, not read since): a row
        #: store writes into these in place; any other buffer is copied first (EM-9)
        self.private: set[int] = set()

    def operand(self, op: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
        if isinstance(op, ScalarValue):
            v = round_to(
                np.array(op.value, dtype=np.float64 if op.dtype.is_float else object), op.dtype
            )
            return v if shape is None else np.broadcast_to(v, shape)
        return self.vals[id(op)]

    def read(self, ap: NeuronAP) -> np.ndarray:
        x = self.mem[id(ap.tensor)]
        self.private.discard(id(ap.tensor))  # handed out: a later row store must not change it
        return view_bits(x, ap.tensor.dtype, ap.reinterpret) if ap.reinterpret is not None else x

    def write(
        self, ap: NeuronAP, x: np.ndarray, src: DType | None, rows: np.ndarray | None = None
    ) -> None:
        x = convert(x, src, ap.dtype)
        if ap.reinterpret is not None:
            x = view_bits(x, ap.reinterpret, ap.tensor.dtype)
        buf = self.mem[id(ap.tensor)]
        if rows is None:
            self.private.discard(id(ap.tensor))
            x = np.asarray(x)
            if x.shape == buf.shape and x.dtype == buf.dtype:
                self.mem[id(ap.tensor)] = _frozen(x)  # shared with the value, never written
            else:
                self.mem[id(ap.tensor)] = np.array(
                    np.broadcast_to(x, buf.shape), dtype=buf.dtype, order="C"
                )
            return
        if id(ap.tensor) not in self.private:  # shared or handed out: copy, then write rows
            buf = self.mem[id(ap.tensor)] = buf.copy()
            self.private.add(id(ap.tensor))
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
        insts = list(self.f.instructions())
        sparse = self.trace if isinstance(self.trace, SparseTrace) else None
        full = self.trace is not None and sparse is None
        drops = None if full else _last_uses(self.f, insts)
        # matmuls of one shape whose results nobody has read yet wait here and run as one batched
        # dot when the first of them is read (the lowering unrolls a batched dot_general into one
        # 2-D matmul per batch entry); not with a full trace (EM-12)
        pending = _PendingDots(self) if not full else None
        # runs of elementwise instructions on one large shape go block by block (EM-14); not
        # with a full trace, which wants every value whole; a whole sparse trace's wanted values
        # are outputs of their runs (TU10)
        keep = sparse.wanted if sparse is not None and sparse.whole else frozenset()
        runs = plan_runs(insts, keep) if not full else {}
        # the runs' outputs a whole trace makes (its wanted values, most dropped soon after) in
        # buffers used again once free, not fresh pages for each (EM-22)
        empty = Recycler().empty if keep else np.empty
        i = 0
        while i < len(insts):
            run = runs.get(i)
            steps = [insts[k] for k in run.hoisted] if run is not None else [insts[i]]
            for inst in steps:
                if pending is not None and pending.ids:
                    for op in inst._operands:
                        if id(op) in pending.ids:
                            pending.flush()
                            break
                if pending is not None and isinstance(inst, TensorContractOp) \
                        and pending.defer(inst):
                    pass
                else:
                    out = inst.evaluate(self)
                    if inst.result is not None:
                        self.vals[id(inst.result)] = np.asarray(out)
                        if full:
                            self.trace[id(inst)] = self.vals[id(inst.result)]  # type: ignore[index]
                        elif sparse is not None:
                            sparse.record(id(inst), self.vals[id(inst.result)])
            if run is not None:
                if pending is not None and any(k in pending.ids for k in run.inputs):
                    pending.flush()
                sinks = _sinks(sparse, run, insts) if sparse is not None and run.traced else {}
                run_blocks(run, insts, NUMERICS, self.vals, empty, sinks)  # no tile rounding (EM-16)
                for sink in sinks.values():
                    sink.close()
                if sparse is not None:
                    for k in range(i, run.stop):
                        res = insts[k].result
                        if res is not None and id(res) in self.vals:
                            sparse.record(id(insts[k]), self.vals[id(res)])
            for k in range(i, run.stop if run is not None else i + 1):
                if drops is not None:
                    for store, key in drops[k]:
                        if store == 0 and pending is not None and key in pending.ids:
                            pending.unwanted.add(key)
                        (self.vals if store == 0 else self.mem).pop(key, None)
            i = run.stop if run is not None else i + 1
        if pending is not None:
            pending.flush()

    def call(self, inst: CallOp) -> None:
        """Run the callee in a fresh frame; ``ins`` bound to its inputs, its outputs to ``outs``."""
        if self.module is None:
            raise EmulationError("a call needs the module")
        g = self.module.get_function(inst.callee)
        mem = _initial_memory(g)
        for ap, t in zip(inst.ins, g.inputs, strict=True):
            mem[id(t)] = convert(self.read(ap), ap.dtype, t.dtype)
        _Frame(self.module, g, mem).run()
        for ap, t in zip(inst.outs, g.outputs, strict=True):
            self.write(ap, mem[id(t)], t.dtype)

    def opaque(self, inst: OpaqueOp) -> None:
        """The kernels the emulator models: copy, add, softmax."""
        ins = [self.read(a) for a in inst.ins]
        outs = inst.outs
        if inst.kernel == "copy" and len(ins) == len(outs):
            for ap, x, a in zip(outs, ins, inst.ins, strict=True):
                _need_shape(inst, ap, x)
                self.write(ap, x, a.dtype)
        elif inst.kernel == "add" and len(outs) == 1 and ins:
            total = np.zeros(outs[0].shape)
            for x in ins:
                _need_shape(inst, outs[0], x)
                total = total + x.astype(np.float64)
            self.write(outs[0], total, None)
        elif inst.kernel == "softmax" and len(ins) == 1 and len(outs) == 1:
            _need_shape(inst, outs[0], ins[0])
            x = ins[0].astype(np.float64)
            with np.errstate(all="ignore"):
                e = np.exp(x - np.max(x, axis=-1, keepdims=True))
                self.write(outs[0], e / np.sum(e, axis=-1, keepdims=True), None)
        else:
            raise EmulationError(
                f"opaque kernel {inst.kernel!r} with {len(ins)} ins / {len(outs)} outs "
                "is not known to the emulator (known: copy, add, softmax)"
            )


class _PendingDots:
    """Deferred 2-D matmuls, grouped by operand shapes and result dtype; ``flush`` runs each group
    as one batched PE dot (``matmul_batched``: bit-identical per entry to ``matmul_fp32``) and
    rounds it to the result dtype once."""

    def __init__(self, frame: _Frame):
        self.frame = frame
        self.groups: dict[tuple[Any, ...], list[tuple[Any, np.ndarray, np.ndarray]]] = {}
        self.ids: set[int] = set()
        self.unwanted: set[int] = set()

    def defer(self, inst: TensorContractOp) -> bool:
        """Queue ``inst`` (True), or leave it to run now (False: an identity operand, which
        ``matmul_fp32`` does without a dot, or operands that are not float32 values)."""
        f = self.frame
        s, m = f.operand(inst.stationary), f.operand(inst.moving)
        if s.dtype != np.float32 or m.dtype != np.float32 or s.ndim != 2 or m.ndim != 2:
            return False
        if is_identity_matrix(m) or is_identity_matrix(s):
            return False
        r = inst.result
        assert r is not None
        self.groups.setdefault((s.shape, m.shape, r.dtype), []).append((r, s, m))
        self.ids.add(id(r))
        return True

    def flush(self) -> None:
        vals, num = self.frame.vals, self.frame.num
        for (_, _, dt), items in self.groups.items():
            if len(items) == 1:
                r, s, m = items[0]
                outs = [num.round_to(num.matmul_fp32(s, m), dt)]
            else:
                acc = num.matmul_batched([x[1] for x in items], [x[2] for x in items])
                outs = list(num.round_to(acc, dt))
            sparse = self.frame.trace if isinstance(self.frame.trace, SparseTrace) else None
            for (r, _, _), out in zip(items, outs, strict=True):
                if id(r) not in self.unwanted:
                    vals[id(r)] = out
                    if sparse is not None:
                        sparse.record(id(r.owner), out)
        self.groups.clear()
        self.ids.clear()
        self.unwanted.clear()


def _frozen(x: np.ndarray) -> np.ndarray:
    """A read-only view of ``x`` (a row store copies it before writing)."""
    v = x.view()
    v.flags.writeable = False
    return v


def _sinks(sparse: SparseTrace, run: Run, insts: list[Instruction]) -> dict[int, StreamSink]:
    """The sinks ``sparse`` takes ``run``'s trace-only values by (value id -> sink), in the run's
    order."""
    out: dict[int, StreamSink] = {}
    for k in run.body:
        res = insts[k].result
        if res is not None and id(res) in run.traced:
            sink = sparse.stream(id(insts[k]), run.shape, blocks.BLOCK)
            if sink is not None:
                out[id(res)] = sink
    return out


def _last_uses(f: Function, insts: list[Instruction]) -> list[list[tuple[int, int]]]:
    """For each instruction, what to drop after it: (0, id of a value) whose last reader it is (or
    that nobody reads), (1, id of a tensor) that no later instruction touches and that is not an
    output of ``f``."""
    last: dict[tuple[int, int], int] = {}
    keep = {id(t) for t in f.outputs}
    for i, inst in enumerate(insts):
        if inst.result is not None:
            last[(0, id(inst.result))] = i
        for op in inst.operands:
            if not isinstance(op, ScalarValue):
                last[(0, id(op))] = i
        for ap in inst.aps:
            if id(ap.tensor) not in keep:
                last[(1, id(ap.tensor))] = i
    drops: list[list[tuple[int, int]]] = [[] for _ in insts]
    for key, i in last.items():
        drops[i].append(key)
    return drops


def _need_shape(inst: Instruction, ap: NeuronAP, x: np.ndarray) -> None:
    if tuple(x.shape) != ap.shape:
        raise EmulationError(
            f"opaque kernel: @{ap.tensor.name} {list(ap.shape)} vs input {list(x.shape)}"
        )


# -- binding ------------------------------------------------------------------------------------------
def _initial_memory(f: Function) -> dict[int, np.ndarray]:
    mem: dict[int, np.ndarray] = {}
    for t in f.tensors:
        if isinstance(t, SingleValueTensor):
            v = np.array(t.value, dtype=np.float64 if t.dtype.is_float else object)
            mem[id(t)] = np.array(np.broadcast_to(round_to(v, t.dtype), t.shape), order="C")
        elif t.is_const:
            mem[id(t)] = _frozen(from_storage(t.value, t.dtype))  # type: ignore[arg-type]
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
            return _frozen(from_storage(a, t.dtype))  # already in the declared dtype: unchanged
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
    trace: dict[int, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Run a function (``function``, else ``@main``, else the first) on ``inputs`` (keyed by input tensor
    name) and return ``{output tensor name: array of its storage dtype}``. The module is verified first
    (VerifyError) unless ``check=False``; bad inputs raise EmulationError. With ``trace`` (a dict),
    every instruction's result is recorded in it as ``id(instruction) → values`` (float32 /
    int64, already rounded to the result dtype; with a trace no value is dropped early); a
    :class:`SparseTrace` records only what the fast paths make anyway."""
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
    # the run allocates arrays and small containers that reference counting frees; a cyclic
    # collection in the middle would walk every live IR object of the caller (decision P24)
    with paused_gc():
        _Frame(mod, f, mem, trace).run()
    return {t.name: np.ascontiguousarray(to_storage(mem[id(t)], t.dtype)) for t in f.outputs}
