"""argmax and top-k through the whole pipeline on real JAX models (tests/data/models/jax-0.10.2,
written by scripts/gen_lower_argmax.py): a classifier's logits, predictions and accuracy
(``mlp_classifier``), top-k over logits (``topk_logits``) and argmax / argmin / top-k on NaNs,
signed zeros, infinities and ties (``argmax_cases``). The expectations are derived without the
loop IR: XLA's outputs, JAX's "matmul operands in bf16" reference, and the HLO evaluator on a
bf16 copy of the module."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from lower_cases import bits_equal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/models_data.py
from models_data import bf16_copy, load_model  # noqa: E402

from pyprecision import emulate, frontend, hlo, ir  # noqa: E402
from pyprecision.explain import explain_hlo_program  # noqa: E402

MODELS = ["mlp_classifier", "topk_logits", "argmax_cases"]


def _flags(*argv: str):
    return frontend.parse_flags(list(argv))


def _module(name: str) -> hlo.HloModule:
    m = load_model(name)
    return hlo.parse(m.text, str(m.hlo_path))


def _exact(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(
        np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8)))


@pytest.mark.parametrize("name", MODELS)
def test_auto_cast_none_gives_xla_s_decisions_exactly(name):
    """Predictions, accuracy, top-k indices (and argmax_cases' every output, NaNs included) are
    XLA's own bits under --auto-cast none."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags("--auto-cast", "none"))
    discrete = m.entry["notes"].get("discrete_outputs", range(len(m.outputs)))
    assert all(_exact(got[i], m.outputs[i]) for i in discrete)


@pytest.mark.parametrize("name", ["mlp_classifier", "topk_logits"])
def test_matmult_is_the_bf16_matmul_reference_bit_for_bit(name):
    """argmax and top-k only compare, so mode matmult gives, bit for bit, JAX's "every matmul
    operand rounded to bf16, f32 accumulation" logits and the decisions taken on them."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags("--auto-cast", "matmult"))
    assert all(_exact(g, r) for g, r in zip(got, m.ref_bf16mm, strict=True))
    assert not _exact(got[0], m.outputs[0])


def _bf16_copy(name: str) -> tuple[hlo.HloModule, list[np.ndarray]]:
    text, ins = bf16_copy(name)
    return hlo.parse(text, f"{name}-bf16"), ins


@pytest.mark.parametrize("name", MODELS)
def test_all_with_narrow_accumulation_is_the_evaluator_on_a_bf16_copy(name):
    """Mode all runs every float op in bf16, the argmax compares bf16 values: what XLA's
    evaluator gives the module with every f32 written bf16 (dots as the PE: bf16 operands, f32
    sums, one rounding; the accuracy's sum narrowed)."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags(
        "--auto-cast", "all", "--disable-mixed-precision-accumulation"))
    want = emulate.run_hlo(*_bf16_copy(name))
    for g, w in zip(got, want, strict=True):
        assert bits_equal(g, w.astype(np.float32) if w.dtype == ml_dtypes.bfloat16 else w)


@pytest.mark.parametrize("mode", ["none", "matmult", "all"])
def test_tied_classes_predict_the_lower_index(mode):
    """Classes 3 and 7 have bit-identical logits (copied weights); wherever they are the
    largest the prediction is 3, in XLA and under every mode — and the accuracy counts row 4,
    labelled 7, as wrong."""
    m = load_model("mlp_classifier")
    logits, preds, acc = emulate.run_hlo(_module("mlp_classifier"), m.inputs,
                                         _flags("--auto-cast", mode))
    top = logits.max(axis=1)
    tied = (logits[:, 3] == top) & (logits[:, 7] == top)
    assert tied.sum() >= 3 and np.all(preds[tied] == 3) and not np.any(preds == 7)
    assert np.all(m.outputs[1][tied] == 3)
    assert float(acc) == float(np.mean(preds == m.inputs[1]))


def test_top_k_ties_come_lower_index_first():
    m = load_model("topk_logits")
    logits, values, indices = emulate.run_hlo(_module("topk_logits"), m.inputs,
                                              _flags("--auto-cast", "none"))
    assert np.array_equal(values, np.take_along_axis(logits, indices, axis=1))
    for row in indices:
        for lo, hi in ((2, 9), (5, 12)):  # tied columns: the lower index first when both appear
            pos = {int(c): k for k, c in enumerate(row)}
            if lo in pos and hi in pos:
                assert pos[lo] < pos[hi]
    assert any(2 in r and 9 in r for r in indices.tolist())


def test_nan_and_signed_zero_order_of_argmax_and_top_k():
    """XLA's answers, reproduced: argmax of a row with NaNs is its first NaN, argmin too; top-k
    puts NaN above +inf and +0 above -0, equal values by lower index."""
    m = load_model("argmax_cases")
    got = emulate.run_hlo(_module("argmax_cases"), m.inputs, _flags("--auto-cast", "none"))
    argmax1, argmin1, _, _, _, _, _, _, tv, ti = got
    assert argmax1[1] == 0 and argmin1[1] == 0  # row 1 = [nan, 3, nan, 7, -inf, 1]
    assert ti[3].tolist() == [4, 0, 2] and np.isnan(tv[3, 0])  # [inf, 4, inf, -inf, nan, 4]
    assert ti[2].tolist() == [1, 3, 0] and np.signbit(tv[2]).tolist() == [False, False, True]
    assert all(_exact(g, w) for g, w in zip(got, m.outputs, strict=True))


def test_explain_row_of_the_argmax_in_mode_all():
    """The argmax's row runs in bf16 in mode all (its values result narrowed), and says that its
    index result is an integer path (skip rule 2); the index result stays int32."""
    m = load_model("mlp_classifier")
    rows = explain_hlo_program(str(m.hlo_path), ["--auto-cast", "all"]).to_json()["rows"]
    (row,) = [r for r in rows if r["op"] == "reduce" and r["name"].endswith("/reduce.11")]
    assert (row["before"], row["after"]) == ("float32", "bfloat16")
    assert "skip rule 2" in row["decided_by"]
    fn = emulate.compile_hlo(_module("mlp_classifier"), _flags("--auto-cast", "all")).lowered.function
    ops = [i for i in fn.instructions() if isinstance(i, ir.ArgReduceOp)]
    assert {op.dtype.name for op in ops} == {"int32", "bfloat16"}
