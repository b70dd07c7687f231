"""AutoCastTCInputs (spec 000 §4, §6) and AutoCastInputs (§8)."""
from __future__ import annotations

import numpy as np
from filecheck import filecheck  # tests/ is on sys.path
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision import ir
from pyprecision.passes import STATISTICS, AutoCastInputs, AutoCastTCInputs, Target

from .helpers import EXAMPLES, TargetDouble, assert_unchanged, parse, run

SPILL = """
func @main {
  tensor @x : input float32[2,3]
  tensor @t : internal float32[2,3]
  tensor @w : const float32[2,2] = splat 0.5
  tensor @y : output float32[3,2]
^bb0:
  %x = affine_load @x : float32[2,3]
  %e = exp %x : float32[2,3]
  affine_store %e, @t
  %r = affine_load @t : float32[2,3]
  %w = sb_atom_load @w : float32[2,2]
  %mm = matmul %r, %w : float32[3,2]
  affine_store %mm, @y
}
"""


def tc(mode: str = "matmult-bf16") -> AutoCastTCInputs:
    return AutoCastTCInputs(Target.from_config(mode))


def test_matmult_bf16_casts_operands_and_shrinks_spill() -> None:
    AutoCastTCInputs.tensor_shrink = 0
    changed, out = run(tc(), SPILL)
    assert changed
    filecheck(out, """
        CHECK:      tensor @t : internal bfloat16[2,3]
        CHECK:      affine_store %e, @t
        CHECK-NEXT: %r = affine_load @t : bfloat16[2,3]
        CHECK-NEXT: %w = sb_atom_load @w : float32[2,2]
        CHECK-NEXT: %bfloat16.w = cast %w : bfloat16[2,2]
        CHECK-NEXT: %mm = matmul %r, %bfloat16.w : float32[3,2]
        CHECK-NOT:  cast
    """)
    assert AutoCastTCInputs.tensor_shrink == 2 * 3 * 4  # the fp32 size of @t


def test_note_tensor_shrink_is_class_level() -> None:
    AutoCastTCInputs.tensor_shrink = 0
    run(tc(), SPILL)
    run(tc(), SPILL)  # a second, separate instance keeps adding to the same counter
    assert AutoCastTCInputs.tensor_shrink == 48
    assert "tensor_shrink" not in vars(tc())


def test_correction_x02_1_tensor_shrink_docstring_has_no_closing_paren() -> None:
    desc = STATISTICS["AutoCastTCInputs.tensor_shrink"].description
    assert desc == "Tensor shrink for matmult down-cast (in bytes"


def test_no_change_without_matmul_or_when_operands_legal() -> None:
    assert_unchanged(tc(), """
    func @main {
      tensor @x : input float32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      %e = exp %x : float32[2,2]
      affine_store %e, @y
    }
    """)
    assert_unchanged(tc(), """
    func @main {
      tensor @a : input bfloat16[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %a = affine_load @a : bfloat16[2,2]
      %mm = matmul %a, %a : float32[2,2]
      affine_store %mm, @y
    }
    """)


def test_quirk_matmul_operand_policy_lives_in_target() -> None:
    text = """
    func @main {
      tensor @s : input float32[2,2]
      tensor @m : input float16[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %s = affine_load @s : float32[2,2]
      %m = affine_load @m : float16[2,2]
      %mm = matmul %s, %m : float32[2,2]
      affine_store %mm, @y
    }
    """
    double = TargetDouble(operand_rule={"float32": "float8e4m3fn", "float16": "float8_e5m2"})
    _, out = run(AutoCastTCInputs(double), text)  # type: ignore[arg-type]
    assert double.asked == [("float32", False), ("float16", False)]  # stationary, then moving
    assert "%mm = matmul %float8e4m3fn.s, %float8_e5m2.m : float32[2,2]" in out
    # a target that answers "already legal" gets no cast at all
    assert_unchanged(AutoCastTCInputs(TargetDouble()), text)  # type: ignore[arg-type]


def test_matmult_split_mode_transpose_uses_fp16() -> None:
    with open(EXAMPLES / "transpose_matmul.pir") as fh:
        text = fh.read()
    _, out = run(tc("matmult"), text)
    assert "%xT = matmul %float16.x, %float16.ident : float32[4,3]" in out
    assert "%y = matmul %bfloat16.xT, %bfloat16.w : float32[3,2]" in out
    _, out2 = run(tc("matmult-bf16"), text)
    assert "%xT = matmul %bfloat16.x, %bfloat16.ident : float32[4,3]" in out2


def test_cast_tc_operand_rewires_every_user_of_the_operand() -> None:
    text = """
    func @main {
      tensor @s : input float32[2,2]
      tensor @y : output float32[2,2]
      tensor @z : output float32[2,2]
    ^bb0:
      %s = affine_load @s : float32[2,2]
      %mm = matmul %s, %s : float32[2,2]
      %n = neg %s : float32[2,2]
      affine_store %mm, @y
      affine_store %n, @z
    }
    """
    _, out = run(tc(), text)
    filecheck(out, """
        CHECK:      %s = affine_load @s : float32[2,2]
        CHECK-NEXT: %bfloat16.s = cast %s : bfloat16[2,2]
        CHECK-NEXT: %mm = matmul %bfloat16.s, %bfloat16.s : float32[2,2]
        CHECK-NEXT: %n = neg %bfloat16.s : float32[2,2]
    """)


def _shrink_guard_text(extra: str, load: str = "%r = affine_load @t : float32[2,2]") -> str:
    return f"""
    func @main {{
      tensor @x : input float32[2,2]
      tensor @t : internal float32[2,2]
      tensor @y : output float32[2,2]
      tensor @z : output float32[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      affine_store %x, @t
      {load}
      %mm = matmul %r, %r : float32[2,2]
      affine_store %mm, @y
      {extra}
    }}
    """


def test_shrink_guard_chain() -> None:
    # baseline: shrinks
    m = parse(_shrink_guard_text(""))
    assert tc().shrink_tensor(m.main.get_tensor("t")) is False  # no cast yet: not down-cast
    tc().run(m)
    assert m.main.get_tensor("t").dtype.name == "bfloat16"
    # an opaque reader blocks it
    m = parse(_shrink_guard_text('opaque "copy" ins(@t) outs(@z)'))
    tc().run(m)
    assert m.main.get_tensor("t").dtype.name == "float32"
    # a second load blocks it (n_loads != 1)
    m = parse(_shrink_guard_text("%r2 = affine_load @t : float32[2,2]\n  affine_store %r2, @z"))
    tc().run(m)
    assert m.main.get_tensor("t").dtype.name == "float32"
    # boundary tensors never shrink
    m = parse(_shrink_guard_text("", load="%r = affine_load @x : float32[2,2]"))
    tc().run(m)
    assert m.main.get_tensor("x").dtype.name == "float32"


def test_after_stmt_transform_visits_every_tensor_then_drops_dead() -> None:
    text = """
    func @main {
      tensor @a : input float32[2,2]
      tensor @t1 : internal float32[2,2]
      tensor @t2 : internal float32[2,2]
      tensor @dead : internal float32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %a = affine_load @a : float32[2,2]
      affine_store %a, @t1
      affine_store %a, @t2
      %r1 = affine_load @t1 : float32[2,2]
      %r2 = affine_load @t2 : float32[2,2]
      %mm = matmul %r1, %r2 : float32[2,2]
      affine_store %mm, @y
    }
    """
    _, out = run(tc(), text)
    assert "tensor @t1 : internal bfloat16[2,2]" in out
    assert "tensor @t2 : internal bfloat16[2,2]" in out  # not short-circuited after @t1
    assert "@dead" not in out


def test_auto_cast_inputs_narrows_only_inputs() -> None:
    text = """
    func @main {
      tensor @x : input float32[2,2]
      tensor @w : const float32[2,2] = splat 0.5
      tensor @t : internal float32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      offloaded_memcpy @x -> @t
      %x = affine_load @x : float32[2,2]
      %w = affine_load @w : float32[2,2]
      %r = affine_load @t : float32[2,2]
      %a = add %x, %w : float32[2,2]
      %b = add %a, %r : float32[2,2]
      affine_store %b, @y
    }
    """
    _, out = run(AutoCastInputs(Target.from_config("all")), text)
    filecheck(out, """
        CHECK:      tensor @x : input bfloat16[2,2]
        CHECK-NEXT: tensor @w : const float32[2,2] = splat 0.5
        CHECK-NEXT: tensor @t : internal bfloat16[2,2]
        CHECK-NEXT: tensor @y : output float32[2,2]
        CHECK:      offloaded_memcpy @x -> @t
        CHECK-NEXT: %x = affine_load @x : bfloat16[2,2]
        CHECK-NEXT: %w = affine_load @w : float32[2,2]
        CHECK-NEXT: %r = affine_load @t : float32[2,2]
        CHECK-NEXT: %a = add %x, %w : float32[2,2]
        CHECK-NOT:  cast
    """)


def test_auto_cast_inputs_no_change() -> None:
    assert_unchanged(AutoCastInputs(Target.from_config("all")), """
    func @main {
      tensor @x : input bfloat16[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %x = affine_load @x : bfloat16[2,2]
      %e = exp %x : float32[2,2]
      affine_store %e, @y
    }
    """)


def test_is_matmult_transpose_needs_const_identity() -> None:
    from pyprecision.passes import is_matmult_transpose

    with open(EXAMPLES / "transpose_matmul.pir") as fh:
        m = ir.parse(fh.read())
    mms = [i for i in m.main.instructions() if isinstance(i, ir.TensorContractOp)]
    assert [is_matmult_transpose(i) for i in mms] == [True, False]


def test_the_transpose_test_remembers_read_only_identities_only() -> None:
    """Decision P28: an identity found in a read-only constant is remembered by object (the
    lowering's identity constants are read-only); a writeable one is tested again each time, so
    writing into it is seen; another array is tested on its own; a dead array is forgotten."""
    import gc

    from pyprecision.passes import is_matmult_transpose
    from pyprecision.ir.identity import _IDENTITIES

    with open(EXAMPLES / "transpose_matmul.pir") as fh:
        m = ir.parse(fh.read())
    tc = next(i for i in m.main.instructions() if isinstance(i, ir.TensorContractOp))
    ident = m.main.get_tensor("ident")
    # writeable: not remembered, a write into it is seen
    assert is_matmult_transpose(tc)
    assert id(ident.value) not in _IDENTITIES
    ident.value[0, 1] = 2.0
    assert not is_matmult_transpose(tc)
    # read-only: remembered by object
    eye = np.eye(3, dtype=np.float32)
    eye.flags.writeable = False
    ident.value = eye
    assert is_matmult_transpose(tc) and _IDENTITIES[id(eye)]() is eye
    # another read-only array in its place is tested on its own
    other = np.eye(3, dtype=np.float32)[::-1].copy()
    other.flags.writeable = False
    ident.value = other
    assert not is_matmult_transpose(tc)
    key = id(eye)
    del eye
    gc.collect()
    assert key not in _IDENTITIES


def test_the_lowerings_identity_constants_are_read_only() -> None:
    """Each matmult-based transpose of a real model loads a read-only identity constant (what the
    transpose test may remember, decision P28)."""
    from pyprecision import hlo, lower
    from pyprecision.passes import is_matmult_transpose
    from tests.models_data import load_model

    low = lower.lower(hlo.parse(load_model("encoder_block").text))
    tcs = [i for i in low.module.main.instructions() if isinstance(i, ir.TensorContractOp)]
    moving = [i.operands[1].owner for i in tcs if is_matmult_transpose(i)]
    assert moving
    assert all(not load.tensor.value.flags.writeable for load in moving)
