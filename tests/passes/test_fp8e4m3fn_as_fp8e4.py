"""fp8e4m3fn-as-fp8e4 (spec 003 §6.3, CAST_SEMANTICS.md §7, decision P16): the unsafe relabelling is a
bit view, so run_ir shows the change of meaning — 0x78 becomes +inf, 0x79–0x7e NaN."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pyprecision import ir
from pyprecision.emulate import run_ir
from pyprecision.frontend import parse_flags
from pyprecision.passes import PASSES, Fp8e4m3fnAsFp8e4, pipeline_pass_names, run_pipeline

from .helpers import assert_unchanged, canon, parse, run

# codes 0x38 (1.0), 0x78 (256 in e4m3fn), 0x79 (288), 0x7e (448); base64 of those bytes: OHh5fg==
PROGRAM = """
func @main {
  tensor @q : input float8e4m3fn[4]
  tensor @w : const float8e4m3fn[4] = dense "OHh5fg=="
  tensor @s : const float8e4m3fn[4] = splat 256.0
  tensor @t : internal float8e4m3fn[4]
  tensor @yq : output float32[4]
  tensor @yw : output float32[4]
  tensor @ys : output float32[4]
  tensor @z : output float8e4m3fn[4]
^bb0:
  %q = affine_load @q : float8e4m3fn[4]
  %qf = cast %q : float32[4]
  affine_store %qf, @yq
  %w = sb_atom_load @w : float8e4m3fn[4]
  %wf = cast %w : float32[4]
  affine_store %wf, @yw
  %s = affine_load @s : float8e4m3fn[4]
  %m = max %s, float8e4m3fn 448.0 : float8e4m3fn[4]
  affine_store %m, @t
  %t = affine_load @t : float8e4m3fn[4]
  %tf = cast %t : float32[4]
  affine_store %tf, @ys
  %r = cast %wf : float8e4m3fn[4]
  affine_store %r, @z
}
"""

CODES = np.array([0x38, 0x78, 0x79, 0x7E], np.uint8)


def _inputs() -> dict[str, np.ndarray]:
    return {"q": CODES.view(ml_dtypes.float8_e4m3fn)}


def test_rewrite_text() -> None:
    changed, out = run(Fp8e4m3fnAsFp8e4(), PROGRAM)
    assert changed
    # boundary tensors keep the host's dtype; their accesses view the bytes as fp8e4
    assert "tensor @q : input float8e4m3fn[4]" in out
    assert "%q = affine_load @q as float8e4 : float8e4[4]" in out
    assert "tensor @z : output float8e4m3fn[4]" in out
    assert "affine_store %r, @z as float8e4" in out
    # a const keeps its bytes under the new label; a splat's code is re-read (256 = 0x78 → inf)
    assert 'tensor @w : const float8e4[4] = dense "OHh5fg=="' in out
    assert "tensor @s : const float8e4[4] = splat inf" in out
    assert "tensor @t : internal float8e4[4]" in out
    # an immediate: 448 = 0x7e → NaN; casts to e4m3fn now produce fp8e4
    assert "max %s, float8e4 nan : float8e4[4]" in out
    assert "%r = cast %wf : float8e4[4]" in out
    assert "float8e4m3fn" not in out.replace("input float8e4m3fn", "").replace(
        "output float8e4m3fn", ""
    )


def test_run_ir_shows_the_change_of_meaning() -> None:
    m = parse(PROGRAM)
    before = run_ir(m, _inputs())
    np.testing.assert_array_equal(before["yq"], [1.0, 256.0, 288.0, 448.0])
    np.testing.assert_array_equal(before["yw"], [1.0, 256.0, 288.0, 448.0])
    np.testing.assert_array_equal(before["ys"], [448.0] * 4)
    assert Fp8e4m3fnAsFp8e4().run(m)
    after = run_ir(m, _inputs())
    for name in ("yq", "yw"):
        got = after[name]
        assert got[0] == 1.0 and got[1] == np.inf, name  # 0x78 → +inf
        assert np.isnan(got[2]) and np.isnan(got[3]), name  # 0x79, 0x7e → NaN
    assert np.isnan(after["ys"]).all()  # max(inf, NaN) is NaN
    # the output is written as fp8e4 codes (+inf saturates to 240 = 0x77, the Neuron default for fp8,
    # CAST_SEMANTICS.md §3; NaN is e4's 0x7c) and handed back under the host's e4m3fn label, which
    # reads the NaN code 0x7c as 384 (2^8 × 1.5)
    z = after["z"]
    assert z.dtype == ml_dtypes.float8_e4m3fn
    assert z.view(np.uint8).tolist() == [0x38, 0x77, 0x7C, 0x7C]
    assert z.astype(np.float32).tolist() == [1.0, 240.0, 384.0, 384.0]


def test_no_change_without_e4m3fn() -> None:
    assert_unchanged(
        Fp8e4m3fnAsFp8e4(),
        """
        func @main {
          tensor @x : input float8e4[2]
          tensor @b : input uint8[2]
          tensor @y : output float32[2]
        ^bb0:
          %x = affine_load @x : float8e4[2]
          %v = affine_load @b as float8e4 : float8e4[2]
          %a = add %x, %v : float8e4[2]
          %f = cast %a : float32[2]
          affine_store %f, @y
        }
        """,
    )


def test_byte_view_as_e4m3fn_becomes_a_view_as_e4() -> None:
    changed, out = run(
        Fp8e4m3fnAsFp8e4(),
        """
        func @main {
          tensor @b : input uint8[2]
          tensor @y : output float32[2]
        ^bb0:
          %v = affine_load @b as float8e4m3fn : float8e4m3fn[2]
          %f = cast %v : float32[2]
          affine_store %f, @y
        }
        """,
    )
    assert changed
    assert "%v = affine_load @b as float8e4 : float8e4[2]" in out


def test_idempotent() -> None:
    m = parse(PROGRAM)
    assert Fp8e4m3fnAsFp8e4().run(m)
    once = ir.to_text(m)
    assert Fp8e4m3fnAsFp8e4().run(m) is False
    assert ir.to_text(m) == once


@pytest.mark.parametrize("mode", ["none", "all", "matmult"])
def test_pipeline_runs_it_first_only_with_the_flag(mode: str) -> None:
    plain = parse_flags(["--fp32-cast", mode])
    unsafe = parse_flags(["--fp32-cast", mode, "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"])
    assert "fp8e4m3fn-as-fp8e4" not in pipeline_pass_names(plain)
    assert pipeline_pass_names(unsafe) == ["fp8e4m3fn-as-fp8e4", *pipeline_pass_names(plain)]
    assert PASSES["fp8e4m3fn-as-fp8e4"] is Fp8e4m3fnAsFp8e4


def test_run_pipeline_with_the_flag_relabels() -> None:
    m = parse(PROGRAM)
    flags = ["--fp32-cast", "none", "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"]
    stats = run_pipeline(m, parse_flags(flags))
    assert stats.changed == {"fp8e4m3fn-as-fp8e4": True}
    assert ir.to_text(m) == canon(ir.to_text(m))
    assert np.isinf(run_ir(m, _inputs())["yq"][1])


def test_callee_boundary_is_device_memory() -> None:
    """A called function's inputs/outputs are filled by the caller on the device: relabelled like
    internal tensors, so the call passes fp8e4 values through unchanged (0x78 stays +inf)."""
    text = """
    func @g {
      tensor @a : input float8e4m3fn[2]
      tensor @r : output float8e4m3fn[2]
    ^bb0:
      %a = affine_load @a : float8e4m3fn[2]
      affine_store %a, @r
    }

    func @main {
      tensor @q : input float8e4m3fn[2]
      tensor @t : internal float8e4m3fn[2]
      tensor @u : internal float8e4m3fn[2]
      tensor @y : output float32[2]
    ^bb0:
      %q = affine_load @q : float8e4m3fn[2]
      affine_store %q, @t
      call @g ins(@t) outs(@u)
      %u = affine_load @u : float8e4m3fn[2]
      %f = cast %u : float32[2]
      affine_store %f, @y
    }
    """
    changed, out = run(Fp8e4m3fnAsFp8e4(), text)
    assert changed
    assert "tensor @a : input float8e4[2]" in out and "tensor @r : output float8e4[2]" in out
    assert "tensor @q : input float8e4m3fn[2]" in out
    m = parse(text)
    Fp8e4m3fnAsFp8e4().run(m)
    q = np.array([0x38, 0x78], np.uint8).view(ml_dtypes.float8_e4m3fn)
    assert run_ir(m, {"q": q})["y"].tolist() == [1.0, np.inf]
