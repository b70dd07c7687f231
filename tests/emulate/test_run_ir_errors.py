"""run_ir input validation (EmulationError with a clear message) and random-program properties."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.emulate import run_ir
from pyprecision.errors import EmulationError, VerifyError

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "ir_strategies", ROOT / "tests" / "ir" / "strategies.py"
)
strategies = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("ir_strategies", strategies)
_spec.loader.exec_module(strategies)  # type: ignore[union-attr]

PROG = """func @main {
  tensor @x : input float32[2,3]
  tensor @i : input int8[2]
  tensor @y : output float32[2,3]
  %x = affine_load @x : float32[2,3]
  %i = affine_load @i : int8[2]
  %g = generic_load @x[%i] : float32[2,3]
  affine_store %g, @y
}
"""
X = np.zeros((2, 3), np.float32)
I = np.zeros(2, np.int8)


@pytest.mark.parametrize(
    "inputs,frag",
    [
        ({"i": I}, "missing input(s) for @main: x"),
        ({"x": X, "i": I, "z": X}, "unknown input(s) z for @main"),
        (
            {"x": np.zeros((3, 2), np.float32), "i": I},
            "input @x: shape [3, 2] does not match declared [2, 3]",
        ),
        (
            {"x": X.astype(np.int32), "i": I},
            "input @x: float32 tensor needs a float array, got int32",
        ),
        (
            {"x": X, "i": I.astype(np.float32)},
            "input @i: int8 tensor needs an integer array, got float32",
        ),
        (
            {"x": X, "i": np.array([0, 300], np.int32)},
            "input @i: values outside the int8 range [-128, 127]",
        ),
        ({"x": X, "i": np.array([0, 2], np.int8)}, "generic_load @x: index 2 out of range [0, 2)"),
        (
            {"x": X, "i": np.array([-1, 0], np.int8)},
            "generic_load @x: index -1 out of range [0, 2)",
        ),
        ({"x": X.astype(str), "i": I}, "needs a float array"),
    ],
)
def test_bad_inputs(inputs, frag):
    with pytest.raises(EmulationError) as ei:
        run_ir(ir.parse(PROG), inputs)
    assert frag in str(ei.value)


def test_unknown_function_and_empty_module():
    with pytest.raises(EmulationError, match="no function @nope"):
        run_ir(ir.parse(PROG), {}, function="nope")
    with pytest.raises(EmulationError, match="module has no functions"):
        run_ir(ir.Module(), {})


def test_unknown_opaque_kernel():
    m = ir.parse(
        "func @main {\n  tensor @x : input float32[1]\n  tensor @y : output float32[1]\n"
        '  opaque "fft" ins(@x) outs(@y)\n}\n'
    )
    with pytest.raises(
        EmulationError, match="opaque kernel 'fft' with 1 ins / 1 outs is not known"
    ):
        run_ir(m, {"x": np.zeros(1, np.float32)})


@pytest.mark.parametrize("dt,kind,x,want", [
    ("int32", "div", 7, -1), ("int32", "rem", 7, 7), ("uint8", "div", 7, 255),
    ("uint8", "rem", 7, 7), ("int8", "div", -128, -1),
])
def test_integer_division_by_zero_is_xla_s(dt, kind, x, want):
    """x / 0 = -1 (all ones unsigned), x % 0 = x, as XLA defines them (decision OP6)."""
    m = ir.parse(
        f"func @main {{\n  tensor @x : input {dt}[1]\n  tensor @y : output {dt}[1]\n"
        f"  %x = affine_load @x : {dt}[1]\n  %d = {kind} %x, {dt} 0 : {dt}[1]\n"
        "  affine_store %d, @y\n}\n"
    )
    got = run_ir(m, {"x": np.array([x], np.dtype(dt))})
    assert got["y"].tolist() == [want]


def test_broken_module_is_rejected_by_the_verifier():
    m = ir.parse(PROG)
    f = m.main
    ir.make_cast(f.entry.first.result, "bfloat16")  # dangling use
    with pytest.raises(VerifyError):
        run_ir(m, {"x": X, "i": I})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_programs_run_and_return_declared_outputs(data):
    m = data.draw(strategies.modules())
    f = m.main
    inputs = data.draw(strategies.inputs_for(f))
    with np.errstate(all="ignore"):
        out = run_ir(m, inputs)
    assert list(out) == [t.name for t in f.outputs]
    for t in f.outputs:
        assert out[t.name].shape == t.shape and out[t.name].dtype == t.dtype.np_dtype
    # determinism, and the printed program computes the same thing
    again = run_ir(ir.parse(ir.to_text(m)), inputs)
    for k in out:
        np.testing.assert_array_equal(out[k], again[k])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_inserting_same_dtype_casts_never_changes_outputs(data):
    """An identity cast (same dtype) is a no-op, so cast elimination may remove it freely."""
    m = data.draw(strategies.modules())
    f = m.main
    inputs = data.draw(strategies.inputs_for(f))
    before = run_ir(m, inputs)
    b = ir.IRBuilder(f)
    for v in list(f.values()):
        c = b.cast_to(v, v.dtype)
        v.replace_all_uses_with_except(c, c)
    ir.verify(m)
    after = run_ir(m, inputs)
    for k in before:
        np.testing.assert_array_equal(before[k].view(np.uint8), after[k].view(np.uint8))
