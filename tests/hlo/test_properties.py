"""Hypothesis properties: random modules round-trip, passes keep text well-formed, the integer
dot rewrite is exact below 2^24 and equals the cast core's int_dot beyond."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision
from pyprecision import hlo

TYPES = ["s8", "s32", "bf16", "f16", "f32", "f64", "f8e4m3fn", "f8e5m2", "s4", "pred"]
PASSES = ["neuron-int-matmul-downcast", "batch-norm-training-upcast", "upcast-all-to-fp32"]


@st.composite
def modules(draw):  # type: ignore[no-untyped-def]
    """New-style (or old-style) module text built from a random op list."""
    old = draw(st.booleans())
    pct = "%" if old else ""
    lines, live = [], []
    nparams = draw(st.integers(1, 3))
    for i in range(nparams):
        t = draw(st.sampled_from(TYPES))
        lines.append((f"p{i}.{i + 1}", f"{t}[2,2]{{1,0}}", f"parameter({i})", []))
        live.append((f"p{i}.{i + 1}", t))
    for k in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["convert", "add", "dot", "constant", "bnt"]))
        name = f"{kind}.{100 + k}"
        a = draw(st.sampled_from(live))
        if kind == "convert":
            t = draw(st.sampled_from(TYPES))
            lines.append((name, f"{t}[2,2]{{1,0}}", "convert", [a]))
        elif kind == "add":
            lines.append((name, f"{a[1]}[2,2]{{1,0}}", "add", [a, a]))
        elif kind == "dot":
            b = draw(st.sampled_from([x for x in live if x[1] == a[1]]))
            t = draw(st.sampled_from(["s32", a[1]]))
            lines.append((name, f"{t}[2,2]{{1,0}}", "dot", [a, b],
                          ", lhs_contracting_dims={1}, rhs_contracting_dims={0}"))
        elif kind == "constant":
            t = draw(st.sampled_from(["bf16", "f16", "s32", "f32"]))
            vals = draw(st.lists(st.integers(-300, 300), min_size=4, max_size=4))
            lit = "{ { %d, %d }, { %d, %d } }" % tuple(vals)
            lines.append((name, f"{t}[2,2]{{1,0}}", f"constant({lit})", []))
        else:
            t = draw(st.sampled_from(["bf16", "f32"]))
            lines.append((f"c{k}.{200 + k}", f"{t}[2]{{0}}", "constant({1, 2})", []))
            sh = f"({t}[2,2]{{1,0}}, {t}[2]{{0}}, {t}[2]{{0}})"
            c = (f"c{k}.{200 + k}", t)
            lines.append((name, sh, "batch-norm-training", [(a[0], t), c, c],
                          ", epsilon=0.001, feature_index=1"))
            if a[1] != t:
                lines.pop()
                lines.pop()
                continue
            name2 = f"gte.{300 + k}"
            lines.append((name2, f"{t}[2,2]{{1,0}}", "get-tuple-element", [(name, sh)], ", index=0"))
            live.append((name2, t))
            continue
        live.append((name, lines[-1][1].split("[")[0]))
    shapes = {n: s for n, s, *_ in lines}
    body = []
    for i, (n, s, op, ops, *extra) in enumerate(lines):
        root = "ROOT " if i == len(lines) - 1 else ""
        if ops:
            args = ", ".join((f"{shapes[o]} " if old else "") + pct + o for o, _ in ops)
            op = f"{op}({args})"
        body.append(f"  {root}{pct}{n} = {s} {op}{extra[0] if extra else ''}")
    return f"HloModule rnd\n\nENTRY {pct}main.0 {{\n" + "\n".join(body) + "\n}\n\n"


@settings(max_examples=150, deadline=None)
@given(modules(), st.lists(st.sampled_from(PASSES), max_size=3))
def test_random_modules_round_trip_and_passes_keep_text_well_formed(text, passes) -> None:
    m = hlo.parse(text)
    assert hlo.to_text(m) == text
    changed = hlo.run_passes(m, passes)
    out = hlo.to_text(m)
    assert (out != text) == changed
    again = hlo.parse(out)
    assert hlo.to_text(again) == out
    hlo.verify(again)
    if "upcast-all-to-fp32" in passes:
        for inst in again.all_instructions():
            for leaf in inst.shape.leaves():
                assert not (hlo.is_float(leaf.element_type)
                            and leaf.element_type != hlo.PrimitiveType.F32)
    if passes and passes[-1] == "neuron-int-matmul-downcast":
        for inst in again.all_instructions():
            assert not (inst.opcode == "dot" and hlo.is_integer(inst.shape.element_type))


DOT = """HloModule d

ENTRY main.3 {{
  a.1 = {t}[{m},{k}]{{1,0}} parameter(0)
  b.2 = {t}[{k},{n}]{{1,0}} parameter(1)
  ROOT dot.3 = s32[{m},{n}]{{1,0}} dot(a.1, b.2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}

"""


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 16), st.integers(1, 4), st.integers(0, 2**32 - 1),
       st.sampled_from([("s8", 127), ("s32", 1 << 13), ("s32", 1 << 20)]))
def test_nimd_numerics_exact_below_2_24_and_int_dot_beyond(m, k, n, seed, spec) -> None:
    from pyprecision.emulate import run_hlo

    t, bound = spec
    rng = np.random.default_rng(seed)
    dtype = np.int8 if t == "s8" else np.int32
    a = rng.integers(-bound, bound, size=(m, k)).astype(dtype)
    b = rng.integers(-bound, bound, size=(k, n)).astype(dtype)
    mod = hlo.parse(DOT.format(t=t, m=m, k=k, n=n))
    assert hlo.run_passes(mod, ["neuron-int-matmul-downcast"])
    got = run_hlo(mod, [a, b])[0]
    exact = a.astype(np.int64) @ b.astype(np.int64)
    partial_max = np.abs(a.astype(np.int64))[:, :, None] * np.abs(b.astype(np.int64))[None, :, :]
    if partial_max.sum(axis=1).max() <= 2**24:
        assert np.array_equal(got, exact.astype(np.int32))
    assert np.array_equal(got, pyprecision.int_dot(a, b, out_dtype=np.int32))
