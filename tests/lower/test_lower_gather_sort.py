"""sort → ``sort_perm`` + one ``gather`` per operand (decision L17): on random sorts with JAX's
comparator forms (LT / GT, XLA's total order or the plain float order, JAX's NaN / -0
canonicalisation, several keys compared lexicographically) over keys full of ties, NaNs and signed
zeros, the lowered module equals the HLO evaluator bit for bit; the passes never narrow the keys;
other comparators are one located error."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lower_cases import bits_equal

from pyprecision import emulate, frontend, hlo, ir
from pyprecision.errors import LoweringError, VerifyError

NONE = frontend.parse_flags(["--auto-cast", "none"])
SPECIALS = np.array([-1.0, 0.0, -0.0, 1.0, 2.0, np.nan, -np.nan, np.inf, 0.5], np.float32)


def _canon(p: str, t: str) -> tuple[str, str]:
    lines = (f"  ne.{p} = pred[] compare({p}, {p}), direction=NE\n"
             f"  eq.{p} = pred[] compare({p}, zero), direction=EQ\n"
             f"  s.{p} = {t}[] select(eq.{p}, zero, {p})\n"
             f"  c.{p} = {t}[] select(ne.{p}, nan, s.{p})\n")  # fmt: skip
    return lines, f"c.{p}"


def sort_text(types: list[str], shape: tuple[int, ...], dim: int, keys: list[tuple]) -> str:
    """An HLO module sorting its parameters along ``dim``; ``keys`` are (operand, direction,
    total, canonical) with the first the most significant."""
    n = len(types)
    body = "".join(f"  p{2 * i} = {t}[] parameter({2 * i})\n  p{2 * i + 1} = {t}[] parameter({2 * i + 1})\n"
                   for i, t in enumerate(types))
    body += "  nan = f32[] constant(nan)\n  zero = f32[] constant(0)\n"

    def cmp(k: int, direction: str, total: bool, canon: bool) -> tuple[str, str]:
        a, b = f"p{2 * k}", f"p{2 * k + 1}"
        extra = ""
        if canon:
            la, a = _canon(a, types[k])
            lb, b = _canon(b, types[k])
            extra = la + lb
        ty = ", type=TOTALORDER" if total else ""
        return extra + f"  lt.{k} = pred[] compare({a}, {b}), direction={direction}{ty}\n", f"lt.{k}"

    k, direction, total, canon = keys[-1]
    lines, root = cmp(k, direction, total, canon)
    for k, direction, total, _ in reversed(keys[:-1]):
        ty = ", type=TOTALORDER" if total else ""
        more, lt = cmp(k, direction, total, False)
        lines += more + (f"  eq.k{k} = pred[] compare(p{2 * k}, p{2 * k + 1}), direction=EQ{ty}\n"
                         f"  and.k{k} = pred[] and(eq.k{k}, {root})\n"
                         f"  or.k{k} = pred[] or({lt}, and.k{k})\n")  # fmt: skip
        root = f"or.k{k}"
    lines = lines.replace(f"  {root} = ", f"  ROOT {root} = ")
    dims = ",".join(map(str, shape))
    arr = [f"{t}[{dims}]" for t in types]
    res = arr[0] if n == 1 else "(" + ", ".join(arr) + ")"
    params = "".join(f"  x{i} = {a} parameter({i})\n" for i, a in enumerate(arr))
    xs = ", ".join(f"x{i}" for i in range(n))
    return (f"HloModule s\n\ncmp {{\n{body}{lines}}}\n\nENTRY main {{\n{params}"
            f"  ROOT s = {res} sort({xs}), dimensions={{{dim}}}, is_stable=true, to_apply=cmp\n}}\n")


@st.composite
def sorts(draw: st.DrawFn) -> tuple[str, list[np.ndarray]]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    dim = draw(st.integers(0, len(shape) - 1))
    types = draw(st.lists(st.sampled_from(["f32", "s32"]), min_size=1, max_size=3))
    n_keys = draw(st.integers(1, len(types)))
    order = draw(st.permutations(range(len(types))))[:n_keys]
    keys = []
    for i, k in enumerate(order):
        last = i == n_keys - 1
        canon = last and types[k] == "f32" and draw(st.booleans())
        keys.append((k, draw(st.sampled_from(["LT", "GT"])), draw(st.booleans()), canon))
    r = np.random.RandomState(draw(st.integers(0, 2**16)))
    args = [SPECIALS[r.randint(0, len(SPECIALS), size=shape)] if t == "f32"
            else r.randint(-2, 3, size=shape).astype(np.int32) for t in types]  # fmt: skip
    return sort_text(types, shape, dim, keys), args


@settings(max_examples=120, deadline=None, derandomize=True, database=None)
@given(sorts())
def test_lowered_sort_equals_the_hlo_evaluator(case):
    text, args = case
    m = hlo.parse(text, "s.hlo.txt")
    got, want = emulate.run_hlo(m, args, NONE), emulate.run_hlo(m, args)
    assert all(bits_equal(g, w) for g, w in zip(got, want, strict=True))


def test_the_keys_are_compared_in_the_dtype_they_arrive_in():
    """sort_perm's result is an integer (skip rule 2): no pass casts its keys. In mode all the f32
    input is narrowed at the boundary (spec 000 §2), so the argsort compares bf16 keys, where
    1 + 2^-12 and 1 are tied and keep their order (stable); in mode matmult (and none) the key
    stays f32 and they are ordered."""
    text = sort_text(["f32", "s32"], (3,), 0, [(0, "LT", True, False)])
    x, iota = np.array([1.0 + 2**-12, 1.0, 0.5], np.float32), np.arange(3, dtype=np.int32)
    for mode, want, key_dtype in (("none", [2, 1, 0], ir.float32), ("matmult", [2, 1, 0], ir.float32),
                                  ("all", [2, 0, 1], ir.bfloat16)):
        cfg = frontend.parse_flags(["--auto-cast", mode])
        fn = emulate.compile_hlo(hlo.parse(text), cfg).lowered.function
        (perm,) = [i for i in fn.instructions() if isinstance(i, ir.SortPermOp)]
        assert perm.keys[0].dtype is key_dtype and perm.dtype is ir.int32
        casts = [i for i in fn.instructions() if isinstance(i, ir.UnaryOp) and i.is_cast]
        assert not any(perm.keys[0] is c or perm.keys[0] is c.result for c in casts)
        _, order = emulate.run_hlo(hlo.parse(text), [x, iota], cfg)
        assert list(order) == want, mode


def test_argsort_of_the_real_module_lowers_and_matches():
    from pathlib import Path
    d = Path(__file__).resolve().parents[1] / "data" / "hlo-eval" / "jax-0.10.2"
    text = (d / "argsort.hlo.txt").read_text()
    z = np.load(d / "argsort.npz")
    m = hlo.parse(text, "argsort.hlo.txt")
    got = emulate.run_hlo(m, [z["in0"], z["in1"]], NONE)
    assert all(bits_equal(g, z[f"out{i}"]) for i, g in enumerate(got))


def test_an_unsupported_comparator_is_one_located_error():
    text = sort_text(["f32"], (4,), 0, [(0, "LT", False, False)]).replace(
        "compare(p0, p1), direction=LT", "compare(p1, p0), direction=LT")
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(hlo.parse(text, "s.hlo.txt"), NONE, filename="s.hlo.txt", text=text)
    assert re.match(r"s\.hlo\.txt:\d+:\d+: s \(sort\): its comparator is not one JAX writes",
                    str(e.value))


SORT = """func @main {{
  tensor @x : input float32[2,3]
  tensor @y : output {out}
^bb0:
  %x = affine_load @x : float32[2,3]
  %r = {line}
  affine_store %r, @y
}}
"""


def test_sort_perm_text_round_trips_and_sorts():
    line = "sort_perm %x dim=1 descending=[1] total=[1] canonical=[0] : int32[2,3]"
    text = SORT.format(out="int32[2,3]", line=line)
    m = ir.parse(text)
    assert ir.to_text(m) == text
    x = np.array([[0.5, 2.0, -1.0], [3.0, 3.0, 1.0]], np.float32)
    got = emulate.run_ir(m, {"x": x})["y"]
    assert np.array_equal(got, [[1, 0, 2], [0, 1, 2]])  # descending, stable


@pytest.mark.parametrize("line,message", [
    ("sort_perm %x dim=1 descending=[1] total=[1] canonical=[0] : float32[2,3]", "integer"),
    ("sort_perm %x dim=2 descending=[1] total=[1] canonical=[0] : int32[2,3]", "dim"),
    ("sort_perm %x dim=0 descending=[1,0] total=[1] canonical=[0] : int32[2,3]", "one entry"),
    ("sort_perm %x dim=0 descending=[1] total=[1] canonical=[0] : int32[3,2]", "shaped like"),
])  # fmt: skip
def test_sort_perm_rules_are_checked_with_a_location(line, message):
    out = line.rsplit(":", 1)[1].strip()
    with pytest.raises(VerifyError, match=message) as e:
        ir.parse(SORT.format(out=out, line=line), "p.pir")
    assert "p.pir:6:3:" in str(e.value)
