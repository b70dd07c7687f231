"""Cast elimination: identity casts, cast-of-cast through an exact inner cast, dead casts."""
from __future__ import annotations

import pytest
from filecheck import filecheck  # tests/ is on sys.path

from pyprecision.ir.dtypes import DTYPES
from pyprecision.passes import CastElimination, is_exact_cast

from .helpers import assert_unchanged, run

CE = CastElimination()


def test_identity_cast_removed() -> None:
    _, out = run(CE, """
    func @main {
      tensor @x : input bfloat16[2]
      tensor @y : output bfloat16[2]
    ^bb0:
      %x = affine_load @x : bfloat16[2]
      %c = cast %x : bfloat16[2]
      %n = neg %c : bfloat16[2]
      affine_store %n, @y
    }
    """)
    filecheck(out, """
        CHECK:      %x = affine_load @x : bfloat16[2]
        CHECK-NEXT: %n = neg %x : bfloat16[2]
        CHECK-NOT:  cast
    """)


def test_cast_of_exact_cast_folded_and_inner_dropped_when_dead() -> None:
    _, out = run(CE, """
    func @main {
      tensor @x : input bfloat16[2]
      tensor @y : output float16[2]
    ^bb0:
      %x = affine_load @x : bfloat16[2]
      %w = cast %x : float32[2]
      %h = cast %w : float16[2]
      affine_store %h, @y
    }
    """)
    filecheck(out, """
        CHECK:      %x = affine_load @x : bfloat16[2]
        CHECK-NEXT: %h = cast %x : float16[2]
        CHECK-NEXT: affine_store %h, @y
    """)


def test_round_trip_through_exact_cast_becomes_identity() -> None:
    _, out = run(CE, """
    func @main {
      tensor @x : input float8e4[2]
      tensor @y : output float8e4[2]
    ^bb0:
      %x = affine_load @x : float8e4[2]
      %a = cast %x : float16[2]
      %b = cast %a : float32[2]
      %c = cast %b : float8e4[2]
      affine_store %c, @y
    }
    """)
    assert " cast " not in out
    assert "affine_store %x, @y" in out


def test_inexact_inner_cast_is_kept() -> None:
    assert_unchanged(CE, """
    func @main {
      tensor @x : input float32[2]
      tensor @y : output float32[2]
    ^bb0:
      %x = affine_load @x : float32[2]
      %b = cast %x : bfloat16[2]
      %c = cast %b : float32[2]
      affine_store %c, @y
    }
    """)


def test_inner_cast_with_other_users_survives() -> None:
    _, out = run(CE, """
    func @main {
      tensor @x : input bfloat16[2]
      tensor @y : output float16[2]
      tensor @z : output float32[2]
    ^bb0:
      %x = affine_load @x : bfloat16[2]
      %w = cast %x : float32[2]
      %h = cast %w : float16[2]
      affine_store %h, @y
      affine_store %w, @z
    }
    """)
    assert "%w = cast %x : float32[2]" in out
    assert "%h = cast %x : float16[2]" in out


def test_dead_casts_removed_recursively_but_not_other_ops() -> None:
    _, out = run(CE, """
    func @main {
      tensor @x : input float32[2]
      tensor @y : output float32[2]
    ^bb0:
      %x = affine_load @x : float32[2]
      %e = exp %x : float32[2]
      %a = cast %e : bfloat16[2]
      %b = cast %a : float16[2]
      affine_store %x, @y
    }
    """)
    assert " cast " not in out
    assert "%e = exp %x : float32[2]" in out  # DCE of non-casts is not this pass's job


def test_no_change() -> None:
    assert_unchanged(CE, """
    func @main {
      tensor @x : input float32[2]
      tensor @y : output bfloat16[2]
    ^bb0:
      %x = affine_load @x : float32[2]
      %b = cast %x : bfloat16[2]
      affine_store %b, @y
    }
    """)


@pytest.mark.parametrize(
    ("src", "dst", "exact"),
    [
        ("float8e4", "bfloat16", True), ("float8e4", "float16", True),
        ("float8e4m3fn", "float16", True), ("float8_e5m2", "float16", True),
        ("float8_e5m2", "bfloat16", True), ("float16", "float32r", True),
        ("bfloat16", "float32r", True), ("float32r", "float32", True),
        ("float16", "bfloat16", False), ("bfloat16", "float16", False),
        ("float32", "float32r", False), ("float8e4", "float8e4m3fn", False),
        ("int8", "int16", True), ("uint8", "int16", True), ("int8", "uint16", False),
        ("int16", "int8", False), ("int8", "bfloat16", True), ("uint8", "bfloat16", True),
        ("int16", "bfloat16", False), ("int16", "float32", True), ("int32", "float32", False),
        ("float16", "int32", False),
    ],
)
def test_is_exact_cast(src: str, dst: str, exact: bool) -> None:
    assert is_exact_cast(DTYPES[src], DTYPES[dst]) is exact


def test_exactness_table_agrees_with_the_cast_core() -> None:
    import numpy as np

    import pyprecision

    for src in ("float8e4", "float8e4m3fn", "float8_e5m2", "float16", "bfloat16"):
        s = DTYPES[src]
        bits = np.arange(1 << s.bits, dtype=np.uint16 if s.bits == 16 else np.uint8)
        values = pyprecision.decode(bits, pyprecision.format(s.fmt))
        finite = values[np.isfinite(values)]
        for dst in ("float16", "bfloat16", "float32r"):
            d = DTYPES[dst]
            if d is s or not is_exact_cast(s, d):
                continue
            back = pyprecision.quantize(finite, pyprecision.format(d.fmt))
            np.testing.assert_array_equal(back, finite, err_msg=f"{src} -> {dst}")
