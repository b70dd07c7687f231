"""gather and scatter through the whole pipeline on real JAX models (tests/data/models/jax-0.10.2,
written by scripts/gen_lower_gather.py): an embedding lookup feeding layer norm and an MLP
(``embed_mlp``), NumPy-style and ``take_along_axis`` gathers of a matmul's result with indices
XLA clamps (``take_along``), and the lookup's gradient, a scatter-add of colliding rows
(``embed_grad``). The expectations are derived without the loop IR: XLA's outputs, JAX's
"matmul operands in bf16" reference, and the HLO evaluator on a bf16 copy of the module."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from lower_cases import bits_equal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/models_data.py
from models_data import bf16_copy, load_model  # noqa: E402

from pyprecision import emulate, frontend, hlo, ir  # noqa: E402
from pyprecision.errors import LoweringError  # noqa: E402
from pyprecision.explain import explain_hlo_program  # noqa: E402
from pyprecision.frontend import FP32_CAST_MODES  # noqa: E402

MODELS = ["embed_mlp", "take_along", "embed_grad"]


def _flags(*argv: str):
    return frontend.parse_flags(list(argv))


def _module(name: str) -> hlo.HloModule:
    m = load_model(name)
    return hlo.parse(m.text, str(m.hlo_path))


# --auto-cast none equals the HLO evaluator bit for bit on these models as on every model:
# test_lower_models.py::test_auto_cast_none_equals_the_hlo_evaluator_bit_for_bit


@pytest.mark.parametrize("name", ["embed_mlp", "take_along"])
def test_matmult_is_the_bf16_matmul_reference_bit_for_bit(name):
    """The gathers only move values, so mode matmult differs from f32 exactly where JAX's "every
    matmul operand rounded to bf16, f32 accumulation" computation does."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags("--auto-cast", "matmult"))
    assert all(np.array_equal(g, r) for g, r in zip(got, m.ref_bf16mm, strict=True))
    assert not all(np.array_equal(g, x) for g, x in zip(got, m.outputs, strict=True))


def _bf16_copy(name: str) -> tuple[hlo.HloModule, list[np.ndarray]]:
    text, ins = bf16_copy(name)
    return hlo.parse(text, f"{name}-bf16"), ins


@pytest.mark.parametrize("name", MODELS)
def test_all_with_narrow_accumulation_is_the_evaluator_on_a_bf16_copy(name):
    """Mode all runs every float op in bf16: gathers read and write bf16, a scatter-add combines
    in bf16 when accumulation is narrowed — what XLA's evaluator gives the same module with every
    f32 written bf16 (dots as the PE: bf16 operands, f32 sums, one rounding)."""
    m = load_model(name)
    got = emulate.run_hlo(_module(name), m.inputs, _flags(
        "--auto-cast", "all", "--disable-mixed-precision-accumulation"))
    want = emulate.run_hlo(*_bf16_copy(name))
    for g, w in zip(got, want, strict=True):
        assert bits_equal(g, w.astype(np.float32))


def _index_ops(fn: ir.Function) -> list[ir.Instruction]:
    return [i for i in fn.instructions() if isinstance(i, (ir.GatherOp, ir.ScatterOp))]


def _integer_casts(fn: ir.Function) -> int:
    return sum(1 for i in fn.instructions()
               if isinstance(i, ir.UnaryOp) and i.is_cast and i.dtype.is_integer)  # fmt: skip


@pytest.mark.parametrize("name", MODELS)
def test_the_passes_retype_the_data_and_never_touch_the_indices(name):
    """Under every --fp32-cast mode: a gather/scatter runs in fp32 or the mode's dtype (matmult
    modes leave it fp32, the all modes narrow it), its indices keep their integer dtype, and no
    pass adds a cast on an integer value (decision L14)."""
    module = _module(name)
    before = emulate.compile_hlo(module, None).lowered.function
    idx_dtypes = [op.indices.dtype for op in _index_ops(before)]
    for mode in FP32_CAST_MODES:
        fn = emulate.compile_hlo(module, _flags("--fp32-cast", mode)).lowered.function
        ops = _index_ops(fn)
        assert [op.indices.dtype for op in ops] == idx_dtypes
        assert _integer_casts(fn) == _integer_casts(before)
        dtypes = {op.dtype.name for op in ops}
        if mode.startswith("matmult") or mode == "none":
            assert dtypes == {"float32"}, mode
        else:
            assert dtypes <= {"float32", "bfloat16", "float16", "float32r", "float8e4"}, mode
            assert dtypes != {"float32"}, mode


def test_explain_rows_of_a_gather_in_mode_all():
    m = load_model("embed_mlp")
    rows = {r["name"]: r for r in explain_hlo_program(str(m.hlo_path), ["--auto-cast", "all"])
            .to_json()["rows"]}  # fmt: skip
    gathers = [r for r in rows.values() if r["op"] == "gather"]
    assert gathers and all((r["before"], r["after"]) == ("float32", "bfloat16") for r in gathers)


def _wrap_and_clamp(ids: np.ndarray, n: int) -> np.ndarray:
    """What JAX then XLA do to an index: a negative one wrapped by n, then clamped into range."""
    return np.clip(np.where(ids < 0, ids + n, ids), 0, n - 1).astype(ids.dtype)


@pytest.mark.parametrize("mode", ["none", "matmult", "all"])
def test_out_of_range_indices_clamp_as_xla_does(mode):
    """take_along's rows 7 and -9 (of 4), take_along_axis's 12 and -20 and the u32 column 13 (of
    10) are clamped by the gather: replacing them by the clamped in-range indices changes no bit."""
    m = load_model("take_along")
    x, w, rows, idx, cols = m.inputs
    assert rows.max() >= 4 and (rows + 4).min() < 0 and idx.max() >= 10 and cols.max() >= 10
    cfg = _flags("--auto-cast", mode)
    got = emulate.run_hlo(_module("take_along"), m.inputs, cfg)
    clamped = [x, w, _wrap_and_clamp(rows, 4), _wrap_and_clamp(idx, 10), np.minimum(cols, 9)]
    same = emulate.run_hlo(_module("take_along"), clamped, cfg)
    assert all(np.array_equal(a, b) for a, b in zip(got, same, strict=True))
    assert np.array_equal(got[0][2], got[0][0]) and np.array_equal(m.outputs[0][2], m.outputs[0][0])


@pytest.mark.parametrize("mode", ["none", "matmult", "all"])
def test_the_embedding_gradient_scatters_only_into_looked_up_rows(mode):
    m = load_model("embed_grad")
    table, ids, _ = m.inputs
    (g_table, _g_w) = emulate.run_hlo(_module("embed_grad"), m.inputs, _flags("--auto-cast", mode))
    hit = np.zeros(table.shape[0], bool)
    hit[np.where(ids < 0, ids + table.shape[0], ids).reshape(-1)] = True
    assert np.all(g_table[~hit] == 0) and np.all(np.any(g_table[hit] != 0, axis=1))
    assert np.all(np.any(m.outputs[0][hit] != 0, axis=1))


# -- the hlo-eval modules (issue 11's measure: 23 of 50 lowered before gather, scatter and sort) --
HLO_EVAL = Path(__file__).resolve().parents[1] / "data" / "hlo-eval" / "jax-0.10.2"
#: the modules that still do not lower, and what their one located error names
NOT_LOWERED = {"rng_bit_generator": "rng-bit-generator"}  # fmt: skip
HLO_EVAL_NAMES = sorted(p.name[: -len(".hlo.txt")] for p in HLO_EVAL.glob("*.hlo.txt"))


def test_49_of_the_50_hlo_eval_modules_lower():
    assert len(HLO_EVAL_NAMES) == 50 and set(NOT_LOWERED) <= set(HLO_EVAL_NAMES)
    assert len(HLO_EVAL_NAMES) - len(NOT_LOWERED) == 49


@pytest.mark.parametrize("name", HLO_EVAL_NAMES)
def test_hlo_eval_module_lowers_and_equals_the_evaluator_or_is_one_located_error(name):
    path = HLO_EVAL / f"{name}.hlo.txt"
    text = path.read_text()
    module = hlo.parse(text, str(path))
    z = np.load(HLO_EVAL / f"{name}.npz")
    ins = [z[f"in{i}"] for i in range(sum(1 for k in z.files if re.fullmatch(r"in\d+", k)))]
    none = _flags("--auto-cast", "none")
    if name in NOT_LOWERED:
        with pytest.raises(LoweringError) as e:
            emulate.compile_hlo(module, none, filename=str(path), text=text)
        assert NOT_LOWERED[name] in str(e.value) and str(e.value).startswith(f"{path}:")
        return
    got = emulate.run_hlo(module, ins, none)
    after = copy.deepcopy(module)  # the evaluator on the module after neuronx-cc's HLO passes
    hlo.run_passes(after, list(emulate.DEFAULT_HLO_PASSES))
    want = emulate.run_hlo(after, ins)
    assert all(bits_equal(g, w) for g, w in zip(got, want, strict=True))
