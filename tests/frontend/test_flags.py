"""Spec 003: the precision flags — registrations, defaults, canonicalization, token, toggles.

Tests named ``test_quirk_*`` / ``test_gotcha_*`` / ``test_correction_*`` pin the marked passages of
note 003; expected values are written out from the note, not computed by the code under test.
"""
from __future__ import annotations

import pytest

from pyprecision.errors import PyPrecisionError
from pyprecision.frontend import (
    FAST_MATH_CHOICES,
    FP32_CAST_MODES,
    FlagError,
    PrecisionConfig,
    build_parser,
    canonicalize,
    encode_token,
    mode_info,
    parse_flags,
)

# ── §2 the user surface: choices and defaults ────────────────────────────────────────────────


def test_defaults_are_none_bf16_not_matmult() -> None:
    cfg = parse_flags([])
    assert (cfg.auto_cast, cfg.auto_cast_type) == ("none", "bf16")
    assert cfg.fp32_cast_mode == "none"
    assert cfg.token == "fp32-cast-none-bf16"


@pytest.mark.parametrize("scope", ["none", "matmult", "all"])
def test_auto_cast_accepts_exactly_three_scopes(scope: str) -> None:
    assert parse_flags(["--auto-cast", scope]).auto_cast == scope


@pytest.mark.parametrize("bad", ["matmul", "ALL", "bf16", ""])
def test_auto_cast_rejects_unknown_scope(bad: str) -> None:
    with pytest.raises(FlagError, match="invalid choice"):
        parse_flags(["--auto-cast", bad])


@pytest.mark.parametrize("bad", ["fp32", "fp8e4", "fp32r", "float16", "fp8_e5m2"])
def test_auto_cast_type_rejects_non_user_spellings(bad: str) -> None:
    # the canonical fp32r / fp8e4 are NOT user choices; only tf32 / fp8_e4m3 are (spec 003 §2.2)
    with pytest.raises(FlagError):
        parse_flags(["--auto-cast-type", bad])


def test_fast_math_has_exactly_sixteen_tokens_in_order() -> None:
    expected = [
        "all", "none", "fp32-cast-matmult-bf16", "fp32-cast-matmult-fp16",
        "fp32-cast-matmult-fp32r", "fp32-cast-matmult-fp8e4", "fp32-cast-matmult",
        "fp32-cast-all", "fp32-cast-all-fp32r", "fp32-cast-all-fp8e4", "fp32-cast-none",
        "fast-relayout", "fast-relayout-fp32", "fast-relayout-fp32r", "fast-relayout-fp8e4",
        "no-fast-relayout",
    ]
    assert list(FAST_MATH_CHOICES) == expected


def test_fast_math_default_is_empty_and_nargs_plus() -> None:
    assert parse_flags(["--auto-cast", "all"]).fast_math == ()
    cfg = parse_flags(["--auto-cast", "all", "--fast-math", "fast-relayout", "no-fast-relayout"])
    assert cfg.fast_math == ("fast-relayout", "no-fast-relayout")
    with pytest.raises(FlagError):  # nargs '+' needs at least one token
        parse_flags(["--fast-math"])
    with pytest.raises(FlagError):
        parse_flags(["--fast-math", "fp32-cast-all-bf16"])


def test_fp32_cast_has_ten_modes_in_order_and_no_default() -> None:
    assert list(FP32_CAST_MODES) == [
        "all", "matmult", "matmult-fp16", "matmult-bf16", "matmult-fp32r", "matmult-fp8e4",
        "experimental-all-fp16", "all-fp32r", "all-fp8e4", "none",
    ]
    assert build_parser().parse_args([]).fp32_cast is None


def test_fp32_cast_rejects_unknown_mode() -> None:
    with pytest.raises(FlagError, match="invalid choice"):
        parse_flags(["--fp32-cast", "all-bf16"])


def test_flag_error_is_a_pyprecision_error() -> None:
    assert issubclass(FlagError, PyPrecisionError)


def test_no_abbreviations() -> None:
    with pytest.raises(FlagError):
        parse_flags(["--fp32", "all"])


# ── §4.1 canonicalization ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("pair", "canonical"),
    [
        (("none", "tf32"), ("none", "fp32r")),
        (("matmult", "tf32"), ("matmult", "fp32r")),
        (("all", "tf32"), ("matmult", "fp32r")),
        (("all", "fp8_e4m3"), ("all", "fp8e4")),
        (("matmult", "fp8_e4m3"), ("matmult", "fp8e4")),
        (("all", "bf16"), ("all", "bf16")),
        (("all", "fp16"), ("all", "fp16")),
    ],
)
def test_canonicalize_rewrites(pair: tuple[str, str], canonical: tuple[str, str]) -> None:
    assert canonicalize(*pair) == canonical


def test_gotcha_all_tf32_silently_downgraded_to_matmult() -> None:
    cfg = parse_flags(["--auto-cast", "all", "--auto-cast-type", "tf32"])
    assert (cfg.auto_cast, cfg.auto_cast_type) == ("matmult", "fp32r")
    assert cfg.token == "fp32-cast-matmult-fp32r"
    assert cfg.fp32_cast_mode == "matmult-fp32r"
    # the downgrade is nested inside the tf32 branch: it must NOT fire for the other dtypes
    for user, mode in (("bf16", "all"), ("fp16", "experimental-all-fp16"),
                       ("fp8_e4m3", "all-fp8e4")):
        other = parse_flags(["--auto-cast", "all", "--auto-cast-type", user])
        assert other.auto_cast == "all"
        assert other.fp32_cast_mode == mode


def test_none_appends_none_to_fast_math_unconditionally() -> None:
    assert parse_flags([]).fast_math == ("none",)
    assert parse_flags(["--fast-math", "none"]).fast_math == ("none", "none")
    assert parse_flags(["--auto-cast", "matmult"]).fast_math == ()


def test_note_tf32_and_fp8_e4m3_never_reach_the_numeric_layer() -> None:
    for user in ("fp16", "bf16", "tf32", "fp8_e4m3"):
        for scope in ("none", "matmult", "all"):
            cfg = parse_flags(["--auto-cast", scope, "--auto-cast-type", user])
            assert cfg.auto_cast_type in {"bf16", "fp16", "fp32r", "fp8e4"}
            assert cfg.auto_cast in {"none", "matmult", "all"}


# ── §4.2 the token ───────────────────────────────────────────────────────────────────────────


def test_token_is_unconditional_four_part_join() -> None:
    assert encode_token("matmult", "bf16") == "fp32-cast-matmult-bf16"
    assert encode_token("none", "fp16") == "fp32-cast-none-fp16"
    assert parse_flags(["--auto-cast-type", "fp8_e4m3"]).token == "fp32-cast-none-fp8e4"


def test_quirk_fast_math_prefix_spelling_vs_bare_internal_spelling() -> None:
    # --fast-math fp32-cast-matmult-bf16 and --fp32-cast matmult-bf16 name the same mode: the
    # prefixed spelling is a fast-math choice, the bare one an --fp32-cast choice, never crossed.
    assert "fp32-cast-matmult-bf16" in FAST_MATH_CHOICES
    assert "matmult-bf16" in FP32_CAST_MODES
    assert "fp32-cast-matmult-bf16" not in FP32_CAST_MODES
    with pytest.raises(FlagError):
        parse_flags(["--fp32-cast", "fp32-cast-matmult-bf16"])
    # the forwarded token always carries the prefix, whichever door was used
    assert parse_flags(["--fp32-cast", "matmult-bf16"]).token == "fp32-cast-matmult-bf16"
    assert parse_flags(["--auto-cast", "matmult"]).token == "fp32-cast-matmult-bf16"


# ── §3 / §4.3 the mode table ─────────────────────────────────────────────────────────────────

MODE_ROWS = {
    "all": ("all", "bf16", "bf16"),
    "matmult": ("matmult", "bf16", "fp16"),
    "matmult-fp16": ("matmult", "fp16", "fp16"),
    "matmult-bf16": ("matmult", "bf16", "bf16"),
    "matmult-fp32r": ("matmult", "fp32r", "fp32r"),
    "matmult-fp8e4": ("matmult", "fp8e4", "fp8e4"),
    "experimental-all-fp16": ("all", "fp16", "fp16"),
    "all-fp32r": ("all", "fp32r", "fp32r"),
    "all-fp8e4": ("all", "fp8e4", "fp8e4"),
    "none": ("none", None, None),
}


@pytest.mark.parametrize("mode", list(MODE_ROWS))
def test_mode_table_row(mode: str) -> None:
    info = mode_info(mode)
    assert (info.scope, info.dtype, info.transpose_dtype) == MODE_ROWS[mode]
    cfg = parse_flags(["--fp32-cast", mode])
    assert cfg.fp32_cast_mode == mode
    assert (cfg.scope, cfg.dtype, cfg.transpose_dtype) == MODE_ROWS[mode]


def test_quirk_only_matmult_splits_transpose_dtype() -> None:
    split = [m for m in FP32_CAST_MODES if mode_info(m).dtype != mode_info(m).transpose_dtype]
    assert split == ["matmult"]
    assert mode_info("matmult").transpose_dtype == "fp16"


def test_correction_matmult_fp32r_and_none_are_accepted_modes() -> None:
    assert parse_flags(["--fp32-cast", "matmult-fp32r"]).dtype == "fp32r"
    none = parse_flags(["--fp32-cast", "none"])
    assert none.scope == "none" and none.dtype is None
    assert none.token == parse_flags([]).token == "fp32-cast-none-bf16"


def test_correction_all_fp8e4_token_is_fp8e4_not_fp32r() -> None:
    cfg = parse_flags(["--fp32-cast", "all-fp8e4"])
    assert cfg.dtype == "fp8e4"
    assert cfg.token == "fp32-cast-all-fp8e4"
    assert cfg.autocast_dtype == "fp8e4"


@pytest.mark.parametrize(
    ("user", "mode"),
    [
        (("all", "bf16"), "all"),
        (("all", "fp16"), "experimental-all-fp16"),
        (("all", "fp8_e4m3"), "all-fp8e4"),
        (("all", "tf32"), "matmult-fp32r"),
        (("matmult", "bf16"), "matmult-bf16"),
        (("matmult", "fp16"), "matmult-fp16"),
        (("matmult", "tf32"), "matmult-fp32r"),
        (("matmult", "fp8_e4m3"), "matmult-fp8e4"),
        (("none", "fp16"), "none"),
    ],
)
def test_user_pair_to_fp32_cast_mode(user: tuple[str, str], mode: str) -> None:
    cfg = parse_flags(["--auto-cast", user[0], "--auto-cast-type", user[1]])
    assert cfg.fp32_cast_mode == mode


@pytest.mark.parametrize(
    ("mode", "dtype"),
    [("all", "bf16"), ("all-fp32r", "fp32r"), ("all-fp8e4", "fp8e4"),
     ("experimental-all-fp16", "fp16"), ("matmult-bf16", "fp16"), ("none", "fp16")],
)
def test_autocast_cascade_dtype(mode: str, dtype: str) -> None:
    assert PrecisionConfig.from_mode(mode).autocast_dtype == dtype


# ── the two doors (docs/decisions/frontend.md) ───────────────────────────────────────────────


def test_gotcha_user_pair_and_fp32_cast_are_one_knob() -> None:
    a = parse_flags(["--fp32-cast", "matmult-bf16"])
    b = parse_flags(["--auto-cast", "matmult", "--auto-cast-type", "bf16"])
    assert (a.auto_cast, a.auto_cast_type, a.token, a.fp32_cast_mode) == (
        b.auto_cast, b.auto_cast_type, b.token, b.fp32_cast_mode)
    # the worked example of §7: both doors meet at fp32-cast-matmult-fp32r
    c = parse_flags(["--auto-cast", "all", "--auto-cast-type", "tf32"])
    d = parse_flags(["--fp32-cast", "matmult-fp32r"])
    assert c.token == d.token == "fp32-cast-matmult-fp32r"


def test_decision_both_doors_agreeing_keep_the_fp32_cast_mode() -> None:
    cfg = parse_flags(["--fp32-cast", "matmult", "--auto-cast", "matmult"])
    assert cfg.fp32_cast_mode == "matmult" and cfg.transpose_dtype == "fp16"
    assert cfg.token == "fp32-cast-matmult-bf16"


def test_decision_both_doors_disagreeing_is_an_error() -> None:
    with pytest.raises(FlagError, match="--fp32-cast all-fp8e4"):
        parse_flags(["--fp32-cast", "all-fp8e4", "--auto-cast", "all"])
    with pytest.raises(FlagError):
        parse_flags(["--fp32-cast", "all", "--auto-cast-type", "fp16"])


def test_decision_fp32_cast_alone_overrides_default_pair() -> None:
    cfg = parse_flags(["--fp32-cast", "all-fp32r"])
    assert (cfg.auto_cast, cfg.auto_cast_type) == ("all", "fp32r")
    assert cfg.token == "fp32-cast-all-fp32r"
    assert cfg.fast_math == ()  # scope is no longer none


# ── §5 booleans and tensorizer tokens ────────────────────────────────────────────────────────


def test_boolean_defaults() -> None:
    cfg = parse_flags([])
    assert cfg.enable_mixed_precision_accumulation is True
    assert cfg.enable_saturate_infinity is False
    assert cfg.enable_internal_native_int64 is False
    assert cfg.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3 is False


@pytest.mark.parametrize(
    ("flag", "attr", "value"),
    [
        ("--disable-mixed-precision-accumulation", "enable_mixed_precision_accumulation", False),
        ("--enable-mixed-precision-accumulation", "enable_mixed_precision_accumulation", True),
        ("--enable-saturate-infinity", "enable_saturate_infinity", True),
        ("--disable-saturate-infinity", "enable_saturate_infinity", False),
        ("--enable-internal-native-int64", "enable_internal_native_int64", True),
        ("--disable-internal-native-int64", "enable_internal_native_int64", False),
    ],
)
def test_enable_disable_pairs(flag: str, attr: str, value: bool) -> None:
    assert getattr(parse_flags([flag]), attr) is value


def test_enable_disable_last_one_wins() -> None:
    cfg = parse_flags(["--enable-saturate-infinity", "--disable-saturate-infinity"])
    assert cfg.enable_saturate_infinity is False


def test_penguin_mac_count_is_unconditional_and_first() -> None:
    assert parse_flags([]).tensorizer_options == ("enable-penguin-mac-count",)
    assert parse_flags(["--enable-internal-native-int64"]).tensorizer_options == (
        "enable-penguin-mac-count", "enable-native-int64")


def test_quirk_native_int64_token_is_flag_suffix() -> None:
    # one buffer "--enable-native-int64", the token points two bytes in; the CLI spelling
    # itself is NOT a registered flag at this level.
    token = parse_flags(["--enable-internal-native-int64"]).tensorizer_options[-1]
    assert "--enable-native-int64"[2:] == token
    assert "--enable-penguin-mac-count"[2:] == parse_flags([]).tensorizer_options[0]
    with pytest.raises(FlagError, match="unrecognized"):
        parse_flags(["--enable-native-int64"])


def test_note_saturate_and_accumulation_are_not_tensorizer_tokens() -> None:
    cfg = parse_flags(["--enable-saturate-infinity", "--disable-mixed-precision-accumulation"])
    assert cfg.tensorizer_options == ("enable-penguin-mac-count",)


@pytest.mark.parametrize(
    "flag",
    ["--experimental-unsafe-fp8e4m3fn-as-fp8e4m3",
     "--internal-experimental-unsafe-fp8e4m3fn-as-fp8e4m3"],
)
def test_fp8e4m3fn_flag_and_internal_alias(flag: str) -> None:
    assert parse_flags([flag]).internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3 is True


def test_correction_no_disable_inline_cast_flag() -> None:
    for flag in ("--disable-inline-cast", "--enable-inline-cast", "--inline-cast"):
        with pytest.raises(FlagError, match="unrecognized arguments"):
            parse_flags([flag])
