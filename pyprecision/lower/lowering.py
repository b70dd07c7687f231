"""The driver: an HLO module (after the HLO passes) → one loop-IR function the precision passes run on.

ENTRY parameters become input tensors and their loads (tuples flattened, in order), the result becomes
output tensors and stores, constants become const tensors read by ``sb_atom_load`` (so DTypeMutator
const-folds them), fusions and calls are inlined, while loops with a static trip count (``lax.scan``,
``fori_loop``) are unrolled, conditionals compute every branch and select (decisions L1–L7 in
docs/decisions/lower.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyprecision import ir
from pyprecision.hlo import HloComputation, HloInstruction, HloModule, Shape, opcodes
from pyprecision.lower.batchnorm import BATCH_NORM
from pyprecision.lower.context import LV, LoweringContext, ir_shape
from pyprecision.lower.dot import DOTS
from pyprecision.lower.elementwise import ELEMENTWISE, Handler
from pyprecision.lower.gather import GATHERS
from pyprecision.lower.reduce import REDUCES
from pyprecision.lower.shapes import SHAPES
from pyprecision.lower.sort import SORTS
from pyprecision.lower.statics import fold
from pyprecision.lower.windows import WINDOWS

__all__ = ["MAX_UNROLL", "Lowered", "lower", "supported_opcodes"]

#: a while loop runs at most this many iterations when unrolled
MAX_UNROLL = 4096

#: the ops whose float operands ``--enable-saturate-infinity`` clamps first: those that can turn an
#: infinity into NaN (inf - inf, 0 · inf, inf / inf, rem(inf, y), sin/cos(inf), pow, and the sums
#: and products inside dot, convolution and reduce) — decision L11
SATURATE_BEFORE = opcodes.names_with(saturate_before=True)


@dataclass
class Lowered:
    """The lowered program: the IR ``module`` (one function, ``@main``), the IR input tensor names in
    HLO parameter order (tuple parameters flattened), the output tensor names in HLO result order,
    the HLO instructions in program order as ``(path, instruction)`` rows, and notes."""

    module: ir.Module
    inputs: list[str]
    outputs: list[str]
    rows: list[tuple[str, HloInstruction]]
    notes: list[str] = field(default_factory=list)

    @property
    def function(self) -> ir.Function:
        """The one function."""
        return self.module.main


def lowering_key(config: Any) -> tuple[bool, bool] | None:
    """What of ``config`` the lowering reads (None: no config): mixed-precision accumulation and
    saturate-infinity. Two configs with equal keys lower to the same program, so one lowering
    (copied with ``ir.clone_module``) serves both (decision P21)."""
    if config is None:
        return None
    return (bool(config.enable_mixed_precision_accumulation),
            bool(config.enable_saturate_infinity))  # fmt: skip


def supported_opcodes() -> list[str]:
    """Every opcode the lowering handles."""
    return sorted(set(_HANDLERS) | {"fusion", "call", "while", "conditional", "parameter"})


def lower(
    module: HloModule, *, filename: str | None = None, text: str | None = None, config: Any = None
) -> Lowered:
    """Lower ``module``'s ENTRY computation. ``text`` (the module's source) lets errors carry
    ``file:line:col``; ``config`` (a PrecisionConfig) sets what the lowering itself decides
    (``--disable-mixed-precision-accumulation`` marks reductions ``narrow_acc``). Raises
    LoweringError on anything it does not handle; the result is verified."""
    with ir.paused_gc(keep=True):  # decisions P24, P34
        return _lower(module, filename, text, config)


def _lower(module: HloModule, filename: str | None, text: str | None, config: Any) -> Lowered:
    f = ir.Function("main")
    mod = ir.Module([f])
    name = filename or getattr(module, "filename", None) or "<hlo>"
    ctx = LoweringContext(module, f, name, text, config=config)
    entry = module.entry
    inputs: list[str] = []
    for p in sorted(entry.parameters, key=lambda q: q.parameter_number or 0):
        ctx.loc = ctx.location(p, p.name)
        ctx.rows.append((p.name, p))
        ctx.values[id(p)] = _input(ctx, p.name, p.shape, inputs, p)
    root = _body(ctx, entry, "")
    ctx.loc = ctx.location(entry.root, entry.root.name).with_role("store")
    outputs: list[str] = []
    for i, v in enumerate(_leaves(root)):
        t = ir.Tensor(ctx.tensor_name(f"out{i}"), v.shape, v.dtype, "output")
        f.add_tensor(t)
        ctx.emit(ir.AffineStore(v, t), role="store")
        outputs.append(t.name)
    ir.verify(mod)
    return Lowered(mod, inputs, outputs, ctx.rows, ctx.notes)


def _input(ctx: LoweringContext, name: str, shape: Shape, names: list[str], p: HloInstruction) -> LV:
    if shape.is_tuple:
        return tuple(_input(ctx, f"{name}.{i}", s, names, p) for i, s in enumerate(shape.tuple_shapes))
    dt = ctx.ir_dtype(p, shape.element_type, "" if name == p.name else f"{name}: ")
    dims = ir_shape(tuple(shape.dimensions))
    t = ir.Tensor(ctx.tensor_name(name), dims, dt, "input")
    ctx.function.add_tensor(t)
    names.append(t.name)
    v = ir.Value(ctx.name(name), dt, dims)
    ctx.emit(ir.AffineLoad(t, v))
    return v


def _leaves(v: LV) -> list[ir.Value]:
    if isinstance(v, tuple):
        return [x for e in v for x in _leaves(e)]
    return [v]


def _body(ctx: LoweringContext, comp: HloComputation, prefix: str) -> LV:
    """Lower every non-parameter instruction of ``comp`` (parameters already bound) in operand
    order; returns the root's value."""
    for inst in comp.post_order():
        if inst.opcode == "parameter":
            if id(inst) not in ctx.values:
                raise ctx.error(inst, "parameter is not bound")
            continue
        path = prefix + inst.name
        ctx.loc = ctx.location(inst, path)
        ctx.rows.append((path, inst))
        ctx.values[id(inst)] = _lower_one(ctx, inst, path)
    return ctx.get(comp.root)


def _lower_one(ctx: LoweringContext, inst: HloInstruction, path: str) -> LV:
    ops = [ctx.get(o) for o in inst.operands]
    if (inst.opcode in SATURATE_BEFORE and ctx.config is not None and ctx.config.enable_saturate_infinity
            and not (inst.opcode == "reduce" and len(ops) > 2)):  # argmax/argmin: no NaN (L21)
        ops = [_saturated(ctx, o, inst.name) for o in ops]
    if inst.opcode in ("fusion", "call"):
        comp = inst.called("calls") or inst.called("to_apply")
        if comp is None:
            raise ctx.error(inst, "its called computation is missing")
        return inline(ctx, comp, ops, path + "/")
    if inst.opcode == "while":
        return _while(ctx, inst, ops, path)
    if inst.opcode == "conditional":
        return _conditional(ctx, inst, ops, path)
    handler = _HANDLERS.get(inst.opcode)
    if handler is None:
        rec = opcodes.record(inst.opcode)
        if rec is not None and rec.lowering is not None:  # its record's reason (L24, OP1, OP15)
            target = inst.attr("custom_call_target") if inst.opcode == "custom-call" else None
            raise ctx.refuse(inst, inst.opcode, f"custom-call target {target}" if target else "")
        raise ctx.error(inst, f"opcode {inst.opcode!r} is not lowered to the loop IR; supported: "
                        f"{', '.join(supported_opcodes())}")  # fmt: skip
    out = handler(ctx, inst, ops)
    fold(ctx, inst, ops, out)
    return out


def _saturated(ctx: LoweringContext, v: LV, base: str) -> LV:
    if not isinstance(v, ir.Value) or not v.dtype.is_float:
        return v
    out = ctx.value(f"{base}.satinf", v.dtype, v.shape)
    ctx.emit(ir.UnaryOp("satinf", v, out), role="aux")
    return out


def inline(ctx: LoweringContext, comp: HloComputation, args: list[LV], prefix: str) -> LV:
    """Lower ``comp`` with its parameters bound to ``args``, in a scope of its own (a computation
    may be inlined at several call sites)."""
    params = sorted(comp.parameters, key=lambda q: q.parameter_number or 0)
    if len(params) != len(args):
        raise ctx.error(comp.root, f"{comp.name} takes {len(params)} arguments, {len(args)} given")
    saved, saved_loc = ctx.values, ctx.loc
    ctx.values = {id(p): a for p, a in zip(params, args, strict=True)}
    try:
        return _body(ctx, comp, prefix)
    finally:
        ctx.values, ctx.loc = saved, saved_loc


def _while(ctx: LoweringContext, inst: HloInstruction, ops: list[LV], path: str) -> LV:
    """Unrolled: the trip count must follow from constants (decision L6)."""
    cond, body = inst.called("condition"), inst.called("body")
    if cond is None or body is None:
        raise ctx.error(inst, "condition or body computation missing")
    trips = _trip_count(ctx, inst, cond, body)
    if trips is None:
        raise ctx.refuse(inst, "while:trip-count", "its trip count")
    if trips > MAX_UNROLL:
        raise ctx.refuse(inst, "while:unroll-limit", f"{trips} iterations")
    state = ops[0]
    ctx.notes.append(f"{path}: while loop unrolled {trips} times")
    for i in range(trips):
        state = inline(ctx, body, [state], f"{path}/{i}/")
    return state


def _trip_count(
    ctx: LoweringContext, inst: HloInstruction, cond: HloComputation, body: HloComputation
) -> int | None:
    """N for the loops JAX emits: a counter element i of the state, initialised from a constant,
    ``i < N`` (N constant) in the condition and ``i + c`` (c constant) in the body."""
    root = cond.root
    if root.opcode != "compare" or len(root.operands) != 2:
        return None
    a, b = root.operands
    direction = root.attr("direction")
    if direction == "LT" and a.opcode == "get-tuple-element" and b.opcode == "constant":
        counter, bound = a, b  # i < N
    elif direction == "GT" and b.opcode == "get-tuple-element" and a.opcode == "constant":
        counter, bound = b, a  # N > i
    else:
        return None
    idx = (counter.attr_ints("index") or [-1])[0]
    init = _init_constant(inst.operands[0], idx)
    step = _body_step(body, idx)
    if init is None or step is None or step <= 0:
        return None
    n = int(bound.literal().reshape(-1)[0])
    return max(0, -(-(n - init) // step))


def _init_constant(state: HloInstruction, idx: int) -> int | None:
    if state.opcode != "tuple" or not 0 <= idx < len(state.operands):
        return None
    c = state.operands[idx]
    if c.opcode != "constant":
        return None
    return int(c.literal().reshape(-1)[0])


def _body_step(body: HloComputation, idx: int) -> int | None:
    root = body.root
    if root.opcode != "tuple" or not 0 <= idx < len(root.operands):
        return None
    nxt = root.operands[idx]
    if nxt.opcode != "add":
        return None
    x, c = nxt.operands
    if c.opcode == "get-tuple-element":
        x, c = c, x
    ok = (x.opcode == "get-tuple-element" and (x.attr_ints("index") or [-1])[0] == idx
          and x.operands[0].opcode == "parameter" and c.opcode == "constant")  # fmt: skip
    return int(c.literal().reshape(-1)[0]) if ok else None


def _conditional(ctx: LoweringContext, inst: HloInstruction, ops: list[LV], path: str) -> LV:
    """Every branch computed, the result selected by the predicate / branch index (decision L7)."""
    branches = [c for c in inst.called_computations]
    if not branches:
        raise ctx.error(inst, "no branch computations")
    pred, args = ops[0], ops[1:]
    if len(args) != len(branches):
        raise ctx.error(inst, f"{len(branches)} branches but {len(args)} branch operands")
    results = [inline(ctx, c, [a], f"{path}/{c.name}/") for c, a in zip(branches, args, strict=True)]
    is_pred = inst.operands[0].shape.element_type.name == "PRED"
    ctx.loc = ctx.location(inst, path)
    if is_pred:  # true_computation first, false second
        return _select_tree(ctx, pred, results[0], results[1], inst.name)
    out = results[-1]
    for k in range(len(branches) - 2, -1, -1):  # index k picks branch k; out of range → the last
        is_k = ctx.value(f"{inst.name}.is{k}", ir.uint8, ())
        ctx.emit(ir.BinaryOp("cmp_eq", pred, ir.ScalarValue(k, pred.dtype), is_k), role="aux")
        out = _select_tree(ctx, is_k, results[k], out, inst.name)
    return out


def _select_tree(ctx: LoweringContext, pred: ir.Value, a: LV, b: LV, base: str) -> LV:
    if isinstance(a, tuple):
        return tuple(_select_tree(ctx, pred, x, y, base) for x, y in zip(a, b, strict=True))
    p = pred
    if p.shape != a.shape:
        p = ctx.value(f"{base}.pred", ir.uint8, a.shape)
        ctx.emit(ir.BroadcastOp(pred, (), p), role="aux")
    out = ctx.value(base, a.dtype, a.shape)
    ctx.emit(ir.SelectOp(p, a, b, out))
    return out


_HANDLERS: dict[str, Handler] = {**ELEMENTWISE, **SHAPES, **DOTS, **BATCH_NORM, **WINDOWS,
                               **GATHERS, **SORTS, **REDUCES}

