"""run_ir on the examples and on small programs, against independent numpy / hand-computed results."""

from __future__ import annotations

import pathlib

import ml_dtypes
import numpy as np
import pytest

from pyprecision import ir
from pyprecision.emulate import run_ir

ROOT = pathlib.Path(__file__).resolve().parents[2]


def example(name: str) -> ir.Module:
    return ir.parse((ROOT / "examples" / f"{name}.pir").read_text())


def seq_matmul_f32(s: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Reference: r[i,j] = Σ_k s[k,i]·m[k,j], element by element, fp32 products and fp32 running sum."""
    K, M = s.shape
    N = m.shape[1]
    out = np.zeros((M, N), dtype=np.float32)
    for i in range(M):
        for j in range(N):
            acc = np.float32(0.0)
            for k in range(K):
                acc = np.float32(acc + np.float32(np.float32(s[k, i]) * np.float32(m[k, j])))
            out[i, j] = acc
    return out


def run1(text: str, **inputs):
    return run_ir(ir.parse(text), inputs)


def test_mlp():
    rng = np.random.default_rng(0)
    xT = rng.standard_normal((4, 2)).astype(np.float32)
    m = example("mlp")
    w = m.main.get_tensor("w").value
    want = np.maximum(seq_matmul_f32(xT, w) + np.float32(0.25), np.float32(0))
    got = run_ir(m, {"xT": xT})
    assert set(got) == {"y"} and got["y"].dtype == np.float32
    np.testing.assert_array_equal(got["y"], want)


def test_transpose_matmul():
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    m = example("transpose_matmul")
    w = m.main.get_tensor("w").value
    np.testing.assert_array_equal(run_ir(m, {"x": x})["y"], seq_matmul_f32(x.T, w))


def test_masked_select():
    rng = np.random.default_rng(2)
    x, t = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
    got = run_ir(example("masked_select"), {"x": x, "t": t})["out"]
    np.testing.assert_array_equal(got, np.where(x > t, x * np.float32(2), np.float32(0)))


def test_index_path_gather_and_scatter():
    ids = np.array([0, 3, 1], dtype=np.int32)
    table = np.arange(32, dtype=np.float32).reshape(8, 4)
    got = run_ir(example("index_path"), {"ids": ids, "table": table})
    rows = ids * 2 + 1
    np.testing.assert_array_equal(got["out"], table[rows])
    want = np.zeros_like(table)
    want[rows] = table[rows]
    np.testing.assert_array_equal(got["scatter"], want)


def test_opaque_softmax_and_call():
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    sm = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    np.testing.assert_array_equal(
        run_ir(example("opaque_call"), {"x": x})["y"], sm * np.float32(0.5)
    )


def test_broadcast_load_bf16():
    rng = np.random.default_rng(4)
    x = (rng.integers(-16, 16, (4, 8)) / 8).astype(
        ml_dtypes.bfloat16
    )  # differences are exact in fp32
    row = (rng.integers(-16, 16, (1, 8)) / 8).astype(np.float32)
    got = run_ir(example("broadcast_load"), {"x": x, "row": row})["y"]
    s = (x.astype(np.float32) - row).astype(ml_dtypes.bfloat16)
    want = np.exp(s.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_generated_program_small():
    import importlib.util

    spec = importlib.util.spec_from_file_location("g", ROOT / "scripts" / "gen_big_program.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)  # type: ignore[union-attr]
    m = ir.parse(gen.generate_program(33))  # three layers
    f = m.main
    x = np.random.default_rng(5).standard_normal((16, 8)).astype(np.float32)
    act = x
    for i in range(3):
        w = f.get_tensor(f"w{i}").value
        h = seq_matmul_f32(act, w) + np.float32(0.125)
        th = np.tanh(h.astype(np.float64)).astype(np.float32)
        s = np.where(th > 0, th, np.float32(0))
        act = seq_matmul_f32(s, np.eye(8, dtype=np.float32))
    np.testing.assert_array_equal(run_ir(m, {"x": x})["y"], act)


# -- rounding semantics ---------------------------------------------------------------------------------
ADD = """func @main {{
  tensor @a : input float32[1]
  tensor @b : input float32[1]
  tensor @y : output bfloat16[1]
  %a = affine_load @a : float32[1]
  %b = affine_load @b : float32[1]
  %s = add %a, %b : {dt}[1]
  {tail}
}}
"""


def test_retype_turns_two_roundings_into_one():
    a = np.array([1.0], np.float32)
    b = np.array([2.0**-8 + 2.0**-30], np.float32)  # exact sum 1 + 2^-8 + 2^-30
    two = run1(
        ADD.format(dt="float32", tail="%c = cast %s : bfloat16[1]\n  affine_store %c, @y"), a=a, b=b
    )
    one = run1(ADD.format(dt="bfloat16", tail="affine_store %s, @y"), a=a, b=b)
    assert float(two["y"][0]) == 1.0  # fp32 rounds to 1 + 2^-8, a bf16 tie, even → 1.0
    assert float(one["y"][0]) == 1.0 + 2.0**-7  # above the tie → rounds up


def test_matmul_sequential_fp32_no_fma():
    text = """func @main {
  tensor @s : input float32[2,1]
  tensor @m : input float32[2,1]
  tensor @y : output float32[1,1]
  %s = affine_load @s : float32[2,1]
  %m = affine_load @m : float32[2,1]
  %p = matmul %s, %m : float32[1,1]
  affine_store %p, @y
}
"""
    e = 1.0 + 2.0**-12
    got = run1(text, s=np.array([[e], [-1.0]], np.float32), m=np.array([[e], [1.0]], np.float32))
    assert float(got["y"][0, 0]) == 2.0**-11  # FMA would keep the 2^-24 of e*e
    got = run1(
        text.replace("[2,1]", "[3,1]"),
        s=np.array([[1e8], [1.0], [-1e8]], np.float32),
        m=np.ones((3, 1), np.float32),
    )
    assert float(got["y"][0, 0]) == 0.0  # (1e8 + 1) rounds back to 1e8 in fp32


def test_matmul_bf16_result_rounds_the_fp32_accumulator():
    text = """func @main {
  tensor @s : input bfloat16[1,1]
  tensor @m : input bfloat16[1,1]
  tensor @y : output bfloat16[1,1]
  %s = affine_load @s : bfloat16[1,1]
  %m = affine_load @m : bfloat16[1,1]
  %p = matmul %s, %m : bfloat16[1,1]
  affine_store %p, @y
}
"""
    v = np.array([[1.0 + 2.0**-7]], ml_dtypes.bfloat16)  # square = 1 + 2^-6 + 2^-14 → bf16 1 + 2^-6
    assert float(run1(text, s=v, m=v)["y"][0, 0]) == 1.0 + 2.0**-6


CAST = """func @main {{
  tensor @x : input {src}[{n}]
  tensor @y : output {dst}[{n}]
  %x = affine_load @x : {src}[{n}]
  %c = {op} %x : {dst}[{n}]
  affine_store %c, @y
}}
"""


def cast(x, src, dst, op="cast"):
    x = np.asarray(x)
    return run1(CAST.format(src=src, dst=dst, n=x.size, op=op), x=x)["y"]


def test_casts_follow_neuron_defaults():
    assert cast(np.array([1000.0, -1e9], np.float32), "float32", "float8e4").astype(
        np.float32
    ).tolist() == [240.0, -240.0]
    assert cast(np.array([1e6], np.float32), "float32", "float8_e5m2").astype(
        np.float32
    ).tolist() == [57344.0]
    assert np.isinf(
        cast(np.array([1e6], np.float32), "float32", "float16")[0]
    )  # fp16: no saturation
    assert (
        cast(np.array([1.0 + 2.0**-8], np.float32), "float32", "bfloat16").astype(np.float32)[0]
        == 1.0
    )  # RNE tie
    r = cast(
        np.array([1.0 + 2.0**-11 + 2.0**-20, 1.0 + 2.0**-11], np.float32), "float32", "float32r"
    )
    assert r.dtype == np.float32 and r.tolist() == [
        1.0 + 2.0**-10,
        1.0,
    ]  # 10 mantissa bits; tie → even


def test_float_to_int_and_int_to_float_casts():
    got = cast(np.array([300.7, -2.5, np.nan, -1e10, 1.9], np.float32), "float32", "int8")
    assert got.dtype == np.int8 and got.tolist() == [127, -2, 0, -128, 1]
    big = np.array([2**24 + 1, -(2**31)], np.int32)
    assert cast(big, "int32", "float32").tolist() == [2.0**24, -(2.0**31)]
    assert cast(np.array([257], np.int32), "int32", "bfloat16").astype(np.float32).tolist() == [
        256.0
    ]


def test_int_to_int_cast_wraps():
    assert cast(np.array([300, -129], np.int32), "int32", "int8").tolist() == [44, 127]
    assert cast(np.array([-1], np.int32), "int32", "uint16").tolist() == [65535]


def test_bitcast():
    got = cast(np.array([1.0, -2.0], np.float32), "float32", "int32", op="bitcast")
    assert got.tolist() == [0x3F800000, np.array(-2.0, np.float32).view(np.int32)]


INT = """func @main {{
  tensor @a : input {dt}[{n}]
  tensor @b : input {dt}[{n}]
  tensor @y : output {out}[{n}]
  %a = affine_load @a : {dt}[{n}]
  %b = affine_load @b : {dt}[{n}]
  %r = {op} %a, %b : {out}[{n}]
  affine_store %r, @y
}}
"""


def intop(op, a, b, dt, out=None):
    a, b = np.asarray(a, dtype=dt), np.asarray(b, dtype=dt)
    return run1(INT.format(op=op, dt=dt, out=out or dt, n=a.size), a=a, b=b)["y"].tolist()


def test_integer_arithmetic_wraps():
    assert intop("add", [100, -100], [100, -100], "int8") == [-56, 56]
    assert intop("sub", [0], [1], "uint8") == [255]
    assert intop("mul", [65536], [65536], "int32") == [0]
    assert intop("mul", [2**62], [4], "int64") == [0]
    assert intop("add", [2**64 - 1], [2], "uint64") == [1]
    assert intop("div", [-7, 7, -7], [2, -2, -2], "int32") == [-3, -3, 3]  # truncates toward zero
    assert intop("max", [2**63], [1], "uint64") == [2**63]
    assert intop("xor", [-1], [5], "int16") == [-6]
    assert intop("cmp_lt", [-1, 3], [0, 3], "int32", "uint8") == [1, 0]


def test_float_comparisons_and_nan():
    got = intop("cmp_ne", [np.nan, 1.0], [np.nan, 1.0], "float32", "uint8")
    assert got == [1, 0]
    assert intop("cmp_eq", [np.nan, -0.0], [np.nan, 0.0], "float32", "uint8") == [0, 1]


def test_scalar_operand_is_rounded_to_its_dtype():
    text = """func @main {
  tensor @x : input float32[1]
  tensor @y : output float32[1]
  %x = affine_load @x : float32[1]
  %r = add %x, bfloat16 0.1 : float32[1]
  affine_store %r, @y
}
"""
    got = run1(text, x=np.zeros(1, np.float32))["y"]
    assert got[0] == np.float32(ml_dtypes.bfloat16(0.1))


def test_dma_cast_on_load_and_store():
    text = """func @main {
  tensor @x : input float32[2]
  tensor @y : output float16[2]
  %x = affine_load @x : bfloat16[2]
  affine_store %x, @y
}
"""
    got = run1(text, x=np.array([1.0 + 2.0**-8 + 2.0**-20, 3.0], np.float32))["y"]
    assert got.dtype == np.float16 and got.tolist() == [1.0 + 2.0**-7, 3.0]


def test_reinterpreted_load_views_bits():
    text = """func @main {
  tensor @q : input float8e4m3fn[2]
  tensor @y : output float32[2]
  %q = affine_load @q as float8e4 : float8e4[2]
  %f = cast %q : float32[2]
  affine_store %f, @y
}
"""
    q = np.array([1.0, 256.0], ml_dtypes.float8_e4m3fn)  # 0x38, 0x78
    got = run1(text, q=q)["y"]
    assert got[0] == 1.0 and np.isposinf(
        got[1]
    )  # 0x78 is +inf in float8_e4m3; same-dtype steps keep it


def test_same_dtype_steps_are_identities_but_fp8_arithmetic_saturates():
    text = """func @main {
  tensor @q : input float8e4[2]
  tensor @y : output float8e4[2]
  tensor @z : output float8e4[2]
  %q = affine_load @q : float8e4[2]
  %c = cast %q : float8e4[2]
  %k = copy %c : float8e4[2]
  affine_store %k, @y
  %a = add %q, float8e4 0.0 : float8e4[2]
  affine_store %a, @z
}
"""
    q = np.array([np.inf, -np.inf], ml_dtypes.float8_e4m3)
    got = run1(text, q=q)
    assert np.isposinf(got["y"][0].astype(np.float32)) and np.isneginf(
        got["y"][1].astype(np.float32)
    )
    assert got["z"].astype(np.float32).tolist() == [
        240.0,
        -240.0,
    ]  # the engine's saturating output conversion


def test_memcpy_and_generic_store_last_row_wins():
    text = """func @main {
  tensor @x : input float32[3,2]
  tensor @i : input int32[3]
  tensor @c : output bfloat16[3,2]
  tensor @s : output float32[4,2]
  offloaded_memcpy @x -> @c
  %x = affine_load @x : float32[3,2]
  %i = affine_load @i : int32[3]
  generic_store %x, @s[%i]
}
"""
    x = np.array([[1.0, 2.0], [3.0, 4.0], [1.0 / 3, 6.0]], np.float32)
    got = run1(text, x=x, i=np.array([1, 3, 1], np.int32))
    np.testing.assert_array_equal(got["c"], x.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(got["s"], np.array([[0, 0], x[2], [0, 0], x[1]], np.float32))


def test_input_rounded_to_declared_dtype_and_unwritten_output_is_zero():
    text = """func @main {
  tensor @x : input bfloat16[2]
  tensor @y : output float32[2]
  tensor @z : output int32[1]
  %x = affine_load @x : float32[2]
  affine_store %x, @y
}
"""
    got = run1(text, x=np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8], np.float64))
    assert got["y"].tolist() == [1.0, 1.0 + 2.0**-6]
    assert got["z"].dtype == np.int32 and got["z"].tolist() == [0]


def test_function_argument_selects_the_function():
    m = example("opaque_call")
    x = np.ones((2, 4), np.float32)
    assert run_ir(m, {"a": x}, function="scale")["r"].tolist() == (x * 0.5).tolist()


@pytest.mark.parametrize("name", ["mlp", "masked_select", "transpose_matmul"])
def test_run_ir_does_not_mutate_the_module(name):
    m = example(name)
    before = ir.to_text(m)
    f = m.main
    run_ir(m, {t.name: np.ones(t.shape, np.float32) for t in f.inputs})
    assert ir.to_text(m) == before

