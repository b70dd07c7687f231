"""One record per HLO opcode (decision OP1): its operand count, its shape rule, its traits, and
what the evaluator and the lowering do with it.

Every table keyed by opcode name elsewhere is derived from these records or checked against them
(tests/hlo/test_opcode_coverage.py): the verifier's rules (:data:`OPCODES`), the lowering's
saturate-before set and reducer kinds, the explain room's PE ops, the evaluator's vectorizable
set. The evaluator and the lowering keep their handler dicts as registration points; the coverage
test fails when an opcode has a handler its record does not promise, or a record promises one no
handler keeps. Adding an opcode is one record here plus its handlers.

``lowering`` / ``evaluation`` are None where a handler exists, else the reason that refuses it
(the located error of the lowering ends with "OPCODE REASON"). Every other way the lowering refuses
a well-formed module is a :class:`Refusal` record too (decision OP15): the conditional refusals of
a lowered opcode (a while whose trip count is not static: ``while:trip-count``) on its record's
``refusals``, the module-level ones (an element type the loop IR has not, an elided constant) in
:data:`MODULE_REFUSALS`; :data:`REFUSALS` holds them all by key, with one record per refused opcode
(key: the opcode). Shape rules live in ``shape_inference`` (the
elementwise and data-movement opcodes) and ``shape_rules_compute`` (the computing ones);
``shape=None`` means the opcode parses and prints but its shapes are not checked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyprecision.hlo import shape_inference as S
from pyprecision.hlo import shape_rules_compute as C
from pyprecision.hlo.shape import Shape

__all__ = ["BY_NAME", "MODULE_REFUSALS", "OPCODES", "REFUSALS", "UNCHECKED", "Opcode", "Refusal",
           "Rule", "infer", "names_with", "record", "refusal"]

Rule = S.Rule


@dataclass(frozen=True)
class Refusal:
    """One way the lowering refuses a well-formed module. ``key``: the opcode (the opcode is not
    lowered), ``opcode:condition`` (a lowered opcode refused in one case) or a module-level name;
    ``reason``: the end of the located error, ``file:line:col: NAME (OPCODE): DETAIL REASON``,
    where DETAIL names the construct (``its trip count``, ``element type f64``)."""

    key: str
    reason: str


def _when(opcode: str, **reasons: str) -> tuple[Refusal, ...]:
    """The conditional refusals of ``opcode``: ``trip_count=...`` is key ``opcode:trip-count``."""
    return tuple(Refusal(f"{opcode}:{k.replace('_', '-')}", r) for k, r in reasons.items())


@dataclass(frozen=True)
class Opcode:
    """One HLO opcode.

    ``elementwise``: the result element i depends on operand elements i only (a computation made
    of such opcodes runs on whole arrays); ``pe``: runs on the PE array (matmul engine);
    ``saturate_before``: ``--enable-saturate-infinity`` clamps its float operands first (an op that
    can turn an infinity into NaN, decision L11); ``reducer``: the IR reduce kind of a reducer
    ``ROOT op(p0, p1)``; ``commutative``: ``op(a, b) == op(b, a)`` bit for bit (NaN payloads per N6);
    ``refusals``: the cases of a lowered opcode that the lowering refuses (decision OP15).
    """

    name: str
    min_operands: int
    max_operands: int | None
    shape: S.Infer | None = None
    elementwise: bool = False
    pe: bool = False
    saturate_before: bool = False
    reducer: str | None = None
    commutative: bool = False
    lowering: str | None = None
    evaluation: str | None = None
    refusals: tuple[Refusal, ...] = ()

    @property
    def rule(self) -> Rule:
        """The verifier's view: operand bounds and the shape rule."""
        return Rule(self.min_operands, self.max_operands, self.shape)


_COLLECTIVE = ("is not lowered: the pipeline emulates one program on one NeuronCore, and a "
               "collective, asynchronous, I/O or dynamic-shape op has no meaning there; run it "
               "after SPMD partitioning has removed it")  # fmt: skip
_NO_EVAL = "is not evaluated: the evaluator runs one program on one device, without I/O"
_COMPLEX = ("is not lowered: the loop IR has no complex dtype (neuronx-cc lowers no complex "
            "arithmetic); keep real and imaginary parts as separate float arrays")  # fmt: skip
_RNG = ("is not lowered: the notes of neuronx-cc do not say which generator the device runs for "
        "it, so its bits cannot be emulated (an emulation would give XLA's {what} bits, not the "
        "device's). Draw the random bits with jax.random (its threefry is integer HLO, which "
        "lowers) or pass them in as an input; `pyprecision hlo-run` without precision flags "
        "evaluates XLA's own generator")  # fmt: skip
_NO_IR_OP = ("is not lowered: the loop IR has no {op} instruction and the neuronx-cc notes do not "
             "say how the device computes it, so its bits cannot be emulated; `pyprecision "
             "hlo-run` without precision flags evaluates it as XLA does")  # fmt: skip


_NOT = "is not lowered"
_WINDOW_SIZE = "is more than the lowering unrolls (4096 positions, lower.MAX_WINDOW)"


def _window(opcode: str) -> tuple[Refusal, ...]:
    """The window refusals of convolution and select-and-scatter (lower/windows.py
    ``window_of``; a reversed reduce-window window is malformed, the verifier's rule)."""
    return _when(opcode, window_reversal="is not lowered (a reversed window reads its operand "
                 "backwards; write a reverse of the operand instead, as JAX does)",
                 window_size=_WINDOW_SIZE)  # fmt: skip


_STARTS = ("is not known at compile time (it depends on data); only static starts (an unrolled "
           "scan's counter) are lowered")  # fmt: skip
_REDUCERS = "add, multiply, maximum, minimum, and, or of its two parameters"


def _rec(name: str, lo: int, hi: int | None, shape: S.Infer | None = None, **kw: Any) -> Opcode:
    return Opcode(name, lo, hi, shape, **kw)


def _ew(name: str, lo: int, shape: S.Infer, **kw: Any) -> Opcode:
    return Opcode(name, lo, lo, shape, elementwise=True, **kw)


_SAT = {"saturate_before": True}
_UNARY = [
    _ew("abs", 1, S._unary), _ew("cbrt", 1, S._unary), _ew("ceil", 1, S._unary),
    _ew("copy", 1, S._unary), _ew("cosine", 1, S._unary, **_SAT),
    _ew("count-leading-zeros", 1, S._unary), _ew("erf", 1, S._unary),
    _ew("exponential", 1, S._unary), _ew("exponential-minus-one", 1, S._unary),
    _ew("floor", 1, S._unary), _ew("is-finite", 1, S._unary), _ew("log", 1, S._unary),
    _ew("log-plus-one", 1, S._unary), _ew("logistic", 1, S._unary), _ew("negate", 1, S._unary),
    _ew("not", 1, S._unary), _ew("popcnt", 1, S._unary),
    _ew("round-nearest-afz", 1, S._unary), _ew("round-nearest-even", 1, S._unary),
    _ew("rsqrt", 1, S._unary), _ew("sign", 1, S._unary), _ew("sine", 1, S._unary, **_SAT),
    _ew("sqrt", 1, S._unary), _ew("tan", 1, S._unary, lowering=_NO_IR_OP.format(op="tan")),
    _ew("tanh", 1, S._unary),
    _ew("real", 1, S._unary, lowering=_COMPLEX, evaluation="is not evaluated: complex dtypes "
        "have no NumPy array form here"),
    _ew("imag", 1, S._unary, lowering=_COMPLEX, evaluation="is not evaluated: complex dtypes "
        "have no NumPy array form here"),
]  # fmt: skip
_COMM = {"commutative": True}
_BINARY = [
    _ew("add", 2, S._binary, reducer="add", **_COMM, **_SAT),
    _ew("multiply", 2, S._binary, reducer="mul", **_COMM, **_SAT),
    _ew("maximum", 2, S._binary, reducer="max", **_COMM),
    _ew("minimum", 2, S._binary, reducer="min", **_COMM),
    _ew("and", 2, S._binary, reducer="and", **_COMM),
    _ew("or", 2, S._binary, reducer="or", **_COMM),
    _ew("xor", 2, S._binary, **_COMM),
    _ew("subtract", 2, S._binary, **_SAT), _ew("divide", 2, S._binary, **_SAT),
    _ew("remainder", 2, S._binary, **_SAT), _ew("power", 2, S._binary, **_SAT),
    _ew("atan2", 2, S._binary), _ew("compare", 2, S._binary),
    _ew("shift-left", 2, S._binary), _ew("shift-right-arithmetic", 2, S._binary),
    _ew("shift-right-logical", 2, S._binary),
    _ew("complex", 2, S._binary, lowering=_COMPLEX, evaluation="is not evaluated: complex "
        "dtypes have no NumPy array form here"),
]  # fmt: skip
_OTHER = [
    _ew("select", 3, S._select), _ew("clamp", 3, S._clamp), _ew("convert", 1, S._convert),
    _ew("reduce-precision", 1, S._reduce_precision),
    _rec("bitcast-convert", 1, 1, S._bitcast_convert,
         refusals=_when("bitcast-convert", widths=_NOT)),
    _rec("broadcast", 1, 1, S._broadcast), _rec("reshape", 1, 1, S._reshape),
    _rec("transpose", 1, 1, S._transpose), _rec("slice", 1, 1, S._slice),
    _rec("concatenate", 1, None, S._concatenate), _rec("iota", 0, 0, S._iota),
    _rec("reverse", 1, 1, S._reverse), _rec("pad", 2, 2, S._pad),
    _rec("dynamic-slice", 2, None, S._dynamic_slice, refusals=_when("dynamic-slice", index=_STARTS)),
    _rec("dynamic-update-slice", 3, None, S._dynamic_update_slice,
         refusals=_when("dynamic-update-slice", index=_STARTS)),
    _rec("tuple", 0, None, S._tuple), _rec("get-tuple-element", 1, 1, S._get_tuple_element),
    _rec("parameter", 0, 0, S._no_operands),  # bound by the callers of a computation
    _rec("constant", 0, 0, S._no_operands, refusals=_when("constant", tuple="are not lowered")),
    # the computing opcodes (shape_rules_compute)
    _rec("dot", 2, 4, C._dot, pe=True, saturate_before=True,  # a sparse dot: metadata operands
         refusals=_when("dot", integer="reaches the PE only through F32: run the HLO pass "
                        "neuron-int-matmul-downcast first (it is on by default)")),
    _rec("convolution", 2, 2, C._convolution, pe=True, saturate_before=True,
         refusals=_window("convolution")),
    _rec("reduce", 2, None, C._reduce, saturate_before=True, refusals=_when(
        "reduce",
        operands="is not lowered (only JAX's argmax / argmin, a reduce of values and indices, and "
        "reducers that combine each operand on its own)",
        reducer=f"is not one of {_REDUCERS}",
        argreduce="is lowered only when it is JAX's argmax / argmin (values, then integer "
        "indices; the comparator picks by GT / LT, NaN first, the lower index on ties); this "
        "reducer is not",
        fold_limit="exceeds 256 (lower.MAX_FOLD); so long a fold is not lowered")),
    _rec("reduce-window", 2, None, C._reduce_window, refusals=_when(  # reversal: malformed
        "reduce-window", window_size=_WINDOW_SIZE, variadic=_NOT,
        reducer="is not add/multiply/maximum/minimum/and/or")),
    _rec("select-and-scatter", 3, 3, C._select_and_scatter,
         refusals=_window("select-and-scatter") + _when(
             "select-and-scatter", scalar=_NOT, dilated=_NOT,
             select="is not compare(a, b) of its two parameters with direction GE, GT, LE or LT; "
             "such a select is not lowered",
             scatter="is not add(a, b) of its two parameters; such a scatter is not lowered")),
    _rec("gather", 2, 2, C._gather, refusals=_when("gather", scalar=_NOT)),
    _rec("scatter", 3, None, C._scatter, refusals=_when(
        "scatter", variadic=_NOT, scalar=_NOT,
        combiner=f"is not {_REDUCERS}, nor its second parameter (set); such a combiner is not "
        "lowered")),
    _rec("sort", 1, None, C._sort, refusals=_when(
        "sort", scalar=_NOT,
        comparator="is not one JAX writes (compare LT/GT of an operand pair, optionally NaN/-0 "
        "canonicalised, or a lexicographic or/and of such); such a sort is not lowered")),
    _rec("topk", 1, 1, C._topk),
    _rec("map", 1, None, C._map, lowering="is not lowered: apply its computation to the arrays "
         "instead (XLA's own passes inline map; JAX never emits it)"),
    _rec("batch-norm-training", 3, 3, C._batch_norm),
    _rec("batch-norm-inference", 5, 5, C._batch_norm),
    _rec("batch-norm-grad", 5, 5, C._batch_norm),
    _rec("rng-bit-generator", 1, 1, C._rng_bit_generator,
         lowering=_RNG.format(what="Philox / ThreeFry")),
    _rec("call", 0, None, C._call), _rec("fusion", 0, None, C._call),
    _rec("while", 1, 1, C._while, refusals=_when(
        "while",
        trip_count="does not follow from constants (a data-dependent loop); only static loops "
        "(lax.scan, fori_loop) are lowered, by unrolling",
        unroll_limit="exceed the unroll limit 4096 (lower.MAX_UNROLL)")),
    _rec("conditional", 2, None, C._conditional),
]  # fmt: skip
#: Known opcodes whose shapes are not checked (collectives, async, I/O, control).
UNCHECKED = ("add-dependency", "after-all", "all-gather", "all-gather-done", "all-gather-start",
             "all-reduce", "all-reduce-done", "all-reduce-start", "all-to-all", "async-done",
             "async-start", "async-update", "bitcast", "cholesky", "collective-broadcast",
             "collective-permute", "collective-permute-done", "collective-permute-start",
             "copy-done", "copy-start", "custom-call", "domain", "dynamic-reshape", "fft",
             "get-dimension-size", "infeed", "opt-barrier", "outfeed", "partition-id",
             "ragged-all-to-all", "ragged-dot", "recv", "recv-done", "reduce-scatter",
             "replica-id", "rng", "rng-get-and-update-state", "send", "send-done",
             "set-dimension-size", "stochastic-convert", "triangular-solve")
#: lowered as no-ops or constants though their shapes are not checked
_UNCHECKED_LOWERED = ("add-dependency", "after-all", "bitcast", "opt-barrier", "partition-id",
                      "replica-id")
#: evaluated though their shapes are not checked
_UNCHECKED_EVALUATED = ("bitcast", "custom-call")
_LINALG = ("cholesky", "triangular-solve", "fft", "stochastic-convert", "ragged-dot")
_UNCHECKED: list[Opcode] = []
for _name in UNCHECKED:
    _low: str | None = None if _name in _UNCHECKED_LOWERED else _COLLECTIVE
    if _name == "rng":
        _low = _RNG.format(what="uniform / normal")
    elif _name == "custom-call":
        _low = "is not lowered (it runs as an opaque kernel on Neuron)"  # named by its target
    elif _name in _LINALG:
        _low = _NO_IR_OP.format(op=_name)
    _eval: str | None = None if _name in _UNCHECKED_EVALUATED else _NO_EVAL
    if _name in _LINALG:
        _eval = "is not evaluated: JAX on CPU runs it as a LAPACK / DUCC custom-call, not this op"
    elif _name == "rng":
        _eval = "is not evaluated: XLA's rng is deprecated (JAX emits rng-bit-generator)"
    _UNCHECKED.append(_rec(_name, 0, None, None, lowering=_low, evaluation=_eval))

#: every opcode, by name
BY_NAME: dict[str, Opcode] = {r.name: r for r in [*_UNARY, *_BINARY, *_OTHER, *_UNCHECKED]}
#: the verifier's view: opcode -> Rule
OPCODES: dict[str, Rule] = {name: r.rule for name, r in BY_NAME.items()}

_DTYPES = ("bf16, f16, f32, f8e4m3, f8e4m3fn, f8e5m2, pred, s16, s32, s64, s8, u16, u32, u64, "
           "u8")  # fmt: skip
#: the refusals no one opcode owns (decision OP15): an element type the loop IR has not (named
#: at the instruction that has it), a constant whose values the text does not hold
MODULE_REFUSALS: dict[str, Refusal] = {r.key: r for r in (
    Refusal("element-type", f"has no loop-IR dtype (supported: {_DTYPES}); convert it in the "
            "model first"),
    Refusal("elided-constant", "were elided by XLA ({...}); print the module with its large "
            "constants (as_text(print_large_constants=True) or --xla_dump_hlo_as_text)"),
)}  # fmt: skip
#: every refusal by key: one per refused opcode, the conditional ones, the module-level ones
REFUSALS: dict[str, Refusal] = {
    **{n: Refusal(n, r.lowering) for n, r in BY_NAME.items() if r.lowering is not None},
    **{c.key: c for r in BY_NAME.values() for c in r.refusals},
    **MODULE_REFUSALS,
}


def refusal(key: str) -> Refusal:
    """The refusal record ``key`` (KeyError for a key no record has)."""
    return REFUSALS[key]


def record(opcode: str) -> Opcode | None:
    """The record of ``opcode`` (None for a name HLO does not have)."""
    return BY_NAME.get(opcode)


def names_with(**traits: Any) -> frozenset[str]:
    """The opcodes whose records have every trait given (``names_with(pe=True)``)."""
    return frozenset(n for n, r in BY_NAME.items()
                     if all(getattr(r, k) == v for k, v in traits.items()))


def infer(inst: Any, operand_shapes: list[Shape]) -> Shape | None:
    """The result shape ``inst``'s rule implies, None when only the operands are constrained.
    Raises KeyError for an unknown opcode and ValueError for a violated rule."""
    r = BY_NAME[inst.opcode]
    n = len(operand_shapes)
    if n < r.min_operands or (r.max_operands is not None and n > r.max_operands):
        want = (str(r.min_operands) if r.max_operands == r.min_operands else
                f"at least {r.min_operands}" if r.max_operands is None else
                f"{r.min_operands} to {r.max_operands}")
        raise ValueError(f"{inst.opcode} takes {want} operand(s), got {n}")
    return None if r.shape is None else r.shape(inst, operand_shapes)
