"""XLA's own text prints back byte for byte; other text round-trips semantically."""
from __future__ import annotations

import pytest
from hlo_testdata import ALL_TEXTS, REAL_DATA, SAMPLES

from pyprecision import hlo


def test_there_is_real_xla_data_and_samples() -> None:
    assert len(SAMPLES) >= 8
    assert len(REAL_DATA) >= 20, "tests/data/hlo should hold real XLA dumps"


@pytest.mark.parametrize("path", ALL_TEXTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_canonical_text_prints_back_identical_bytes(path) -> None:
    text = path.read_text()
    module = hlo.parse(text, str(path))
    assert hlo.to_text(module) == text


@pytest.mark.parametrize("path", ALL_TEXTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_operand_and_call_is_resolved(path) -> None:
    module = hlo.parse(path.read_text(), str(path))
    hlo.verify(module)
    for comp in module.computations:
        for inst in comp.instructions:
            for op in inst.operands:
                assert op in comp.instructions
            for key in ("to_apply", "condition", "body", "calls"):
                if inst.attr(key) is not None:
                    assert inst.called(key) is not None


def test_both_printing_styles_are_present_in_the_real_data() -> None:
    styles = set()
    for path in REAL_DATA:
        m = hlo.parse(path.read_text(), str(path))
        styles.add((m.style.percent, m.style.operand_shapes))
    assert (False, False) in styles      # new: bare names
    assert (True, True) in styles        # ~0.4.x dumps: %names and inline operand shapes


NONCANONICAL = """HloModule   m ,entry_computation_layout={(f32[2]{0})->f32[2]{0}}
// a comment
ENTRY   %e  {
    %p =   f32[2]{0} parameter( 0 )
    ROOT %n = f32[2]{0}   negate(  %p  ) ,  metadata={op_name="x"}
}
"""


def test_noncanonical_text_round_trips_semantically() -> None:
    m = hlo.parse(NONCANONICAL)
    once = hlo.to_text(m)
    again = hlo.to_text(hlo.parse(once))
    assert once == again
    root = hlo.parse(once).entry.root
    assert (root.opcode, root.operands[0].name, root.metadata) == ("negate", "p", {"op_name": "x"})


def test_model_reads_real_module() -> None:
    path = next(p for p in REAL_DATA if p.name == "bnt_bf16.hlo.txt")
    m = hlo.parse(path.read_text())
    bnt = next(i for i in m.entry.instructions if i.opcode == "batch-norm-training")
    assert bnt.attr("epsilon") == "0.001" and bnt.attr_ints("feature_index") == [1]
    assert [p.parameter_number for p in m.entry.parameters] == [0, 1, 2]
    assert bnt.shape.is_tuple and len(bnt.shape.tuple_shapes) == 3
    assert m.entry_computation_layout().result.is_tuple


def test_crlf_text_reads_like_lf_text() -> None:
    text = next(p for p in SAMPLES if p.name == "old_style_while.hlo.txt").read_text()
    assert hlo.to_text(hlo.parse(text.replace("\n", "\r\n"))) == text
