"""The FileCheck helper (tests/filecheck.py) accepts what holds and names what does not."""
from __future__ import annotations

import pytest
from filecheck import CheckFailure, filecheck  # tests/ is on sys.path

TEXT = """func @main {
  tensor @x : input bfloat16[2,2]
^bb0:
  %x = affine_load @x : bfloat16[2,2]
  %a = add %x, %x : bfloat16[2,2]
  affine_store %a, @y
}
func @g {
  %b = neg %x : float32[2]
}"""


def test_check_and_check_next_and_same_hold() -> None:
    filecheck(TEXT, """
        CHECK: tensor @x : input bfloat16
        CHECK: %x = affine_load
        CHECK-SAME: bfloat16[2,2]
        CHECK-NEXT: %a = add   %x, %x
        CHECK-NEXT: affine_store %a, @{{[a-z]+}}
    """)


def test_check_not_between_matches_and_to_the_end() -> None:
    filecheck(TEXT, """
        CHECK-LABEL: func @main
        CHECK-NOT: float32
        CHECK: affine_store
        CHECK-LABEL: func @g
        CHECK: neg
    """)


@pytest.mark.parametrize(("checks", "message"), [
    ("CHECK: %z = mul", "CHECK: '%z = mul' (check line 1) not found"),
    ("CHECK: %x = affine_load\nCHECK-NEXT: affine_store", "is not on the next line"),
    ("CHECK-LABEL: func @main\nCHECK-NOT: add\nCHECK: affine_store", "found on input line 5"),
    ("CHECK: affine_store\nCHECK: tensor @x", "not found (searched from input line 7)"),
    ("CHECK-LABEL: func @main\nCHECK-NOT: float32\nCHECK-LABEL: func @g\nCHECK: affine_load",
     "not found"),
])
def test_failures_say_which_directive_and_where(checks: str, message: str) -> None:
    with pytest.raises(CheckFailure, match="input:") as exc:
        filecheck(TEXT, checks)
    assert message in str(exc.value)
    assert "    5 |   %a = add %x, %x : bfloat16[2,2]" in str(exc.value)  # the numbered input


def test_check_not_does_not_cross_a_label() -> None:
    """float32 appears only in @g: the NOT under @main's label does not see it."""
    filecheck(TEXT, "CHECK-LABEL: func @main\nCHECK-NOT: float32\nCHECK-LABEL: func @g")
    with pytest.raises(CheckFailure, match="found on input line 9"):
        filecheck(TEXT, "CHECK-LABEL: func @g\nCHECK-NOT: float32")


def test_malformed_check_text_is_refused() -> None:
    with pytest.raises(ValueError, match="no CHECK directive"):
        filecheck(TEXT, "CHEK: add")
    with pytest.raises(ValueError, match="no CHECK directives"):
        filecheck(TEXT, "")
