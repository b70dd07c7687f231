"""run_hlo on modules rewritten by spec 004's passes.

* neuron-int-matmul-downcast: the int→F32→int dot gives exactly the original integer results
  while every operand, product and partial sum stays within 2^24, and reproduces the F32 route's
  loss (``pyprecision.int_dot``) beyond it.
* batch-norm-training-upcast: outputs stay BF16 and equal an F32 batch norm rounded once to BF16.
"""
from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyprecision
from pyprecision import hlo
from pyprecision.emulate import run_hlo
from pyprecision.hlo import PrimitiveType

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"
VERSIONS = ("jax-0.4.30", "jax-0.10.2")
LIMIT = 2 ** 24


def load(version: str, name: str, kind: str = "hlo") -> tuple[str, list[np.ndarray],
                                                              list[np.ndarray]]:
    man = json.loads((DATA / version / "manifest.json").read_text())
    entry = man["modules"][name]
    z = np.load(DATA / version / entry["files"]["data"])
    dtypes = json.loads(str(z["__dtypes__"]))

    def arr(k: str) -> np.ndarray:
        d = dtypes[k]
        return z[k].view(getattr(ml_dtypes, d)) if d == "bfloat16" or d.startswith("float8") \
            else z[k]
    ins = [arr(f"in{i}") for i in range(len(entry["inputs"]))]
    outs = [arr(f"out{i}") for i in range(len(entry["outputs"]))]
    return (DATA / version / entry["files"][kind]).read_text(), ins, outs


def downcast(text: str) -> hlo.HloModule:
    m = hlo.parse(text)
    assert hlo.run_passes(m, ["neuron-int-matmul-downcast"]) is True
    dots = [i for i in m.all_instructions() if i.opcode == "dot"]
    assert dots and all(d.shape.element_type == PrimitiveType.F32 for d in dots)
    return m


def max_partial_sum(a: np.ndarray, b: np.ndarray) -> int:
    """Largest |operand|, |product| or |partial sum over k| of the 2-D product a @ b."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    prods = a64[:, :, None] * b64[None, :, :]           # [M, K, N]
    partial = np.cumsum(prods, axis=1)
    return int(max(np.abs(a64).max(), np.abs(b64).max(), np.abs(prods).max(),
                   np.abs(partial).max()))


# -- neuron-int-matmul-downcast -------------------------------------------------------------
# integer dots of the committed modules whose values all lie within 2^24 and whose integer
# result type can hold the exact result (s32)
WITHIN = ("dot_s8_s32", "dot_s32", "dot_mixed_s8_f32_s32", "dot_general_batched_s8",
          "dot_general_two_contract")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", WITHIN)
def test_downcast_exact_within_2_24(version: str, name: str) -> None:
    text, ins, want = load(version, name)
    for a in ins:
        if a.dtype.kind in "iu":
            assert np.abs(a.astype(np.int64)).max() < LIMIT
    for w in want:
        assert np.abs(w.astype(np.int64)).max() < LIMIT
    got = run_hlo(downcast(text), ins)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)  # XLA's own integer result, exactly


def test_downcast_partial_sums_are_within_2_24() -> None:
    # the precondition of the exactness claim, checked on the 2-D module
    _, (a, b), _ = load("jax-0.10.2", "dot_s32")
    assert max_partial_sum(a, b) < LIMIT


@pytest.mark.parametrize("version", VERSIONS)
def test_gotcha_no_overflow_guard_beyond_2_24_reproduces_int_dot_loss(version: str) -> None:
    text, (a, b), (xla,) = load(version, "dot_s32_big")
    assert max_partial_sum(a, b) > LIMIT
    exact = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(xla, exact)            # XLA: exact s32 dot
    np.testing.assert_array_equal(run_hlo(hlo.parse(text), [a, b])[0], exact)
    route, report = pyprecision.int_dot(a, b, np.int32, report=True)
    assert report.changed > 0                            # the F32 route loses low bits here
    got = run_hlo(downcast(text), [a, b])[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, route)            # ... and the rewrite loses the same
    assert np.count_nonzero(got != exact) == report.changed


def test_downcast_s8_result_saturates_instead_of_wrapping() -> None:
    # s8 x s8 -> s8: XLA wraps the exact sum to s8; the F32 route converts f32 -> s8 with
    # XLA's float->int rule, which saturates. Spec 004: "Range correctness is delegated entirely
    # to stock XLA kConvert semantics".
    text, (a, b), (xla,) = load("jax-0.10.2", "dot_s8_s8")
    exact = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(xla, exact.astype(np.int8))          # wraparound
    got = run_hlo(downcast(text), [a, b])[0]
    np.testing.assert_array_equal(got, np.clip(exact, -128, 127))      # saturation
    np.testing.assert_array_equal(got, pyprecision.int_dot(a, b, np.int8))
    assert np.any(got != xla)


DOT_TEXT = """HloModule m, entry_computation_layout={{(s32[{m},{k}]{{1,0}}, s32[{k},{n}]{{1,0}})->s32[{m},{n}]{{1,0}}}}

ENTRY main {{
  a = s32[{m},{k}]{{1,0}} parameter(0)
  b = s32[{k},{n}]{{1,0}} parameter(1)
  ROOT d = s32[{m},{n}]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


@st.composite
def int_matrices(draw: st.DrawFn, bound: int) -> tuple[np.ndarray, np.ndarray]:
    m, k, n = (draw(st.integers(1, 5)) for _ in range(3))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    r = np.random.default_rng(seed)
    return (r.integers(-bound, bound + 1, (m, k)).astype(np.int32),
            r.integers(-bound, bound + 1, (k, n)).astype(np.int32))


@settings(max_examples=60, deadline=None)
@given(int_matrices(bound=1000))
def test_downcast_property_exact_small(ab: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = ab
    (m, k), n = a.shape, b.shape[1]
    text = DOT_TEXT.format(m=m, k=k, n=n)
    got = run_hlo(downcast(text), [a, b])[0]
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


@settings(max_examples=60, deadline=None)
@given(int_matrices(bound=2 ** 20))
def test_downcast_property_matches_int_dot_large(ab: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = ab
    (m, k), n = a.shape, b.shape[1]
    text = DOT_TEXT.format(m=m, k=k, n=n)
    got = run_hlo(downcast(text), [a, b])[0]
    np.testing.assert_array_equal(got, pyprecision.int_dot(a, b, np.int32))
    orig = run_hlo(hlo.parse(text), [a, b])[0]
    np.testing.assert_array_equal(orig, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))


def test_downcast_s4_operands_route_through_f32_exactly() -> None:
    # s4 operands (int8 values) are integers too: converted to F32 like any other
    text = """HloModule m

ENTRY main {
  a = s4[2,3]{1,0} parameter(0)
  b = s4[3,2]{1,0} parameter(1)
  ROOT d = s32[2,2]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    a = np.array([[-8, 7, 3], [1, -1, 0]], np.int8)
    b = np.array([[7, -8], [-8, 7], [2, 2]], np.int8)
    m = downcast(text)
    assert [i.shape.element_type for i in m.all_instructions() if i.opcode == "convert"][:2] \
        == [PrimitiveType.F32, PrimitiveType.F32]
    np.testing.assert_array_equal(run_hlo(m, [a, b])[0], a.astype(np.int64) @ b.astype(np.int64))


# -- batch-norm-training-upcast -------------------------------------------------------------

def f32_batch_norm_training(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, eps: float,
                            fi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reference F32 batch norm (written independently of the evaluator): the exact results
    (float64, two-pass variance), each rounded once to float32."""
    xs = x.astype(np.float64)
    axes = tuple(d for d in range(x.ndim) if d != fi)
    shape = [1] * x.ndim
    shape[fi] = x.shape[fi]
    mean = np.mean(xs, axis=axes)
    var = np.var(xs, axis=axes)
    e = float(np.float32(eps))
    y = (xs - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + e) \
        * scale.astype(np.float64).reshape(shape) + offset.astype(np.float64).reshape(shape)
    return y.astype(np.float32), mean.astype(np.float32), var.astype(np.float32)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ("hlo", "before_optimizations"))
def test_bnt_upcast_outputs_stay_bf16_and_equal_f32_rounded_once(version: str,
                                                                   kind: str) -> None:
    text, (x, s, o), _ = load(version, "bnt_bf16", kind)
    m = hlo.parse(text)
    assert hlo.run_passes(m, ["batch-norm-training-upcast"]) is True
    bnts = [i for i in m.all_instructions() if i.opcode == "batch-norm-training"]
    assert [leaf.element_type for b in bnts for leaf in b.shape.leaves()] == [PrimitiveType.F32] * 3
    assert [leaf.element_type for leaf in m.entry.root.shape.leaves()] == [PrimitiveType.BF16] * 3
    got = run_hlo(m, [x, s, o])
    ref = f32_batch_norm_training(x, s, o, 1e-3, 1)
    for g, r in zip(got, ref):
        assert g.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(g.view(np.uint16), r.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_bnt_upcast_leaves_f32_inference_and_grad_alone() -> None:
    for name in ("bnt_f32", "bni_bf16", "bng_bf16"):
        text, _, _ = load("jax-0.10.2", name)
        m = hlo.parse(text)
        assert hlo.run_passes(m, ["batch-norm-training-upcast"]) is False
        assert hlo.to_text(m) == text


# -- upcast-all-to-fp32 ----------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_upcast_all_bf16_dot_rounds_back_to_the_original(version: str) -> None:
    # a bf16 dot is an f32 dot rounded once to bf16 (docs/decisions/hlo-eval.md HE4); after
    # upcast-all-to-fp32 the module returns that f32 dot, parameters included become F32
    text, (a, b), (want_bf16, want_f32) = load(version, "dot_bf16")
    m = hlo.parse(text)
    assert hlo.run_passes(m, ["upcast-all-to-fp32"]) is True
    assert [p.shape.element_type for p in m.entry.parameters] == [PrimitiveType.F32] * 2
    got = run_hlo(m, [a.astype(np.float32), b.astype(np.float32)])
    assert [g.dtype for g in got] == [np.float32, np.float32]
    np.testing.assert_array_equal(got[1], want_f32)
    np.testing.assert_array_equal(got[0].astype(ml_dtypes.bfloat16).view(np.uint16),
                                  want_bf16.view(np.uint16))


def _evaluable_modules() -> list:
    out = []
    for v in VERSIONS:
        man = json.loads((DATA / v / "manifest.json").read_text())
        out += [pytest.param(v, n, id=f"{v}-{n}") for n, e in sorted(man["modules"].items())
                if e.get("evaluable", True)]
    return out


@pytest.mark.parametrize("version,name", _evaluable_modules())
def test_every_module_still_evaluates_after_the_int_and_bnt_passes(version: str,
                                                                   name: str) -> None:
    # the two passes keep the ENTRY signature, so XLA's inputs still fit and the outputs keep
    # XLA's dtypes and shapes
    text, ins, want = load(version, name)
    m = hlo.parse(text)
    hlo.run_passes(m, ["batch-norm-training-upcast", "neuron-int-matmul-downcast"])
    got = run_hlo(m, ins)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
