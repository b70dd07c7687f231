"""opcode × {shape rule, evaluator, lowering or refusal}: every record of hlo.opcodes is kept by
each side, and no side keeps an opcode its record does not promise (decision OP1)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from pyprecision import emulate, frontend, hlo
from pyprecision.emulate.hlo.eval import Evaluator
from pyprecision.errors import LoweringError
from pyprecision.hlo import opcodes
from pyprecision.hlo.opcodes import UNCHECKED
from pyprecision.lower.lowering import supported_opcodes

RECORDS = opcodes.BY_NAME
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
