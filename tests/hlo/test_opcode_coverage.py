"""opcode × {shape rule, evaluator, lowering or refusal}: every record of hlo.opcodes is kept by
each side, and no side keeps an opcode its record does not promise (decision OP1)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pyprecision import emulate, frontend, hlo
from pyprecision.emulate.hlo.eval import Evaluator
from pyprecision.errors import LoweringError
from pyprecision.hlo import opcodes
from pyprecision.hlo.opcodes import UNCHECKED
from pyprecision.lower.lowering import supported_opcodes

RECORDS = opcodes.BY_NAME
DATA = Path(__file__).resolve().parents[1] / "data"
NONE = frontend.parse_flags(["--auto-cast", "none"])
#: bound by the callers of a computation, not dispatched
STRUCTURAL = {"parameter"}


class _NoModule:
    entry = None


def test_every_record_has_a_shape_rule_or_is_a_known_unchecked_opcode():
    missing = sorted(n for n, r in RECORDS.items() if r.shape is None and n not in UNCHECKED)
    assert not missing, f"no shape rule and not listed as unchecked: {missing}"
    assert set(UNCHECKED) <= set(RECORDS)
    assert all(RECORDS[n].shape is None for n in UNCHECKED)


def test_the_verifier_knows_exactly_the_records():
    assert set(opcodes.OPCODES) == set(RECORDS)


def test_the_evaluator_handles_exactly_the_opcodes_its_records_promise():
    handlers = set(Evaluator(_NoModule()).handlers)
    promised = {n for n, r in RECORDS.items() if r.evaluation is None} - STRUCTURAL
    assert handlers - set(RECORDS) == set(), "handlers for opcodes without a record"
    assert sorted(promised - handlers) == [], "records promise an evaluator handler that is missing"
    assert sorted(handlers - promised) == [], "handlers whose record says they are not evaluated"


def test_the_lowering_handles_or_refuses_every_opcode():
    lowered = set(supported_opcodes())
    promised = {n for n, r in RECORDS.items() if r.lowering is None}
    assert lowered - set(RECORDS) == set()
    assert sorted(promised - lowered) == [], "records promise a lowering handler that is missing"
    assert sorted(lowered - promised) == [], "lowered opcodes whose record refuses them"
    for n, r in RECORDS.items():
        assert r.lowering is None or len(r.lowering) > 20 and r.lowering.startswith("is "), n


def test_traits_are_consistent():
    for n, r in RECORDS.items():
        assert r.reducer is None or r.commutative, f"{n}: a reducer kind must be commutative"
        assert not r.pe or r.saturate_before, f"{n}: a PE op sums (inf - inf): saturate first"
    assert opcodes.names_with(pe=True) == {"dot", "convolution"}
    assert {r.reducer for r in RECORDS.values()} - {None} == {"add", "mul", "max", "min", "and",
                                                               "or"}


_REFUSED_TEXT = {
    "tan": ("f32[4]", "tan(p0)"),
    "real": ("f32[4]", "real(c)", "c = c64[4] complex(p0, p0)"),
    "complex": ("c64[4]", "complex(p0, p0)"),
}


@pytest.mark.parametrize("opcode", sorted(_REFUSED_TEXT))
def test_a_refused_opcode_is_one_located_error_ending_with_its_record_s_reason(opcode):
    shape, call, *pre = _REFUSED_TEXT[opcode]
    body = "".join(f"  {p}\n" for p in pre)
    text = (f"HloModule m\n\nENTRY e {{\n  p0 = f32[4] parameter(0)\n{body}"
            f"  ROOT r = {shape} {call}\n}}\n")
    m = hlo.parse(text, "t.hlo")
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(m, frontend.parse_flags(["--auto-cast", "none"]), filename="t.hlo",
                            text=text)
    msg = str(e.value)
    assert re.match(r"t\.hlo:\d+:\d+: ", msg), msg
    assert msg.endswith(RECORDS[opcode if opcode != "real" else "complex"].lowering), msg


def test_is_finite_lowers_and_equals_the_evaluator():
    text = ("HloModule m\n\nENTRY e {\n  p0 = f32[6] parameter(0)\n"
            "  ROOT r = pred[6] is-finite(p0)\n}\n")
    m = hlo.parse(text, "t.hlo")
    x = np.array([1.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    want = [True, True, False, False, False, False]
    assert emulate.run_hlo(m, [x])[0].tolist() == want
    got = emulate.run_hlo(m, [x], frontend.parse_flags(["--auto-cast", "none"]))[0]
    assert np.asarray(got).astype(bool).tolist() == want


def test_an_opcode_the_evaluator_refuses_is_one_error_with_its_record_s_reason():
    from pyprecision.errors import EmulationError

    text = ("HloModule m\n\nENTRY e {\n  p0 = f32[4] parameter(0)\n"
            "  ROOT r = f32[4] all-reduce(p0)\n}\n")
    with pytest.raises(EmulationError) as e:
        emulate.run_hlo(hlo.parse(text, "t.hlo"), [np.zeros(4, np.float32)])
    assert str(e.value).endswith("all-reduce " + RECORDS["all-reduce"].evaluation), str(e.value)


# -- the refusal records (decision OP15) ----------------------------------------------------------
def _m(body: str, comps: str = "") -> str:
    lines = "".join(f"  {ln.strip()}\n" for ln in body.strip().splitlines())
    return f"HloModule m\n\n{comps}ENTRY e {{\n{lines}}}\n"


def _comp(name: str, body: str) -> str:
    lines = "".join(f"  {ln.strip()}\n" for ln in body.strip().splitlines())
    return f"{name} {{\n{lines}}}\n\n"


_ADD = _comp("add", "a = f32[] parameter(0)\nb = f32[] parameter(1)\nROOT r = f32[] add(a, b)")
_SUB = _comp("sub", "a = f32[] parameter(0)\nb = f32[] parameter(1)\nROOT r = f32[] subtract(a, b)")
_GE = _comp("ge", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
            "ROOT r = pred[] compare(a, b), direction=GE")
_EQ = _comp("eq", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
            "ROOT r = pred[] compare(a, b), direction=EQ")
_LT = _comp("lt", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
            "ROOT r = pred[] compare(a, b), direction=LT")
_ADD2 = _comp("add2", "a = f32[] parameter(0)\nb = f32[] parameter(1)\nc = f32[] parameter(2)\n"
              "d = f32[] parameter(3)\ne = f32[] add(a, c)\nf = f32[] add(b, d)\n"
              "ROOT r = (f32[], f32[]) tuple(e, f)")


def _sas(x: str, s: str, window: str, sel: str = "ge", sc: str = "add") -> str:
    return _m(f"x = f32[{x}] parameter(0)\ns = f32[{s}] parameter(1)\ni = f32[] constant(0)\n"
              f"ROOT r = f32[{x}] select-and-scatter(x, s, i), window={{{window}}}, select={sel}, "
              f"scatter={sc}", _GE + _EQ + _ADD + _SUB)


#: conditional / module-level refusal key -> (a module that it refuses, or a real one's path under
#: tests/data; whether the verifier accepts it; whether the default HLO passes run first)
WITNESSES: dict[str, tuple[str, bool, bool]] = {
    "bitcast-convert:widths": (_m("p = f32[4] parameter(0)\n"
                                  "ROOT b = f16[4,2] bitcast-convert(p)"), True, True),
    "dynamic-slice:index": ("hlo/jax-0.10.2/scan_ops.hlo.txt", True, True),
    "dynamic-update-slice:index": (_m("x = f32[4] parameter(0)\nu = f32[2] parameter(1)\n"
                                      "i = s32[] parameter(2)\n"
                                      "ROOT d = f32[4] dynamic-update-slice(x, u, i)"), True, True),
    "constant:tuple": (_m("ROOT c = (f32[], s32[]) constant((1, 2))"), True, True),
    "dot:integer": (_m("a = s32[2,3] parameter(0)\nb = s32[3,2] parameter(1)\n"
                       "ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={1}, "
                       "rhs_contracting_dims={0}"), True, False),
    "convolution:window-reversal": (_m("x = f32[1,4,1] parameter(0)\nk = f32[2,1,1] parameter(1)\n"
                                       "ROOT c = f32[1,3,1] convolution(x, k), "
                                       "window={size=2 rhs_reversal=1}, dim_labels=b0f_0io->b0f"),
                                    True, True),
    "convolution:window-size": (_m("x = f32[1,4097,1] parameter(0)\nk = f32[4097,1,1] parameter(1)\n"
                                   "ROOT c = f32[1,1,1] convolution(x, k), window={size=4097}, "
                                   "dim_labels=b0f_0io->b0f"), True, True),
    "reduce:operands": (_m("x = f32[4] parameter(0)\ni = f32[] constant(0)\n"
                           "ROOT r = (f32[], f32[], f32[]) reduce(x, x, x, i, i, i), dimensions={0}, "
                           "to_apply=mix3",
                           _comp("mix3", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
                                 "c = f32[] parameter(2)\nd = f32[] parameter(3)\n"
                                 "e = f32[] parameter(4)\nf = f32[] parameter(5)\n"
                                 "g = f32[] add(a, d)\nh = f32[] add(b, e)\nk = f32[] add(a, f)\n"
                                 "ROOT r = (f32[], f32[], f32[]) tuple(g, h, k)")), True, True),
    "reduce:reducer": (_m("x = f32[4] parameter(0)\ni = f32[] constant(0)\n"
                          "ROOT r = f32[] reduce(x, i), dimensions={0}, to_apply=rs",
                          _comp("rs", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
                                "c = f32[] add(a, b)\nROOT r = f32[] reshape(c)")), True, True),
    "reduce:argreduce": (_m("x = f32[4] parameter(0)\ni = f32[] constant(0)\n"
                            "ROOT r = (f32[], f32[]) reduce(x, x, i, i), dimensions={0}, "
                            "to_apply=mix2",
                            _comp("mix2", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
                                  "c = f32[] parameter(2)\nd = f32[] parameter(3)\n"
                                  "e = f32[] add(a, c)\nf = f32[] add(a, d)\n"
                                  "ROOT r = (f32[], f32[]) tuple(e, f)")), True, True),
    "reduce:fold-limit": (_m("x = f32[300] parameter(0)\ni = f32[] constant(0)\n"
                             "ROOT r = f32[] reduce(x, i), dimensions={0}, to_apply=w",
                             _comp("w", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
                                   "c = f32[] multiply(b, b)\nROOT r = f32[] add(a, c)")),
                          True, True),
    "reduce-window:window-size": (_m("x = f32[4097] parameter(0)\ni = f32[] constant(0)\n"
                                     "ROOT r = f32[1] reduce-window(x, i), window={size=4097}, "
                                     "to_apply=add", _ADD), True, True),
    "reduce-window:variadic": (_m("x = f32[4] parameter(0)\ni = f32[] constant(0)\n"
                                  "ROOT r = (f32[3], f32[3]) reduce-window(x, x, i, i), "
                                  "window={size=2}, to_apply=add2", _ADD2), True, True),
    "reduce-window:reducer": (_m("x = f32[4] parameter(0)\ni = f32[] constant(0)\n"
                                 "ROOT r = f32[3] reduce-window(x, i), window={size=2}, "
                                 "to_apply=sub", _SUB), True, True),
    "select-and-scatter:window-reversal": (_sas("4", "3", "size=2 rhs_reversal=1"), True, True),
    "select-and-scatter:window-size": (_sas("4097", "1", "size=4097"), True, True),
    "select-and-scatter:scalar": (_sas("", "", ""), False, True),
    "select-and-scatter:dilated": (_sas("4", "2", "size=2 rhs_dilate=2"), True, True),
    "select-and-scatter:select": (_sas("4", "3", "size=2", sel="eq"), True, True),
    "select-and-scatter:scatter": (_sas("4", "3", "size=2", sc="sub"), True, True),
    "gather:scalar": (_m("x = f32[] parameter(0)\ni = s32[0] parameter(1)\n"
                         "ROOT g = f32[] gather(x, i), offset_dims={}, collapsed_slice_dims={}, "
                         "start_index_map={}, index_vector_dim=0, slice_sizes={}"), False, True),
    "scatter:variadic": (_m("x = f32[4] parameter(0)\ny = f32[4] parameter(1)\n"
                            "i = s32[2,1] parameter(2)\nu = f32[2] parameter(3)\n"
                            "v = f32[2] parameter(4)\n"
                            "ROOT s = (f32[4], f32[4]) scatter(x, y, i, u, v), update_window_dims={}, "
                            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                            "index_vector_dim=1, to_apply=add2", _ADD2), True, True),
    "scatter:scalar": (_m("x = f32[] parameter(0)\ni = s32[0] parameter(1)\nu = f32[] parameter(2)\n"
                          "ROOT s = f32[] scatter(x, i, u), update_window_dims={}, "
                          "inserted_window_dims={}, scatter_dims_to_operand_dims={}, "
                          "index_vector_dim=0, to_apply=add", _ADD), False, True),
    "scatter:combiner": (_m("x = f32[4,3] parameter(0)\ni = s32[2,1] parameter(1)\n"
                            "u = f32[2,3] parameter(2)\n"
                            "ROOT s = f32[4,3] scatter(x, i, u), update_window_dims={1}, "
                            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                            "index_vector_dim=1, to_apply=sub", _SUB), True, True),
    "sort:scalar": (_m("x = f32[] parameter(0)\nROOT s = f32[] sort(x), dimensions={0}, "
                       "to_apply=lt", _LT), False, True),
    "sort:comparator": (_m("x = f32[4] parameter(0)\nROOT s = f32[4] sort(x), dimensions={0}, "
                           "to_apply=ba",
                           _comp("ba", "a = f32[] parameter(0)\nb = f32[] parameter(1)\n"
                                 "ROOT r = pred[] compare(b, a), direction=LT")), True, True),
    "while:trip-count": ("hlo/jax-0.10.2/while_loop.hlo.txt", True, True),
    "while:unroll-limit": (_m("z = s32[] constant(0)\nx = f32[] parameter(0)\n"
                              "t = (s32[], f32[]) tuple(z, x)\n"
                              "ROOT w = (s32[], f32[]) while(t), condition=cond, body=body",
                              _comp("cond", "p = (s32[], f32[]) parameter(0)\n"
                                    "i = s32[] get-tuple-element(p), index=0\n"
                                    "n = s32[] constant(5000)\n"
                                    "ROOT c = pred[] compare(i, n), direction=LT")
                              + _comp("body", "p = (s32[], f32[]) parameter(0)\n"
                                      "i = s32[] get-tuple-element(p), index=0\n"
                                      "x = f32[] get-tuple-element(p), index=1\n"
                                      "one = s32[] constant(1)\nj = s32[] add(i, one)\n"
                                      "ROOT t = (s32[], f32[]) tuple(j, x)")), True, True),
    "element-type": ("hlo/jax-0.10.2/f64_mix.hlo.txt", True, True),
    "elided-constant": ("hlo/jax-0.4.30/const_large.hlo.txt", True, True),
}


def test_every_conditional_and_module_level_refusal_has_a_witness():
    """No dead records: each is raised by a module below (decision OP15)."""
    records = {c.key for r in RECORDS.values() for c in r.refusals} | set(opcodes.MODULE_REFUSALS)
    assert sorted(records - set(WITNESSES)) == [], "refusal records no module raises"
    assert sorted(set(WITNESSES) - records) == [], "witnesses of refusals without a record"
    for n, r in RECORDS.items():
        assert all(c.key.startswith(f"{n}:") for c in r.refusals), n
        assert r.lowering is None or not r.refusals, f"{n}: refused as a whole, and in cases"
    assert set(opcodes.REFUSALS) == records | {n for n, r in RECORDS.items() if r.lowering}


@pytest.mark.parametrize("key", sorted(WITNESSES))
def test_a_refusal_is_one_located_error_ending_with_its_record_s_reason(key):
    src, verified, passes = WITNESSES[key]
    path = "w.hlo" if src.startswith("HloModule") else str(DATA / src)
    text = src if src.startswith("HloModule") else Path(path).read_text()
    m = hlo.parse(text, path, verify=verified)
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(m, NONE, filename=path, text=text,
                            **({} if passes and verified else {"hlo_passes": ()}))
    msg = str(e.value)
    assert e.value.refusal == key, msg
    assert msg.endswith(" " + opcodes.refusal(key).reason), msg
    assert re.match(rf"{re.escape(path)}:\d+:\d+: \S+ \(\S+\): \S", msg), msg


def test_the_reasons_name_the_lowering_s_own_limits():
    from pyprecision.lower import MAX_UNROLL
    from pyprecision.lower.context import IR_DTYPE_NAMES
    from pyprecision.lower.reduce_generic import MAX_FOLD
    from pyprecision.lower.windows import MAX_WINDOW

    listed = re.search(r"\(supported: ([^)]*)\)", opcodes.refusal("element-type").reason)
    assert listed and listed.group(1).split(", ") == sorted(IR_DTYPE_NAMES)
    assert f"limit {MAX_UNROLL} " in opcodes.refusal("while:unroll-limit").reason
    assert f"exceeds {MAX_FOLD} " in opcodes.refusal("reduce:fold-limit").reason
    for op in ("convolution", "reduce-window", "select-and-scatter"):
        assert f"({MAX_WINDOW} positions" in opcodes.refusal(f"{op}:window-size").reason


def test_every_refusal_the_lowering_raises_names_a_record():
    """The keys written at the raise sites of lower/ (``ctx.refuse(inst, "key", ...)``) are
    records; an f-string key (``f"{inst.opcode}:index"``) is checked by its witnesses."""
    import ast

    import pyprecision.lower

    keys = set()
    for f in Path(pyprecision.lower.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "refuse" and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)):
                keys.add(node.args[1].value)
    assert len(keys) > 20
    assert sorted(keys - set(opcodes.REFUSALS)) == []


def test_a_refusal_keeps_its_key_through_pickling():
    """Worker processes (many-dump verify) send errors back pickled."""
    import pickle

    e = pickle.loads(pickle.dumps(LoweringError("w.hlo:3:3: w (while): ...", "while:trip-count")))
    assert (str(e), e.refusal) == ("w.hlo:3:3: w (while): ...", "while:trip-count")
    assert pickle.loads(pickle.dumps(LoweringError("w.hlo: malformed"))).refusal is None
