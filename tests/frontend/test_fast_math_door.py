"""Decision F9 (the fp32-cast-* tokens of --fast-math choose the mode when no other door does) and
``config_to_argv`` (flags the CLI accepts again, whatever the canonical spelling)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyprecision.frontend import (
    AUTO_CAST_CHOICES,
    AUTO_CAST_TYPE_CHOICES,
    FAST_MATH_CHOICES,
    FP32_CAST_MODES,
    FlagError,
    config_to_argv,
    parse_flags,
)


@pytest.mark.parametrize(
    "token,mode",
    [("fp32-cast-matmult-bf16", "matmult-bf16"), ("fp32-cast-matmult", "matmult"),
     ("fp32-cast-all-fp8e4", "all-fp8e4"), ("fp32-cast-none", "none")],
)  # fmt: skip
def test_fast_math_fp32_cast_token_sets_the_mode(token, mode):
    c = parse_flags(["--fast-math", token])
    assert c.fp32_cast_mode == mode
    assert c.source == "fast-math"
    assert c.fast_math[: 1] == (token,)


def test_fast_math_token_that_agrees_with_the_other_door_is_accepted():
    assert parse_flags(["--fp32-cast", "all", "--fast-math", "fp32-cast-all"]).fp32_cast_mode == "all"


@pytest.mark.parametrize(
    "argv",
    [["--fp32-cast", "all", "--fast-math", "fp32-cast-matmult-fp16"],
     ["--auto-cast", "all", "--fast-math", "fp32-cast-matmult-bf16"]],
)  # fmt: skip
def test_fast_math_token_that_disagrees_is_an_error(argv):
    with pytest.raises(FlagError, match="disagrees"):
        parse_flags(argv)


def test_relayout_tokens_alone_leave_the_mode_alone():
    assert parse_flags(["--fast-math", "fast-relayout-fp8e4"]).fp32_cast_mode == "none"


@pytest.mark.parametrize("typ", AUTO_CAST_TYPE_CHOICES)
def test_config_to_argv_uses_the_user_spelling(typ):
    """tf32 / fp8_e4m3 canonicalize to fp32r / fp8e4, which argparse would reject if fed back."""
    c = parse_flags(["--auto-cast", "matmult", "--auto-cast-type", typ])
    argv = config_to_argv(c)
    assert "fp32r" not in argv and "fp8e4" not in argv
    assert parse_flags(argv) == c


_FLAGS = st.fixed_dictionaries({
    "auto": st.none() | st.sampled_from(AUTO_CAST_CHOICES),
    "typ": st.none() | st.sampled_from(AUTO_CAST_TYPE_CHOICES),
    "mode": st.none() | st.sampled_from(FP32_CAST_MODES),
    "fm": st.lists(st.sampled_from(FAST_MATH_CHOICES), max_size=3),
    "acc": st.booleans(), "sat": st.booleans(), "fp8": st.booleans(),
})  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_FLAGS)
def test_config_to_argv_round_trips_every_flag_set(f):
    argv = []
    if f["auto"]:
        argv += ["--auto-cast", f["auto"]]
    if f["typ"]:
        argv += ["--auto-cast-type", f["typ"]]
    if f["mode"]:
        argv += ["--fp32-cast", f["mode"]]
    if f["fm"]:
        argv += ["--fast-math", *f["fm"]]
    argv += ["--disable-mixed-precision-accumulation"] * f["acc"]
    argv += ["--enable-saturate-infinity"] * f["sat"]
    argv += ["--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"] * f["fp8"]
    try:
        c = parse_flags(argv)
    except FlagError:
        return
    assert parse_flags(config_to_argv(c)) == c
