"""Grouped convolution and pooling gradients through the whole pipeline on real JAX models
(tests/data/models/jax-0.10.2, written by scripts/gen_lower_conv.py): a depthwise-separable block
(``dw_separable``), a grouped convolution (``grouped_conv``), the block's weight gradient
(``dw_separable_grad``: ``batch_group_count``) and a max-pool CNN's gradient
(``maxpool_cnn_grad``: ``select-and-scatter``). The expectations are derived without the loop IR:
XLA's outputs, JAX's "conv operands in bf16" reference, and the HLO evaluator on rewritten copies
of the module (bf16 convolution operands; everything in bf16)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from lower_cases import bits_equal
from test_lower_conv import bf16_operands

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/models_data.py
from models_data import bf16_copy, load_model  # noqa: E402

from pyprecision import emulate, frontend, hlo, ir  # noqa: E402
from pyprecision.explain import explain_hlo_program  # noqa: E402

MODELS = ["dw_separable", "grouped_conv", "dw_separable_grad", "maxpool_cnn_grad"]
#: the models without a pool (whose selection a rounding can move)
CONV_ONLY = ["dw_separable", "grouped_conv", "dw_separable_grad"]


def _flags(*argv: str):
    return frontend.parse_flags(list(argv))


def _module(name: str, text: str | None = None) -> hlo.HloModule:
    m = load_model(name)
    return hlo.parse(m.text if text is None else text, str(m.hlo_path))


# --auto-cast none equals the HLO evaluator bit for bit on these models as on every model:
# test_lower_models.py::test_auto_cast_none_equals_the_hlo_evaluator_bit_for_bit


@pytest.mark.parametrize("name", ["dw_separable", "grouped_conv"])
def test_matmult_is_the_bf16_conv_reference_bit_for_bit(name):
    """JAX's "every conv operand rounded to bf16, f32 accumulation" (XLA:CPU's own numbers)."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags("--auto-cast", "matmult"))
    assert all(np.array_equal(g, r) for g, r in zip(got, m.ref_bf16mm, strict=True))
    assert not all(np.array_equal(g, x) for g, x in zip(got, m.outputs, strict=True))


@pytest.mark.parametrize("name", MODELS)
def test_matmult_is_the_evaluator_with_bf16_pe_operands(name):
    """Also for the gradients, whose backward convolutions (batch groups among them) JAX's
    reference cannot round: the evaluator on the module with every convolution and dot operand
    rounded to bf16."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags("--auto-cast", "matmult"))
    want = emulate.run_hlo(_module(name, bf16_operands(m.text, "convolution|dot")), m.inputs)
    assert all(bits_equal(g, w) for g, w in zip(got, want, strict=True))


def _bf16_copy(name: str) -> tuple[hlo.HloModule, list[np.ndarray]]:
    text, ins = bf16_copy(name)
    return hlo.parse(text, f"{name}-bf16"), ins


@pytest.mark.parametrize("name", MODELS)
def test_all_with_narrow_accumulation_is_the_evaluator_on_a_bf16_copy(name):
    """Mode all runs every float op in bf16 (each group's contraction: bf16 operands, fp32 PSUM,
    one rounding), as XLA's evaluator runs the module with every f32 written bf16."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags(
        "--auto-cast", "all", "--disable-mixed-precision-accumulation"))
    want = emulate.run_hlo(*_bf16_copy(name))
    for g, w in zip(got, want, strict=True):
        assert bits_equal(g, w.astype(np.float32))


def _rms(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)))


@pytest.mark.parametrize("name", CONV_ONLY)
def test_all_is_further_from_f32_than_matmult_in_rms(name):
    """On every output (RMS: the max of a few hundred errors is no ordering promise, L18).
    Not maxpool_cnn_grad: there a pool's selection moves under matmult (below)."""
    m = load_model(name)
    mm = emulate.run_hlo(_module(name), m.inputs, _flags("--auto-cast", "matmult"))
    al = emulate.run_hlo(_module(name), m.inputs, _flags("--auto-cast", "all"))
    for g, a, x in zip(mm, al, m.outputs, strict=True):
        assert 0 < _rms(g, x) < _rms(a, x)


def test_the_depthwise_block_runs_one_contraction_per_channel():
    """dw_separable: 4 contractions of K = 9 (one channel's taps) for the depthwise conv, one of
    K = 4 for the pointwise conv; in matmult mode every one reads bf16 and returns fp32."""
    fn = emulate.compile_hlo(_module("dw_separable"), _flags("--auto-cast", "matmult")).lowered.function
    mms = [i for i in fn.instructions()
           if isinstance(i, ir.TensorContractOp) and i.dl.role == "pe-matmul"]  # fmt: skip
    assert sorted(mm.moving.shape for mm in mms) == [(4, 8)] + [(9, 1)] * 4
    assert all(mm.stationary.dtype is mm.moving.dtype is ir.bfloat16 for mm in mms)
    assert all(mm.dtype is ir.float32 for mm in mms)


def _sas_output(text: str) -> str:
    """maxpool_cnn_grad returning its select-and-scatter (the pool's input gradient) instead."""
    text = re.sub(r", entry_computation_layout=\{[^\n]*\}", "", text)
    return re.sub(r"ROOT tuple\.1 = .*", "ROOT tuple.1 = f32[2,8,8,4]{3,2,1,0} "
                  "copy(select_and_scatter.9)", text)


def test_quirk_a_bf16_rounding_moves_the_max_pool_selection():
    """maxpool_cnn_grad, mode matmult: the conv's bf16 operands change its relu outputs enough
    that 2 of the 128 pool windows select another element, so their gradient lands elsewhere and
    the kernel gradient moves by ~40% of its scale (mode all: ~1%) — what the evaluator gives
    with bf16 operands too (test above), not an error of the lowering (decision L19)."""
    m = load_model("maxpool_cnn_grad")
    sas = _sas_output(m.text)
    f32 = emulate.run_hlo(hlo.parse(sas), m.inputs, _flags("--auto-cast", "none"))[0]
    mm = emulate.run_hlo(hlo.parse(sas), m.inputs, _flags("--auto-cast", "matmult"))[0]
    ref = emulate.run_hlo(hlo.parse(bf16_operands(sas, "convolution|dot")), m.inputs)[0]
    assert np.sum(f32 != 0) == np.sum(mm != 0) == 128  # one selected element per window
    assert np.sum((f32 != 0) != (mm != 0)) == 2 * 2 and bits_equal(mm, ref)  # 2 windows moved
    (kgrad, _, _) = emulate.run_hlo(_module("maxpool_cnn_grad"), m.inputs,
                                    _flags("--auto-cast", "matmult"))
    assert np.max(np.abs(kgrad - m.outputs[0])) > 0.3 * np.max(np.abs(m.outputs[0]))


def test_explain_rows_of_the_pool_gradient_in_mode_all():
    """maxpool_cnn_grad, --auto-cast all: the select-and-scatter row runs in bf16, and every
    convolution row (the forward one and the kernel gradient) reads bf16 / bf16."""
    m = load_model("maxpool_cnn_grad")
    rows = explain_hlo_program(str(m.debug_path), ["--auto-cast", "all"]).to_json()["rows"]
    sas = [r for r in rows if r["op"] == "select-and-scatter"]
    convs = [r for r in rows if r["op"] == "convolution"]
    assert [(r["before"], r["after"]) for r in sas] == [("float32", "bfloat16")]
    assert len(convs) == 2 and all(r["operand_dtypes"] == ["bfloat16", "bfloat16"] for r in convs)
