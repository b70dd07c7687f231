"""The lowering on real JAX modules: every module lowers or fails with one located error; with
``--auto-cast none`` the loop-IR emulation of the lowered module equals the HLO evaluator on the same
module after neuronx-cc's default HLO passes; flags change exactly what they should."""

from __future__ import annotations

import copy
import re

import ml_dtypes
import numpy as np
import pytest
from lower_cases import MANIFEST, bits_equal, case

from pyprecision import emulate, frontend, hlo, ir, lower
from pyprecision.errors import LoweringError
from pyprecision.hlo import opcodes

# What the lowering refuses, and the construct its error must name.
UNSUPPORTED = {
    "f64_mix": "f64",
    "int4_convert": "s4", "int4_param": "s4", "psum_shard_map": "custom-call",
    "scan_ops": "dynamic-slice",
    "sharded_matmul": "custom-call", "while_bf16": "trip count", "while_loop": "trip count",
}  # fmt: skip
BATCH_NORM = ["bng_bf16", "bng_f32", "bni_bf16", "bnt_bf16", "bnt_f32"]
LOWERABLE = sorted(n for n in MANIFEST if n not in UNSUPPORTED and n not in BATCH_NORM)
NONE = frontend.parse_flags(["--auto-cast", "none"])


def _after_default_passes(m: hlo.HloModule) -> hlo.HloModule:
    m = copy.deepcopy(m)
    hlo.run_passes(m, list(emulate.DEFAULT_HLO_PASSES))
    return m


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_module_is_one_located_error(name):
    m, text, path, _, _ = case(name)
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(m, NONE, filename=path, text=text)
    msg = str(e.value)
    assert UNSUPPORTED[name] in msg
    assert re.match(rf"{re.escape(path)}:\d+:\d+: \S+ \(", msg), msg  # dtypes too (OP15)
    assert e.value.refusal is not None and msg.endswith(opcodes.refusal(e.value.refusal).reason)


@pytest.mark.parametrize("name", LOWERABLE)
def test_auto_cast_none_equals_the_hlo_evaluator(name):
    m, text, path, ins, _ = case(name)
    got = emulate.run_hlo(m, ins, NONE)
    want = emulate.run_hlo(_after_default_passes(m), ins)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert bits_equal(g, w), f"output {i}: {g} != {w}"


@pytest.mark.parametrize("name", BATCH_NORM)
def test_batch_norm_expansion_is_close_to_the_exact_evaluator(name):
    """BatchNormExpander's steps each round to the op's type (the HLO evaluator rounds once): a few
    f32 ULPs of the output scale; bf16 training/inference (upcast to f32 by the HLO pass, or one
    bf16 rounding of an f32 expansion) within 2 bf16 ULPs; bf16 batch-norm-grad (not upcast: ten
    steps each rounded to bf16) within 8 bf16 ULPs of the output scale."""
    m, text, path, ins, _ = case(name)
    got = emulate.run_hlo(m, ins, NONE)
    want = emulate.run_hlo(_after_default_passes(m), ins)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        ulp = {"bng_bf16": 2**-5, "bni_bf16": 2**-7, "bnt_bf16": 2**-7}.get(name, 2**-20)
        tol = ulp * max(1.0, float(np.max(np.abs(w))))
        assert np.max(np.abs(g - w)) <= tol


@pytest.mark.parametrize("name", LOWERABLE + BATCH_NORM)
def test_lowered_module_prints_and_parses_back(name):
    m, text, path, _, _ = case(name)
    lowered = lower.lower(_after_default_passes(m), filename=path, text=text)
    printed = ir.to_text(lowered.module)
    assert ir.to_text(ir.parse(printed)) == printed


def test_the_module_is_not_changed_by_the_pipeline():
    m, text, *_ = case("dot_s32")
    before = hlo.to_text(m)
    emulate.compile_hlo(m, frontend.parse_flags(["--auto-cast", "all"]))
    assert hlo.to_text(m) == before


def _bf16(x):
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def _fp16(x):
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def _pe(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b as the PE does it: fp32 products summed in K order in fp32 from +0."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc = acc + np.multiply.outer(a[:, k], b[k]).astype(np.float32)
    return acc


@pytest.mark.parametrize(
    "flags,lhs_round",
    [
        (["--auto-cast", "matmult"], lambda a: _bf16(a)),  # (matmult, bf16) = matmult-bf16
        (["--fp32-cast", "matmult"], lambda a: _bf16(_fp16(a))),  # fp16 transpose, bf16 op
        (["--fp32-cast", "matmult", "--fast-math", "no-fast-relayout"], lambda a: _bf16(a)),
        (
            ["--fp32-cast", "matmult", "--fast-math", "fast-relayout-fp8e4"],
            lambda a: _bf16(np.asarray(a, np.float32).astype(ml_dtypes.float8_e4m3).astype(np.float32)),
        ),
    ],
    ids=["matmult", "fp32-cast-matmult", "no-fast-relayout", "fast-relayout-fp8e4"],
)
def test_matmult_modes_round_the_dot_operands_as_the_pe_reads_them(flags, lhs_round):
    """dot_f32 (a[4,8] @ b[8,3]): the stationary a goes through a matmult-based transpose (its
    contraction is its last dim) in the transpose dtype, then to the op dtype; b is read in bf16."""
    m, _, _, (a, b), _ = case("dot_f32")
    (got,) = emulate.run_hlo(m, [a, b], frontend.parse_flags(flags))
    want = _pe(lhs_round(a), _bf16(b))
    assert got.dtype == np.float32
    assert np.array_equal(got, want)


def test_auto_cast_none_dot_is_the_fp32_pe():
    m, _, _, (a, b), _ = case("dot_f32")
    (got,) = emulate.run_hlo(m, [a, b], NONE)
    assert np.array_equal(got, _pe(a, b))


def test_matmult_leaves_elementwise_ops_alone_and_all_rounds_them():
    m, _, _, ins, _ = case("elementwise_f32")
    none = emulate.run_hlo(m, ins, NONE)
    matmult = emulate.run_hlo(m, ins, frontend.parse_flags(["--auto-cast", "matmult"]))
    all_ = emulate.run_hlo(m, ins, frontend.parse_flags(["--auto-cast", "all"]))
    assert all(bits_equal(x, y) for x, y in zip(none, matmult, strict=True))
    assert not all(bits_equal(x, y) for x, y in zip(none, all_, strict=True))
    for y in all_:  # every float output was computed in bf16 (widened back to the HLO type)
        if y.dtype == np.float32:
            assert np.array_equal(y[np.isfinite(y)], _bf16(y)[np.isfinite(y)])


def test_tf32_all_is_silently_downgraded_to_matmult():
    """(all, tf32) → (matmult, fp32r) (spec 003 §7): elementwise ops stay fp32."""
    m, _, _, ins, _ = case("elementwise_f32")
    none = emulate.run_hlo(m, ins, NONE)
    tf32 = emulate.run_hlo(m, ins, frontend.parse_flags(["--auto-cast", "all", "--auto-cast-type", "tf32"]))
    assert all(bits_equal(x, y) for x, y in zip(none, tf32, strict=True))


def _sequential(x: np.ndarray, axis: int, round_acc) -> np.ndarray:
    x = np.moveaxis(np.asarray(x, np.float32), axis, -1)
    acc = np.zeros(x.shape[:-1], np.float32)
    for j in range(x.shape[-1]):
        acc = round_acc(acc + x[..., j])
    return acc


def test_mixed_precision_accumulation_flag_sets_the_reduction_accumulator():
    """reduce_f32's first output is sum over axis 0 of x[4,6]. In mode all the op runs in bf16: with
    mixed-precision accumulation (default) the sum accumulates in fp32 and rounds once to bf16;
    disabled, every partial sum is rounded to bf16."""
    m, _, _, (x,), _ = case("reduce_f32")
    xb = _bf16(x)
    on = emulate.run_hlo(m, [x], frontend.parse_flags(["--auto-cast", "all"]))[0]
    off = emulate.run_hlo(
        m, [x], frontend.parse_flags(["--auto-cast", "all", "--disable-mixed-precision-accumulation"])
    )[0]
    assert np.array_equal(on, _bf16(_sequential(xb, 0, lambda a: a.astype(np.float32))))
    assert np.array_equal(off, _sequential(xb, 0, _bf16))


def test_constants_are_const_tensors_folded_by_dtype_mutator():
    """const_large's weights are HLO constants: after matmult-bf16 they are bf16 const tensors
    (staticCastLoadTensor), not runtime casts."""
    m, text, path, *_ = case("const_large")
    c = emulate.compile_hlo(m, frontend.parse_flags(["--auto-cast", "all"]), filename=path, text=text)
    consts = [t for t in c.lowered.function.tensors if t.is_const]
    assert consts and all(t.dtype.name != "float32" for t in consts)
    assert not any(isinstance(i, ir.UnaryOp) and i.is_cast and i.data.owner is not None
                   and isinstance(i.data.owner, ir.SBAtomLoad) for i in c.lowered.function.instructions())


def test_every_ir_instruction_carries_its_hlo_origin():
    m, text, path, *_ = case("dot_general_batched_f32")
    c = emulate.compile_hlo(m, frontend.parse_flags(["--auto-cast", "matmult"]), filename=path, text=text)
    for inst in c.lowered.function.instructions():
        if isinstance(inst, ir.UnaryOp) and inst.is_cast:
            continue  # casts the passes insert
        assert isinstance(inst.dl, lower.HloLoc), inst
        assert inst.dl.path in {"a.1", "b.1", "dot_general.1"}
    roles = {i.dl.role for i in c.lowered.function.instructions()
             if i.dl is not None and i.dl.path == "dot_general.1"}
    assert {"pe-transpose", "pe-matmul"} <= roles


_SUB = """HloModule m, entry_computation_layout={(f32[4]{0}, f32[4]{0})->f32[4]{0}}

ENTRY main {
  a = f32[4]{0} parameter(0)
  b = f32[4]{0} parameter(1)
  ROOT s = f32[4]{0} subtract(a, b)
}
"""


@pytest.mark.parametrize("mode,top", [("none", np.finfo(np.float32).max),
                                      ("all", float(ml_dtypes.finfo(ml_dtypes.bfloat16).max))])
def test_saturate_infinity_clamps_before_nan_making_ops(mode, top):
    m = hlo.parse(_SUB)
    a = np.array([np.inf, 1, np.inf, -np.inf], np.float32)
    b = np.array([np.inf, 2, 1, -np.inf], np.float32)
    plain = emulate.run_hlo(m, [a, b], frontend.parse_flags(["--auto-cast", mode]))[0]
    sat = emulate.run_hlo(m, [a, b], frontend.parse_flags(["--auto-cast", mode,
                                                          "--enable-saturate-infinity"]))[0]
    assert np.isnan(plain[0]) and np.isnan(plain[3]) and plain[2] == np.inf
    assert sat[0] == 0 and sat[3] == 0 and sat[1] == -1
    assert sat[2] == np.float32(top)


def test_unsafe_fp8e4m3fn_flag_reads_e4m3fn_inputs_as_fp8e4_and_counts_them():
    """fp8_dot_direct is an f8e4m3fn x f8e4m3fn dot a[M,K] @ b[K,N]. With the flag, 448 (0x7e, the
    largest e4m3fn value) reads as NaN in fp8e4 and 256 (0x78) as inf (CAST_SEMANTICS §7): put in
    b (the moving operand, no PE transpose), they poison only their own output column."""
    m, _, _, (a, b), _ = case("fp8_dot_direct")
    b = np.array(b)
    b[0, 0] = ml_dtypes.float8_e4m3fn(448.0)
    b[1, 1] = ml_dtypes.float8_e4m3fn(256.0)
    plain = emulate.run_hlo(m, [a, b], NONE)[0]
    flags = frontend.parse_flags(["--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"])
    unsafe = emulate.run_hlo(m, [a, b], flags)[0]
    assert np.all(np.isfinite(plain))
    assert np.all(np.isnan(unsafe[:, 0])) and np.all(~np.isfinite(unsafe[:, 1]))
    assert np.array_equal(plain[:, 2:], unsafe[:, 2:])
    compiled = emulate.compile_hlo(m, flags)
    notes = emulate.relabelled_inputs(compiled, [a, b])
    assert len(notes) == 2 and "1 become inf, 1 become NaN" in notes[1]


def test_quirk_a_matmult_based_transpose_spreads_a_nan_over_the_matmul():
    """The PE transposes x by matmul(x, I): 0 · NaN is NaN, so one NaN in a stationary operand that
    is transposed on the PE reaches every output of the dot (decision L4)."""
    m, _, _, (a, b), _ = case("dot_f32")
    a = np.array(a)
    a[0, 0] = np.nan
    (got,) = emulate.run_hlo(m, [a, b], NONE)
    assert np.all(np.isnan(got))
    (xla_like,) = emulate.run_hlo(m, [a, b])  # the HLO as written: only row 0
    assert np.all(np.isnan(xla_like[0])) and np.all(np.isfinite(xla_like[1:]))


COMPILED = ["bf16_mix", "bnt_bf16", "dot_s8_s32", "fp8_mix", "reduce_f32"]


@pytest.mark.parametrize("name", COMPILED)
def test_compiled_modules_lower_with_their_fusions_inline(name):
    """XLA's compiled module (fusions, layouts): fusion bodies inline as ``fusion.N/op`` rows; mode
    none equals the HLO evaluator on the same compiled module."""
    from lower_cases import DATA, MANIFEST

    path = DATA / MANIFEST[name]["files"]["compiled"]
    text = path.read_text()
    m = hlo.parse(text, str(path))
    _, _, _, ins, _ = case(name)
    c = emulate.compile_hlo(m, NONE, filename=str(path), text=text)
    assert any("/" in p for p, _ in c.lowered.rows)
    if name == "bnt_bf16":
        return  # batch norm is expanded (L9); the evaluator computes it exactly
    got = emulate.run_compiled(c, ins)
    want = emulate.run_hlo(_after_default_passes(m), ins)
    for g, w in zip(got, want, strict=True):
        assert bits_equal(g, w)
