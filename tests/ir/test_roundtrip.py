"""print∘parse is the identity on printed text: examples, the generated program, edge literals, random programs."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings

from pyprecision import ir

from .strategies import modules

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.pir"))


def _gen():
    spec = importlib.util.spec_from_file_location(
        "gen_big_program", ROOT / "scripts" / "gen_big_program.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def roundtrip(text: str) -> str:
    printed = ir.to_text(ir.parse(text))
    assert ir.to_text(ir.parse(printed)) == printed
    return printed


def test_examples_folder_has_the_required_programs():
    names = {p.stem for p in EXAMPLES}
    assert {
        "mlp",
        "transpose_matmul",
        "masked_select",
        "index_path",
        "opaque_call",
        "broadcast_load",
        "big_10k",
    } <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_roundtrips(path):
    roundtrip(path.read_text())


def test_printed_form_of_an_example_is_stable_and_canonical():
    text = (ROOT / "examples" / "mlp.pir").read_text()
    printed = roundtrip(text)
    assert "//" not in printed
    assert printed.startswith("func @main {\n  tensor @xT : input float32[4,2]\n")
    assert "  %h = add %mm, %b : float32[2,3]\n" in printed


def test_generated_program_size_and_committed_copy():
    gen = _gen()
    text = gen.generate_program(10_000)
    assert (ROOT / "examples" / "big_10k.pir").read_text() == text
    m = ir.parse(text)
    assert sum(1 for _ in m.main.instructions()) >= 10_000
    assert ir.to_text(m) == text


@pytest.mark.parametrize("n", [1, 11, 12, 500])
def test_generator_size_parameter(n):
    m = ir.parse(_gen().generate_program(n))
    count = sum(1 for _ in m.main.instructions())
    assert n <= count < n + 11


EDGE = """\
func @main {
  tensor @x : input float32[2,2]
  tensor @i : input int64[2]
  tensor @q : input float8e4m3fn[2]
  tensor @wb : const bfloat16[2] = dense "gD8AwA=="
  tensor @wi : const int16[2] = dense "AID/fw=="
  tensor @s8 : const float8_e5m2[1,2] = splat -0.0
  tensor @su : const uint64[2] = splat 18446744073709551615
  tensor @y : output float32[2,2]
  tensor @g : internal int32[2]
^entry:
  %x = affine_load @x : float32[2,2]
  %a = add %x, float32 -0.0 : float32[2,2]
  %b = mul float32 1e-05, %a : float32[2,2]
  %c = max %b, float32 inf : float32[2,2]
  %d = min %c, float32 nan : float32[2,2]
  %e = sub %d, float32 -inf : bfloat16[2,2]
  %i = affine_load @i : int64[2]
  %j = add %i, int64 -9223372036854775808 : int64[2]
  %k = cast %j : int32[2]
  tensor_scalar_gep.mul %k, int32 3 -> @g {allowed = [int32, float32]}
  %q = affine_load @q as float8e4 : float8e4[2]
  %bits = bitcast %e : int16[2,2]
^next:
  call @f ins(@x) outs(@y) {call_ins = [@x], call_outs = [@y]}
  opaque "copy" ins(@x) outs(@y) {call_outs = [@y]}
  offloaded_memcpy @x -> @y
}

func @f {
  tensor @a : input float32[2,2]
  tensor @r : output float32[2,2]
^bb0:
}
"""


def test_edge_literals_roundtrip_exactly():
    printed = roundtrip(EDGE)
    assert printed == EDGE
    m = ir.parse(EDGE)
    f = m.main
    assert f.get_tensor("wb").value.tolist() == [1.0, -2.0]
    assert f.get_tensor("wi").value.tolist() == [-32768, 32767]
    assert f.get_tensor("su").value == 2**64 - 1
    assert str(f.get_tensor("s8").value) == "-0.0"


def test_aliases_are_accepted_and_printed_canonically():
    text = """func @main {
  tensor @x : input bf16[2]
  tensor @y : output fp8e5[2]
  %x = affine_load @x : fp32[2]
  %c = cast %x : tf32[2]
  %d = cast %c : fp8e5[2]
  affine_store %d, @y
}
"""
    printed = roundtrip(text)
    assert "input bfloat16[2]" in printed and "output float8_e5m2[2]" in printed
    assert ": float32r[2]" in printed and "^bb0:" in printed


def test_dense_payload_is_little_endian_element_bytes():
    f = ir.Function("main")
    w = np.array([[1.5, -2.0]], dtype=np.float32)
    f.add_tensor(ir.Tensor("w", (1, 2), "float32", "const", w))
    text = ir.to_text(ir.Module([f]))
    import base64

    assert base64.b64encode(w.astype("<f4").tobytes()).decode() in text
    back = ir.parse(text).main.get_tensor("w").value
    assert back.dtype == np.float32 and np.array_equal(back, w)


@settings(max_examples=150, deadline=None)
@given(modules())
def test_random_programs_roundtrip(m):
    text = ir.to_text(m)
    assert ir.to_text(ir.parse(text)) == text


@pytest.mark.slow
def test_100k_instruction_program_roundtrips_and_verifies():
    text = _gen().generate_program(100_000)
    m = ir.parse(text)
    assert sum(1 for _ in m.main.instructions()) >= 100_000
    assert ir.to_text(m) == text
