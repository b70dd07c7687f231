"""Grouped and depthwise convolution (``feature_group_count`` / ``batch_group_count`` > 1) through
the lowering (decision L18): on random convolutions — every dim_labels order, padding (negative
too), strides, lhs/rhs dilation, feature or batch groups — the lowered module equals the HLO
evaluator bit for bit under ``--auto-cast none``; under ``matmult`` it equals the evaluator on the
same module with every convolution operand rounded to bf16 (what the PE reads), derived without
the loop IR; each group is one contraction of the ungrouped form."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
from conv_cases import ConvCase, conv_cases
from hypothesis import given, settings
from hypothesis import strategies as st
from lower_cases import bits_equal

from pyprecision import emulate, frontend, hlo, ir
from pyprecision.explain import explain_hlo_program

NONE = frontend.parse_flags(["--auto-cast", "none"])
MATMULT = frontend.parse_flags(["--auto-cast", "matmult"])
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None)


def _inputs(c: ConvCase, seed: int) -> list[np.ndarray]:
    r = np.random.RandomState(seed)
    return [r.standard_normal(c.lhs).astype(np.float32), r.standard_normal(c.rhs).astype(np.float32)]


@SETTINGS
@given(conv_cases(), st.integers(0, 2**16))
def test_lowered_grouped_convolution_equals_the_hlo_evaluator(c, seed):
    m = hlo.parse(c.text(), "c.hlo.txt")
    args = _inputs(c, seed)
    (got,), (want,) = emulate.run_hlo(m, args, NONE), emulate.run_hlo(m, args)
    assert bits_equal(got, want)


def bf16_operands(text: str, ops: str = "convolution") -> str:
    """The module with each operand of the ``ops`` instructions (a regex: ``convolution|dot``)
    rounded to bf16 and widened back (f32 sums): what AutoCastTCInputs makes the PE read in mode
    matmult-bf16, written in HLO."""
    out = []
    for line in text.splitlines():
        m = re.match(rf"(\s*)(ROOT )?(\S+) = (f32\[[^\]]*\])\S* ({ops})\((\S+), (\S+)\)(.*)",
                     line)
        if m is None:
            out.append(line)
            continue
        ind, root, name, shape, op, a, b, rest = m.groups()
        for v in (a, b):
            sh = _shape_of(text, v)
            out.append(f"{ind}{v}.bf.{name} = bf16{sh} convert({v})")
            out.append(f"{ind}{v}.rt.{name} = f32{sh} convert({v}.bf.{name})")
        out.append(f"{ind}{root or ''}{name} = {shape} {op}({a}.rt.{name}, {b}.rt.{name}){rest}")
    return "\n".join(out) + "\n"


def _shape_of(text: str, name: str) -> str:
    m = re.search(rf"(?:^|\s){re.escape(name)} = f32(\[[^\]]*\])", text)
    assert m is not None, name
    return m.group(1)


@SETTINGS
@given(conv_cases(), st.integers(0, 2**16))
def test_matmult_is_the_evaluator_with_bf16_convolution_operands(c, seed):
    """Each group's contraction reads bf16 operands and sums in fp32 PSUM, in the evaluator's
    order: bit for bit what XLA's semantics give with the operands rounded first."""
    args = _inputs(c, seed)
    (got,) = emulate.run_hlo(hlo.parse(c.text(), "c.hlo.txt"), args, MATMULT)
    (want,) = emulate.run_hlo(hlo.parse(bf16_operands(c.text()), "c-bf16.hlo.txt"), args)
    assert bits_equal(got, want)


DEPTHWISE = ConvCase((2, 5, 5, 4), (3, 3, 1, 4), (2, 5, 5, 4),
                     "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
                     "feature_group_count=4")


def _contractions(fn: ir.Function) -> list[ir.TensorContractOp]:
    return [i for i in fn.instructions() if isinstance(i, ir.TensorContractOp)
            and i.dl.role == "pe-matmul"]  # fmt: skip


def test_a_depthwise_convolution_is_one_contraction_per_group():
    """Depthwise 3x3 over 4 channels: 4 contractions of K = 9 (the 9 taps of one channel), each
    the ungrouped im2col form (the window columns transposed on the PE, the kernel moving)."""
    m = hlo.parse(DEPTHWISE.text(), "dw.hlo.txt")
    fn = emulate.compile_hlo(m, None).lowered.function
    mms = _contractions(fn)
    assert len(mms) == 4
    assert all(mm.stationary.shape == (9, 50) and mm.moving.shape == (9, 1) for mm in mms)
    assert all(isinstance(mm.stationary.owner, ir.TensorContractOp) for mm in mms)  # PE transpose


def test_explain_rows_of_a_grouped_convolution_in_mode_matmult():
    rows = [r for r in _explain(DEPTHWISE.text(), ["--auto-cast", "matmult"])
            if r["op"] == "convolution"]
    assert len(rows) == 1 and rows[0]["operand_dtypes"] == ["bfloat16", "bfloat16"]
    assert rows[0]["after"] == "float32"


def _explain(text: str, argv: list[str]) -> list[dict]:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.hlo.txt"
        p.write_text(text)
        return explain_hlo_program(str(p), argv).to_json()["rows"]


def test_a_bf16_grouped_convolution_equals_the_evaluator():
    """bf16 operands and result: the PE sums in fp32 and rounds once, as XLA's evaluator does."""
    m = hlo.parse(DEPTHWISE.text("bf16"), "dw16.hlo.txt")
    args = [a.astype(ml_dtypes.bfloat16) for a in _inputs(DEPTHWISE, 3)]
    (got,), (want,) = emulate.run_hlo(m, args, NONE), emulate.run_hlo(m, args)
    assert bits_equal(got, want)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(conv_cases(), st.integers(0, 2**16))
def test_all_with_narrow_accumulation_is_the_evaluator_in_bf16(c, seed):
    """Mode all: every group's contraction reads bf16 and rounds its fp32 sum once to bf16, what
    XLA's evaluator does with the convolution written in bf16."""
    args = [a.astype(ml_dtypes.bfloat16) for a in _inputs(c, seed)]
    f32 = [a.astype(np.float32) for a in args]
    cfg = frontend.parse_flags(["--auto-cast", "all", "--disable-mixed-precision-accumulation"])
    (got,) = emulate.run_hlo(hlo.parse(c.text(), "c.hlo.txt"), f32, cfg)
    (want,) = emulate.run_hlo(hlo.parse(c.text("bf16"), "c16.hlo.txt"), args)
    assert bits_equal(got, want.astype(np.float32))
