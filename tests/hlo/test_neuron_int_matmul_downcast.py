"""NeuronIntMatmulDowncast (spec 004): integer dot → F32 dot between converts."""
from __future__ import annotations

import numpy as np
import pytest
from hlo_testdata import data_file

import pyprecision
from pyprecision import hlo
from pyprecision.hlo.passes import NeuronIntMatmulDowncast

SRC = """HloModule m, entry_computation_layout={(s8[2,3]{1,0}, s8[3,4]{1,0})->s32[2,4]{1,0}}

ENTRY main.4 {
  a.1 = s8[2,3]{1,0} parameter(0)
  b.2 = s8[3,4]{1,0} parameter(1)
  ROOT dot.3 = s32[2,4]{1,0} dot(a.1, b.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}, metadata={op_type="dot_general" op_name="jit(f)/dot_general" source_file="f.py" source_line=3}
}

"""

MD = ('metadata={op_type="dot_general" op_name="jit(f)/dot_general Downcast for int support " '
      'source_file="f.py" source_line=3}')
LOCK = 'frontend_attributes={auto_cast="none"}'
EXPECTED = f"""HloModule m, entry_computation_layout={{(s8[2,3]{{1,0}}, s8[3,4]{{1,0}})->s32[2,4]{{1,0}}}}

ENTRY main.4 {{
  a.1 = s8[2,3]{{1,0}} parameter(0)
  b.2 = s8[3,4]{{1,0}} parameter(1)
  convert.5 = f32[2,3]{{1,0}} convert(a.1), {LOCK}, {MD}
  convert.6 = f32[3,4]{{1,0}} convert(b.2), {LOCK}, {MD}
  dot.7 = f32[2,4]{{1,0}} dot(convert.5, convert.6), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, operand_precision={{highest,highest}}, {LOCK}, {MD}
  ROOT convert.8 = s32[2,4]{{1,0}} convert(dot.7), {LOCK}, {MD}
}}

"""


def run(text: str) -> tuple[bool, str]:
    m = hlo.parse(text)
    changed = hlo.run_passes(m, ["neuron-int-matmul-downcast"])
    return changed, hlo.to_text(m)


def test_nimd_rewrite_text() -> None:
    assert run(SRC) == (True, EXPECTED)


def test_nimd_is_a_registered_frozen_dataclass() -> None:
    p = hlo.get_pass("neuron-int-matmul-downcast")
    assert isinstance(p, NeuronIntMatmulDowncast)
    with pytest.raises(Exception):
        p.x = 1  # type: ignore[attr-defined]
    assert "convert" in (NeuronIntMatmulDowncast.__doc__ or "")


def test_nimd_CORRECTION_B25_1_downcast_widens_to_f32_and_never_narrows_ints() -> None:
    m = hlo.parse(SRC)
    NeuronIntMatmulDowncast().run(m)
    types = {i.shape.element_type for i in m.entry.instructions}
    assert hlo.PrimitiveType.F32 in types
    # no integer-to-smaller-integer step anywhere: integers only at the parameters and the result
    ints = [i for i in m.entry.instructions if hlo.is_integer(i.shape.element_type)]
    assert [i.opcode for i in ints] == ["parameter", "parameter", "convert"]
    assert m.entry.root.shape.element_type == hlo.PrimitiveType.S32


def test_nimd_QUIRK_auto_cast_none_lock_and_note_on_every_new_op() -> None:
    m = hlo.parse(SRC)
    hlo.run_passes(m, ["neuron-int-matmul-downcast"])
    new = [i for i in m.entry.instructions if i.opcode != "parameter"]
    assert len(new) == 4
    for inst in new:
        assert inst.frontend_attributes == {"auto_cast": "none"}
        assert inst.metadata["op_name"] == "jit(f)/dot_general Downcast for int support "
        assert inst.metadata["source_file"] == "f.py"


def test_nimd_note_without_metadata() -> None:
    src = SRC.replace(', metadata={op_type="dot_general" op_name="jit(f)/dot_general" '
                      'source_file="f.py" source_line=3}', "")
    _, out = run(src)
    assert out.count('metadata={op_name=" Downcast for int support "}') == 4


def test_nimd_NOTE_gate_is_the_output_shape_not_the_operands() -> None:
    # s8 x s8 -> f32: output not integer, untouched; s8 x s8 -> s8: integer output, rewritten
    float_out = SRC.replace("ROOT dot.3 = s32[2,4]", "ROOT dot.3 = f32[2,4]").replace(
        "->s32[2,4]", "->f32[2,4]")
    assert run(float_out) == (False, float_out)
    s8_out = SRC.replace("ROOT dot.3 = s32[2,4]", "ROOT dot.3 = s8[2,4]").replace(
        "->s32[2,4]", "->s8[2,4]")
    changed, out = run(s8_out)
    assert changed and "ROOT convert.8 = s8[2,4]{1,0} convert(dot.7)" in out


def test_nimd_non_integer_operand_is_fed_unconverted() -> None:
    src = SRC.replace("b.2 = s8[3,4]{1,0} parameter(1)", "b.2 = bf16[3,4]{1,0} parameter(1)")
    src = src.replace("s8[3,4]{1,0})->", "bf16[3,4]{1,0})->")
    _, out = run(src)
    assert "convert.6 = f32[2,4]{1,0}" not in out
    assert "dot.6 = f32[2,4]{1,0} dot(convert.5, b.2)" in out
    assert out.count("convert(") == 2


def test_nimd_unchanged_module_prints_identical_bytes() -> None:
    src = SRC.replace("s8[", "f32[").replace("s32[", "f32[")
    assert run(src) == (False, src)


def test_nimd_batched_dot_general_keeps_dimension_numbers() -> None:
    text = data_file("jax-0.10.2", "dot_general_batched_s8.hlo.txt").read_text()
    changed, out = run(text)
    assert changed
    assert ("dot.4 = f32[2,3,4]{2,1,0} dot(convert.2, convert.3), lhs_batch_dims={0}, "
            "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, "
            'frontend_attributes={auto_cast="none"}, '
            'metadata={op_name=" Downcast for int support "}') in out
    assert hlo.to_text(hlo.parse(out)) == out


def _eval(module: hlo.HloModule, args: list[np.ndarray]) -> list[np.ndarray]:
    from pyprecision.emulate import run_hlo

    return run_hlo(module, args)


@pytest.mark.parametrize("version", ["jax-0.10.2", "jax-0.4.30"])
@pytest.mark.parametrize("name", ["dot_s8_s32", "dot_s32", "dot_general_batched_s8"])
def test_nimd_rewritten_module_gives_xla_integer_results_below_2_24(version, name) -> None:
    path = data_file(version, f"{name}.hlo.txt")
    z = np.load(data_file(version, f"{name}.npz"))
    m = hlo.parse(path.read_text())
    assert hlo.run_passes(m, ["neuron-int-matmul-downcast"])
    out = _eval(m, [z["in0"], z["in1"]])
    assert np.array_equal(out[0], z["out0"])


def test_nimd_GOTCHA_no_overflow_guard_f32_route_loses_low_bits() -> None:
    m = hlo.parse(SRC.replace("s8[", "s32["))
    hlo.run_passes(m, ["neuron-int-matmul-downcast"])
    assert {i.opcode for i in m.entry.instructions} == {"parameter", "convert", "dot"}
    a = np.array([[4097, 4097, 4097], [1, 2, 3]], dtype=np.int32)
    b = np.array([[4099, 1, 1, 1], [4099, 1, 1, 1], [1, 1, 1, 1]], dtype=np.int32)
    got = _eval(m, [a, b])[0]
    exact = a.astype(np.int64) @ b.astype(np.int64)
    expected_f32_route = pyprecision.int_dot(a, b, out_dtype=np.int32)
    assert np.array_equal(got, expected_f32_route)
    assert exact[0, 0] > 2**24 and got[0, 0] != exact[0, 0]   # low bits lost, silently
    assert np.array_equal(got[1], exact[1])


@pytest.mark.parametrize("version", ["jax-0.10.2", "jax-0.4.30"])
def test_nimd_GOTCHA_narrow_int_result_saturates_where_xla_wraps(version) -> None:
    # s8 x s8 -> s8: XLA's integer dot wraps modulo 2^8; the F32 route ends in XLA's float->int
    # convert, which saturates. Same below 2^24, different once the s8 result overflows.
    z = np.load(data_file(version, "dot_s8_s8.npz"))
    m = hlo.parse(data_file(version, "dot_s8_s8.hlo.txt").read_text())
    hlo.run_passes(m, ["neuron-int-matmul-downcast"])
    got = _eval(m, [z["in0"], z["in1"]])[0]
    exact = z["in0"].astype(np.int64) @ z["in1"].astype(np.int64)
    assert np.array_equal(z["out0"], exact.astype(np.int8))              # XLA: wraparound
    assert np.array_equal(got, np.clip(exact, -128, 127).astype(np.int8))  # F32 route: saturate
    assert not np.array_equal(got, z["out0"])
