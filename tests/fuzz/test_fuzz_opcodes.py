"""Differential fuzzing (issue 24, decision OP10): hypothesis builds random well-typed elementwise
HLO modules from the opcode table (hlo.opcodes) and asserts the HLO evaluator and the pipeline
under ``--auto-cast none`` give the same bits.

Inputs are drawn from each dtype's edge values: NaN of both signs, ±0, ±inf, subnormals, the
largest finite values, INT_MIN / -1 / 0 (integer /0 and MIN/-1), shift amounts negative and ≥ the
width; compare takes every direction and, on floats, both orders (FLOAT, TOTALORDER). fp8 is left
out of the arithmetic (the IR's fp8 cast saturates, the evaluator's does not: OP8) but converts
into and out of it where no value overflows. Budget: ``FUZZ_OPCODES_EXAMPLES`` (default 60, a few
seconds); the long run::

    FUZZ_OPCODES_EXAMPLES=5000 python -m pytest -q tests/fuzz/test_fuzz_opcodes.py
"""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyprecision import emulate, frontend, hlo
from pyprecision.hlo import opcodes

NONE = frontend.parse_flags(["--auto-cast", "none"])
EXAMPLES = int(os.environ.get("FUZZ_OPCODES_EXAMPLES", "60"))
N = 8  # elements per array

FLOATS = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
INTS = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "u32": np.uint32, "s64": np.int64,
        "u64": np.uint64}
#: evaluated and lowered elementwise opcodes, by the operand kinds they accept
_FLOAT_UNARY = ["abs", "ceil", "floor", "negate", "sign", "sqrt", "rsqrt", "exponential", "log",
                "tanh", "logistic", "sine", "cosine", "cbrt", "log-plus-one",
                "exponential-minus-one", "round-nearest-even", "round-nearest-afz", "copy"]
_FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder",
                 "power", "atan2"]
_INT_UNARY = ["abs", "negate", "sign", "not", "popcnt", "count-leading-zeros", "copy"]
_INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and",
               "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"]
_PRED_BINARY = ["and", "or", "xor"]


def _float_edges(dt: type) -> list[float]:
    fi = ml_dtypes.finfo(dt)
    tiny, sub = float(fi.tiny), float(fi.smallest_subnormal)
    return [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 0.49999997, 3.0, -7.25, 1e-3, 100.0,
            float(fi.max), -float(fi.max), tiny, -tiny, sub, -sub, 3 * sub, np.inf, -np.inf,
            np.nan, -np.nan]


def _int_edges(dt: type) -> list[int]:
    i = np.iinfo(dt)
    return sorted({0, 1, 2, 3, 7, i.bits - 1, i.bits, i.bits + 1, i.max, i.max - 1, i.min,
                   i.min + 1, -1 if i.min else 5, -3 if i.min else 9, -i.bits if i.min else 64})


def _values(draw: st.DrawFn, t: str) -> np.ndarray:
    if t == "pred":
        return np.array(draw(st.lists(st.booleans(), min_size=N, max_size=N)))
    if t in FLOATS:
        vals = draw(st.lists(st.sampled_from(_float_edges(FLOATS[t])), min_size=N, max_size=N))
        return np.array(vals, np.float32).astype(FLOATS[t])
    dt = INTS[t]
    vals = draw(st.lists(st.sampled_from(_int_edges(dt)), min_size=N, max_size=N))
    return np.array(vals, dtype=object).astype(dt)


@st.composite
def modules(draw: st.DrawFn) -> tuple[str, list[np.ndarray]]:
    """A module of two parameters of one dtype and a chain of 1-4 elementwise instructions, every
    one of them an output (a tuple root)."""
    t = draw(st.sampled_from(["pred", *FLOATS, *INTS]))
    ins = [_values(draw, t), _values(draw, t)]
    lines = [f"  p0 = {t}[{N}] parameter(0)", f"  p1 = {t}[{N}] parameter(1)"]
    vals = {t: ["p0", "p1"]}
    for k in range(draw(st.integers(1, 4))):
        name = f"v{k}"
        kinds = [x for x in vals if vals[x]]
        u = draw(st.sampled_from(kinds))
        a, b = (draw(st.sampled_from(vals[u])) for _ in range(2))
        choice = draw(st.sampled_from(["unary", "binary", "compare", "select", "clamp",
                                       "convert"]))
        if choice == "compare":
            d = draw(st.sampled_from(list(hlo.typed_attrs.DIRECTIONS)))
            order = ""
            if u in FLOATS:
                order = draw(st.sampled_from(["", ", type=FLOAT", ", type=TOTALORDER"]))
            lines.append(f"  {name} = pred[{N}] compare({a}, {b}), direction={d}{order}")
            vals.setdefault("pred", []).append(name)
            continue
        if choice == "select" and vals.get("pred"):
            p = draw(st.sampled_from(vals["pred"]))
            lines.append(f"  {name} = {u}[{N}] select({p}, {a}, {b})")
        elif choice == "clamp" and u != "pred":
            lo = draw(st.sampled_from(vals[u]))
            lines.append(f"  {name} = {u}[{N}] clamp({lo}, {a}, {b})")
        elif choice == "convert" and u in FLOATS:
            to = draw(st.sampled_from([x for x in FLOATS if x != u]))
            lines.append(f"  {name} = {to}[{N}] convert({a})")
            vals.setdefault(to, []).append(name)
            continue
        elif choice == "unary" or u == "pred" and choice != "binary":
            op = draw(st.sampled_from(_FLOAT_UNARY if u in FLOATS else
                                      ["not"] if u == "pred" else _INT_UNARY))
            lines.append(f"  {name} = {u}[{N}] {op}({a})")
        else:
            op = draw(st.sampled_from(_FLOAT_BINARY if u in FLOATS else
                                      _PRED_BINARY if u == "pred" else _INT_BINARY))
            lines.append(f"  {name} = {u}[{N}] {op}({a}, {b})")
        vals[u].append(name)
    made = [ln.split(" = ") for ln in lines[2:]]
    names = ", ".join(n.strip() for n, _ in made)
    shapes = ", ".join(rhs.split(" ")[0] for _, rhs in made)
    body = "\n".join([*lines, f"  ROOT out = ({shapes}) tuple({names})"])
    return f"HloModule fuzz\n\nENTRY e {{\n{body}\n}}\n", ins


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.astype(np.uint8) if a.dtype == bool else a.view(f"u{a.dtype.itemsize}")


def _grid(t: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the dtype's edge values."""
    if t == "pred":
        e: list = [False, True]
        return np.array([x for x in e for _ in e]), np.array([y for _ in e for y in e])
    if t in FLOATS:
        e = _float_edges(FLOATS[t])
        a = np.array([x for x in e for _ in e], np.float32).astype(FLOATS[t])
        return a, np.array([y for _ in e for y in e], np.float32).astype(FLOATS[t])
    e = _int_edges(INTS[t])
    a = np.array([x for x in e for _ in e], dtype=object).astype(INTS[t])
    return a, np.array([y for _ in e for y in e], dtype=object).astype(INTS[t])


def _grid_cases() -> list[tuple[str, str, str]]:
    out = []
    for t in ["pred", *FLOATS, *INTS]:
        unary = _FLOAT_UNARY if t in FLOATS else ["not"] if t == "pred" else _INT_UNARY
        binary = _FLOAT_BINARY if t in FLOATS else _PRED_BINARY if t == "pred" else _INT_BINARY
        out += [(t, op, f"{op}(p0)") for op in unary] + [(t, op, f"{op}(p0, p1)") for op in binary]
        if t in FLOATS:
            out.append((t, "is-finite", "is-finite(p0)"))
        for order in (["", ", type=TOTALORDER"] if t in FLOATS else [""]):
            calls = [f"compare(p0, p1), direction={d}{order}" for d in hlo.typed_attrs.DIRECTIONS]
            out.append((t, "compare" + order, "|".join(calls)))
    return out


@pytest.mark.parametrize("t,op,calls", _grid_cases(), ids=lambda v: str(v)[:40])
def test_every_opcode_on_every_pair_of_edge_values(t, op, calls):
    """Each (dtype, opcode) on the full grid of edge-value pairs: the same bits both ways."""
    a, b = _grid(t)
    n = a.size
    lines = [f"  p0 = {t}[{n}] parameter(0)", f"  p1 = {t}[{n}] parameter(1)"]
    for k, call in enumerate(calls.split("|")):
        rt = "pred" if call.startswith("compare") or op == "is-finite" else t
        lines.append(f"  v{k} = {rt}[{n}] {call}")
    names = [ln.split(" = ")[0].strip() for ln in lines[2:]]
    shapes = [ln.split(" = ")[1].split(" ")[0] for ln in lines[2:]]
    text = ("HloModule grid\n\nENTRY e {\n" + "\n".join(lines) +
            f"\n  ROOT out = ({', '.join(shapes)}) tuple({', '.join(names)})\n}}\n")
    _same_bits(text, [a, b])


def test_every_fuzzed_opcode_is_an_evaluated_and_lowered_elementwise_record():
    for op in {*_FLOAT_UNARY, *_FLOAT_BINARY, *_INT_UNARY, *_INT_BINARY, "compare", "select",
               "clamp", "convert", "is-finite"}:
        r = opcodes.record(op)
        assert r is not None and r.elementwise and r.lowering is None and r.evaluation is None, op


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 200,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(modules())
def test_the_evaluator_and_the_pipeline_give_the_same_bits(case):
    text, ins = case
    _same_bits(text, ins)


def _same_bits(text: str, ins: list[np.ndarray]) -> None:
    m = hlo.parse(text, "fuzz.hlo")
    wants = emulate.run_hlo(m, ins)
    gots = emulate.run_hlo(m, ins, NONE)
    for k, (want, got) in enumerate(zip(wants, gots, strict=True)):
        got = np.asarray(got)
        if want.dtype == bool:
            got = got.astype(bool)
        g, w = _bits(got), _bits(want)
        bad = np.flatnonzero(g != w)
        assert not bad.size, (f"{text}\nv{k}: at {bad[:8]} inputs "
                              f"{[(x.reshape(-1)[bad[:8]]) for x in ins]}: evaluator "
                              f"{want.reshape(-1)[bad[:8]]} pipeline {got.reshape(-1)[bad[:8]]}")


@pytest.mark.parametrize("f8", ["f8e4m3fn", "f8e5m2"])
@pytest.mark.parametrize("src", list(FLOATS))
def test_converts_into_and_out_of_fp8_in_range(src, f8):
    """fp8 converts of every in-range edge value (±0, subnormals of both, NaN of both signs): the
    same bits; out of range the IR's cast saturates by design (OP8), so those stay out."""
    dt = {"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[f8]
    big = float(ml_dtypes.finfo(dt).max)
    e = [x for x in _float_edges(FLOATS[src]) + _float_edges(dt) if np.isnan(x) or abs(x) <= big]
    x = np.array(e, np.float32).astype(FLOATS[src])
    n = x.size
    text = (f"HloModule f8\n\nENTRY e {{\n  p0 = {src}[{n}] parameter(0)\n"
            f"  a = {f8}[{n}] convert(p0)\n  b = {src}[{n}] convert(a)\n"
            f"  ROOT out = ({f8}[{n}], {src}[{n}]) tuple(a, b)\n}}\n")
    _same_bits(text, [x])


@st.composite
def movement(draw: st.DrawFn) -> tuple[str, list[np.ndarray]]:
    """One data-movement instruction with random attributes on a random f32/s8 [r, c] array."""
    t = draw(st.sampled_from(["f32", "s8", "bf16"]))
    r, c = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    x = _values_n(draw, t, r * c).reshape(r, c)
    op = draw(st.sampled_from(["slice", "pad", "transpose", "reverse", "concatenate",
                               "broadcast", "reshape", "iota"]))
    p = f"  p0 = {t}[{r},{c}] parameter(0)"
    if op == "slice":
        spec, dims = [], []
        for n in (r, c):
            a = draw(st.integers(0, n))
            b = draw(st.integers(a, n))
            s = draw(st.integers(1, 3))
            spec.append(f"[{a}:{b}:{s}]")
            dims.append((b - a + s - 1) // s)
        call = f"{t}[{dims[0]},{dims[1]}] slice(p0), slice={{{','.join(spec)}}}"
    elif op == "pad":
        spec, dims = [], []
        for n in (r, c):
            i = draw(st.integers(0, 2))
            lo, hi = draw(st.integers(-n, 3)), draw(st.integers(-n, 3))
            size = lo + hi + n + (n - 1) * i
            if size < 0:
                lo, hi = 0, 0
                size = n + (n - 1) * i
            spec.append(f"{lo}_{hi}_{i}")
            dims.append(size)
        p += f"\n  v = {t}[] constant({draw(st.sampled_from(['-1', '0', '3']))})"
        call = f"{t}[{dims[0]},{dims[1]}] pad(p0, v), padding={'x'.join(spec)}"
    elif op == "transpose":
        call = f"{t}[{c},{r}] transpose(p0), dimensions={{1,0}}"
    elif op == "reverse":
        d = draw(st.sampled_from(["{0}", "{1}", "{0,1}"]))
        call = f"{t}[{r},{c}] reverse(p0), dimensions={d}"
    elif op == "concatenate":
        call = f"{t}[{r},{2 * c}] concatenate(p0, p0), dimensions={{1}}"
    elif op == "broadcast":
        call = f"{t}[{r},3,{c}] broadcast(p0), dimensions={{0,2}}"
    elif op == "reshape":
        call = f"{t}[{r * c}] reshape(p0)"
    else:
        call = f"{t}[{r},{c}] iota(), iota_dimension={draw(st.integers(0, 1))}"
    return f"HloModule mv\n\nENTRY e {{\n{p}\n  ROOT out = {call}\n}}\n", [x]


def _values_n(draw: st.DrawFn, t: str, n: int) -> np.ndarray:
    if t in FLOATS:
        vals = draw(st.lists(st.sampled_from(_float_edges(FLOATS[t])), min_size=n, max_size=n))
        return np.array(vals, np.float32).astype(FLOATS[t])
    vals = draw(st.lists(st.sampled_from(_int_edges(INTS[t])), min_size=n, max_size=n))
    return np.array(vals, dtype=object).astype(INTS[t])


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 200,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(movement())
def test_data_movement_opcodes_give_the_same_bits(case):
    text, ins = case
    _same_bits(text, ins)
