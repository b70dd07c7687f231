"""UpcastAllToFP32 (spec 004): every non-F32 float type → F32, integers untouched."""
from __future__ import annotations

import pytest
from hlo_testdata import REAL_DATA, SAMPLES, data_file

from pyprecision import hlo
from pyprecision.hlo.passes.upcast_all_to_fp32 import CSWTCH_446, upcast_shape_to_fp32
from pyprecision.hlo.shape import Layout, Shape
from pyprecision.hlo.types import PrimitiveType as T

#: spec 004 "Net policy": codes upcast to F32.
UPCAST = {0xA, 0xC, 0x10, 0x13, 0x14, 0x17, 0x18, 0x19, 0x1C, 0x1D, 0x20, 0x21}


def test_selector_table_bytes_are_the_spec_bytes() -> None:
    assert bytes(CSWTCH_446) == bytes.fromhex("010100000101010000010100000001")
    assert len(CSWTCH_446) == 15


@pytest.mark.parametrize("t", [t for t in T if t not in (T.TUPLE, T.PRIMITIVE_TYPE_INVALID)],
                         ids=lambda t: t.name)
def test_upcast_policy_per_code(t) -> None:
    s = Shape.array(t, [2])
    want = T.F32 if int(t) in UPCAST else t
    assert upcast_shape_to_fp32(s).element_type == want


def test_upcast_GOTCHA_code_0x20_converted_although_table_says_0() -> None:
    assert CSWTCH_446[0x20 - 0x13] == 0
    assert T.F4E2M1FN == 0x20
    assert upcast_shape_to_fp32(Shape.array(T.F4E2M1FN, [4])).element_type == T.F32


def test_upcast_CORRECTION_B25_2_integers_including_s4_u4_untouched() -> None:
    for t in (T.S4, T.U4, T.S8, T.S32, T.U64, T.PRED, T.S2, T.U2, T.S1, T.U1):
        s = Shape.array(t, [8], Layout((0,), "E(4)" if t in (T.S4, T.U4) else ""))
        assert upcast_shape_to_fp32(s) is s


def test_upcast_tuples_recursed() -> None:
    s = hlo.parse_shape("(bf16[2]{0}, s4[4]{0:E(4)}, (f16[], f32[3]{0}), token[])")
    assert upcast_shape_to_fp32(s).to_text() == "(f32[2]{0}, s4[4]{0:E(4)}, (f32[], f32[3]{0}), token[])"


def test_upcast_f4e2m1fn_drops_element_size() -> None:
    s = hlo.parse_shape("f4e2m1fn[32]{0:E(4)}")
    assert upcast_shape_to_fp32(s).to_text() == "f32[32]{0}"


def run(text: str) -> tuple[bool, str]:
    m = hlo.parse(text)
    changed = hlo.run_passes(m, ["upcast-all-to-fp32"])
    return changed, hlo.to_text(m)


CONSTS = """HloModule c, entry_computation_layout={()->(bf16[1,6]{1,0}, f16[1,6]{1,0}, f64[2]{0}, f8e4m3fn[3]{0})}

ENTRY main.5 {
  constant.1 = bf16[1,6]{1,0} constant({ { 1.5, -2.25, 0.1001, 3, 0.0009995, 300 } }), metadata={op_name="c1"}
  constant.2 = f16[1,6]{1,0} constant({ { 0.30005, 2, -1, 64992, 1.0014e-05, 7 } })
  constant.3 = f64[2]{0} constant({0.1, 1e+300})
  constant.4 = f8e4m3fn[3]{0} constant({nan, 7, -nan})
  ROOT tuple.5 = (bf16[1,6]{1,0}, f16[1,6]{1,0}, f64[2]{0}, f8e4m3fn[3]{0}) tuple(constant.1, constant.2, constant.3, constant.4)
}

"""

CONSTS_OUT = """HloModule c, entry_computation_layout={()->(f32[1,6]{1,0}, f32[1,6]{1,0}, f32[2]{0}, f32[3]{0})}

ENTRY main.5 {
  constant.6 = f32[1,6]{1,0} constant({ { 1.5, -2.25, 0.100097656, 3, 0.000999450684, 300 } })
  constant.7 = f32[1,6]{1,0} constant({ { 0.300048828, 2, -1, 64992, 1.00135803e-05, 7 } })
  constant.8 = f32[2]{0} constant({0.1, inf})
  constant.9 = f32[3]{0} constant({nan, 7, -nan})
  ROOT tuple.5 = (f32[1,6]{1,0}, f32[1,6]{1,0}, f32[2]{0}, f32[3]{0}) tuple(constant.6, constant.7, constant.8, constant.9)
}

"""


def test_upcast_constants_rebuilt_with_rounded_values() -> None:
    # bf16(0.1001) = 205/2048 = 0.10009765625; bf16(0.0009995) = 131/131072; f16(0.30005) =
    # 1229/4096; f16(1.0014e-05) = 168/2^24 = 1.00135803e-05; f64 1e300 overflows F32 to inf.
    assert run(CONSTS) == (True, CONSTS_OUT)


def test_upcast_elided_constant() -> None:
    src = next(p for p in SAMPLES if p.name == "elided_constant.hlo.txt").read_text()
    changed, out = run(src)
    assert changed
    assert "constant.5 = f32[16]{0} constant({...})" in out
    assert "ROOT add.3 = f32[16]{0} add(Arg_0.1, constant.5)" in out


def test_upcast_updates_entry_layout_and_signature() -> None:
    src = """HloModule m, entry_computation_layout={(bf16[2]{0}, s4[2]{0:E(4)})->bf16[2]{0}}

ENTRY %main.3 (p.1: bf16[2], q.2: s4[2]) -> bf16[2] {
  %p.1 = bf16[2]{0} parameter(0)
  %q.2 = s4[2]{0:E(4)} parameter(1)
  ROOT %n.3 = bf16[2]{0} negate(bf16[2]{0} %p.1)
}

"""
    want = """HloModule m, entry_computation_layout={(f32[2]{0}, s4[2]{0:E(4)})->f32[2]{0}}

ENTRY %main.3 (p.1: f32[2], q.2: s4[2]) -> f32[2] {
  %p.1 = f32[2]{0} parameter(0)
  %q.2 = s4[2]{0:E(4)} parameter(1)
  ROOT %n.3 = f32[2]{0} negate(f32[2]{0} %p.1)
}

"""
    assert run(src) == (True, want)


def test_upcast_retypes_in_place_everywhere_including_called_computations() -> None:
    text = data_file("jax-0.4.30", "while_bf16.hlo.txt").read_text()
    m = hlo.parse(text)
    names = [i.name for i in m.all_instructions() if i.opcode != "constant"]
    assert hlo.run_passes(m, ["upcast-all-to-fp32"])
    assert [i.name for i in m.all_instructions() if i.opcode != "constant"] == names
    for inst in m.all_instructions():
        for leaf in inst.shape.leaves():
            assert leaf.element_type not in (T.BF16, T.F16, T.F64)


def test_upcast_unchanged_module_prints_identical_bytes() -> None:
    for name in ("dot_s8_s32", "dot_f32", "int_arith", "elementwise_f32"):
        text = data_file("jax-0.10.2", f"{name}.hlo.txt").read_text()
        assert run(text) == (False, text)


@pytest.mark.parametrize("path", REAL_DATA, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("pass_name", ["neuron-int-matmul-downcast", "batch-norm-training-upcast",
                                       "upcast-all-to-fp32"])
def test_every_pass_on_real_data_unchanged_is_identical_changed_is_stable(path, pass_name) -> None:
    text = path.read_text()
    m = hlo.parse(text)
    changed = hlo.run_passes(m, [pass_name])
    out = hlo.to_text(m)
    if not changed:
        assert out == text
    else:
        assert out != text and hlo.to_text(hlo.parse(out)) == out


@pytest.mark.parametrize("name", ["f64_mix", "elementwise_lowp"])
def test_upcast_module_evaluates_in_f32_close_to_xla(name) -> None:
    import json

    import ml_dtypes
    import numpy as np

    from pyprecision.emulate import run_hlo

    path = data_file("jax-0.10.2", f"{name}.hlo.txt")
    z = np.load(data_file("jax-0.10.2", f"{name}.npz"))
    dtypes = json.loads(str(z["__dtypes__"]))

    def logical(key: str) -> np.ndarray:
        a = z[key]
        if a.dtype.kind in "ui" and hasattr(ml_dtypes, dtypes[key]):
            return a.view(getattr(ml_dtypes, dtypes[key]))
        return a

    m = hlo.parse(path.read_text())
    if "{...}" in path.read_text():
        pytest.skip("elided constant")
    assert hlo.run_passes(m, ["upcast-all-to-fp32"])
    args = []
    for p in m.entry.parameters:
        a = logical(f"in{p.parameter_number}")
        args.append(a.astype(np.float32) if p.shape.element_type == T.F32 else a)
    outs = run_hlo(m, args)
    n_out = len([k for k in z.files if k.startswith("out")])
    assert len(outs) == n_out
    for i, got in enumerate(outs):
        want = logical(f"out{i}")
        if np.issubdtype(want.dtype, np.integer) or want.dtype == np.bool_:
            assert np.array_equal(got, want)
        else:
            assert got.dtype == np.float32
            with np.errstate(over="ignore"):
                np.testing.assert_allclose(got, want.astype(np.float32), rtol=0.07, atol=0.07)


def test_upcast_removes_the_internal_fp8_quantization() -> None:
    import numpy as np

    from pyprecision.emulate import run_hlo

    z = np.load(data_file("jax-0.10.2", "fp8_mix.npz"))
    m = hlo.parse(data_file("jax-0.10.2", "fp8_mix.hlo.txt").read_text())
    assert hlo.run_passes(m, ["upcast-all-to-fp32"])
    f, g = z["in0"], z["in1"]
    outs = run_hlo(m, [f, g])
    assert all(o.dtype == np.float32 for o in outs)
    # fp8e4m3fn(f) * 0.5 + 1.25 became plain F32 arithmetic; same for the f8e5m2 branch
    assert np.array_equal(outs[0], f * np.float32(0.5) + np.float32(1.25))
    assert np.array_equal(outs[1], g + np.float32(3))
    assert np.array_equal(outs[2], f * g)
    import ml_dtypes

    xla = z["out0"].view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert not np.array_equal(xla, outs[0])       # XLA's fp8 result was quantized, ours is not


def test_upcast_tuple_constant_converts_only_its_float_leaves() -> None:
    src = """HloModule t

ENTRY main.2 {
  ROOT c.1 = (bf16[2]{0}, s32[], (f16[], f32[])) constant(( {0.1001, 2}, 7, (0.30005, 0.1) ))
}

"""
    changed, out = run(src)
    assert changed
    assert ("ROOT constant.3 = (f32[2]{0}, s32[], (f32[], f32[])) "
            "constant(( {0.100097656, 2}, 7, (0.300048828, 0.1) ))") in out
