"""Fuzzing the HLO parser + verifier + passes + evaluator (issue 13): mutated real modules must
give a module or one ParseError; a parsed module must go through the three passes (each followed
by the verifier) or give one project error; evaluated on zeros it must give values or one project
error — never another exception, never a hang (every input is timed; the evaluator runs with a
small Limits budget). Deterministic (derandomize=True), bounded (max_examples below).
"""
from __future__ import annotations

import time

import numpy as np
from hlo_testdata import HERE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyprecision import hlo
from pyprecision.emulate import Limits, run_hlo
from pyprecision.errors import ParseError, PyPrecisionError
from pyprecision.hlo import opcodes

SEEDS = sorted((HERE / "samples").glob("*.hlo.txt"))[:6] + sorted(
    (HERE.parent / "data" / "hlo-eval" / "jax-0.10.2").glob("*.hlo.txt"))[:30]
TEXTS = [p.read_text() for p in SEEDS]
OPCODES = sorted(opcodes.OPCODES)
LIMITS = Limits(max_while_iterations=200, time_budget=2.0, memory_budget=1 << 26)
#: No single input may take longer than this (parse + verify + evaluate), in seconds.
TIME_LIMIT = 10.0
FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

TOKENS = ["(", ")", "{", "}", ",", "=", " ", "\n", "ROOT ", "f32[]", "s32[2,3]{1,0}",
          "(f32[], (s32[]))", "9" * 5000, "-1", "{1 0}", "{1,\t0}", "%", "ENTRY ", "->",
          "/*index=5*/", '"', "\\", "to_apply=", "condition=", "body=", "dimensions={0}",
          "window={size=2}", "dim_labels=b0f_0io->b0f", "slice={[0:1]}", "index=7", "e"]

VALUES = ["{}", "{0}", "{-1}", "{1,0}", "{0,0}", "{99999999}", "{x}", "x", "", "{[0:1]}",
          "{[1:0]}", "{[0:1:0]}", "{size=0}", "{size=2x2}", "{size=1 stride=0}", "{pad=1_1}",
          "b0f_0io->b0f", "bf_io->bf", "0_0", "1_1_-1", "-5_-5", "true", "7", "%nothing",
          '"s"', "{size=1 rhs_reversal=2}", "LT", "XX", "TOTALORDER", "{1,2,3}"]


@st.composite
def mutated(draw) -> str:
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        kind = draw(st.integers(0, 6))
        i = draw(st.integers(0, max(n - 1, 0)))
        j = min(n, i + draw(st.integers(0, 40)))
        if kind == 0:
            text = text[:i] + text[j:]                              # delete
        elif kind == 1:
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]  # insert a token
        elif kind == 2:
            text = text[:i] + text[i:j] + text[i:]                 # duplicate
        elif kind == 3 and OPCODES:                                # swap an opcode
            op = draw(st.sampled_from(OPCODES))
            k = text.find(" ", i)
            e = text.find("(", k)
            if 0 <= k < e:
                text = text[:k + 1] + op + text[e:]
        elif kind == 4:                                            # change a number
            k = next((p for p in range(i, n) if text[p].isdigit()), -1)
            if k >= 0:
                text = text[:k] + str(draw(st.sampled_from([0, 1, 7, 2**31, 2**63, 10**30]))) \
                    + text[k + 1:]
        elif kind == 6:                                            # replace an attribute value
            k = text.find("=", i)
            e = min((x for x in (text.find(",", k + 1), text.find("\n", k + 1)) if x > 0),
                    default=-1)
            if 0 <= k < e and text[k - 1] != " ":
                text = text[:k + 1] + draw(st.sampled_from(VALUES)) + text[e:]
        else:                                                      # rename an operand
            names = [w for w in text.replace("(", " ").replace(")", " ").replace(",", " ").split()
                     if "." in w and w[0].isalpha()]
            if len(names) > 1:
                a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
                text = text.replace(f"({a}", f"({b}", 1)
    return text


def zeros_for(module: hlo.HloModule) -> list[np.ndarray] | None:
    args = []
    for p in module.entry.parameters:
        s = p.shape
        if s.is_tuple or any(d < 0 for d in s.dimensions) or int(np.prod(s.dimensions)) > 1 << 16:
            return None
        try:
            args.append(np.zeros(s.dimensions, hlo.numpy_dtype(s.element_type)))
        except ValueError:
            return None
    return args


def check_one(text: str) -> None:
    t0 = time.monotonic()
    try:
        module = hlo.parse(text, "fuzz.hlo")
    except ParseError as e:
        assert e.filename == "fuzz.hlo" and e.line >= 0
        module = None
    if module is not None:
        hlo.to_text(module)
        args = zeros_for(module)
        try:
            hlo.run_passes(hlo.parse(text, "fuzz.hlo"), list(hlo.REGISTRY))
        except PyPrecisionError:
            pass
        if args is not None:
            try:
                run_hlo(module, args, limits=LIMITS)
            except PyPrecisionError:
                pass
    assert time.monotonic() - t0 < TIME_LIMIT


@FUZZ
@given(mutated())
def test_fuzz_mutated_modules_raise_only_project_errors(text: str) -> None:
    check_one(text)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(alphabet=st.sampled_from(list("HloModule ENTRY{}()[]=,%.:f32s1u8pred-_\n\t0123")),
               max_size=200))
def test_fuzz_random_text_raises_only_parse_errors(text: str) -> None:
    check_one(text)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.sampled_from(TOKENS), st.integers(0, 200))
def test_fuzz_a_token_repeated_in_a_shape(token: str, n: int) -> None:
    check_one(f"HloModule m\n\nENTRY e {{\n  ROOT p = {token * n}f32[] parameter(0)\n}}\n")
