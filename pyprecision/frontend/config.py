"""PrecisionConfig — the one object the precision flags produce and the passes consume."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from pyprecision.frontend.canonical import (
    TOKEN_PREFIX,
    autocast_dtype_for_mode,
    canonicalize,
    encode_token,
    fast_math_after_canonicalize,
    mode_info,
    mode_to_pair,
    pair_to_mode,
)
from pyprecision.frontend.flags import GIVEN_ATTR, FlagError, build_parser

#: Appended to the tensorizer options unconditionally (spec 003 §5.3, dec.2477).
PENGUIN_MAC_COUNT_TOKEN = "enable-penguin-mac-count"
#: Appended when the internal native-int64 boolean is set (spec 003 §5.3, dec.2576).
NATIVE_INT64_TOKEN = "enable-native-int64"


@dataclass(frozen=True)
class PrecisionConfig:
    """The precision decision after canonicalization (spec 003 §4) and forwarding (§5.3).

    ``auto_cast``/``auto_cast_type`` are the canonical pair; ``fp32_cast_mode`` is the bare mode
    string the passes gate on; ``token`` is the re-encoded ``fp32-cast-<scope>-<dtype>``;
    ``dtype``/``transpose_dtype`` are the mode-table row; ``autocast_dtype`` is what the
    AutoCastFP32 cascade (spec 000 §1) picks for this mode.
    """

    auto_cast: str = "none"
    auto_cast_type: str = "bf16"
    fp32_cast_mode: str = "none"
    token: str = "fp32-cast-none-bf16"
    source: str = "auto-cast"
    fast_math: tuple[str, ...] = ("none",)
    tensorizer_options: tuple[str, ...] = (PENGUIN_MAC_COUNT_TOKEN,)
    enable_mixed_precision_accumulation: bool = True
    enable_saturate_infinity: bool = False
    enable_internal_native_int64: bool = False
    internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3: bool = False

    @property
    def scope(self) -> str:
        """The cast scope of the mode: none, matmult or all."""
        return mode_info(self.fp32_cast_mode).scope

    @property
    def dtype(self) -> str | None:
        """The op dtype of the mode (None for ``none``)."""
        return mode_info(self.fp32_cast_mode).dtype

    @property
    def transpose_dtype(self) -> str | None:
        """The dtype of a matmult-based transpose (differs from ``dtype`` only in ``matmult``)."""
        return mode_info(self.fp32_cast_mode).transpose_dtype

    @property
    def autocast_dtype(self) -> str:
        """The dtype the AutoCastFP32 constructor cascade selects for ``fp32_cast_mode``."""
        return autocast_dtype_for_mode(self.fp32_cast_mode)

    @classmethod
    def from_mode(cls, mode: str) -> PrecisionConfig:
        """The config of ``--fp32-cast MODE`` with every other flag at its default."""
        return parse_flags(["--fp32-cast", mode])


def config_from_namespace(ns: argparse.Namespace) -> PrecisionConfig:
    """Build the config from a namespace filled by :func:`add_precision_arguments`.

    The user pair is canonicalized (spec 003 §4.1); ``--fp32-cast``, when given, is decoded to its
    pair and must agree with an explicitly given user pair (docs/decisions/frontend.md, "two
    doors"); the token is re-encoded from the final canonical pair (§4.2).
    """
    given = set(getattr(ns, GIVEN_ATTR, None) or ())
    auto_cast, auto_cast_type = canonicalize(ns.auto_cast, ns.auto_cast_type)
    source = "auto-cast"
    mode = pair_to_mode(auto_cast, auto_cast_type)
    fm_mode = fast_math_mode(list(ns.fast_math or []))
    if ns.fp32_cast is None and fm_mode is not None:  # decision F9: the third door
        if given & {"auto_cast", "auto_cast_type"} and pair_to_mode(auto_cast, auto_cast_type) != fm_mode:
            raise FlagError(
                f"--fast-math fp32-cast-{fm_mode} disagrees with --auto-cast {auto_cast} "
                f"--auto-cast-type {auto_cast_type}; give one door or make them agree"
            )
        auto_cast, auto_cast_type = mode_to_pair(fm_mode)
        mode, source = fm_mode, "fast-math"
    elif ns.fp32_cast is not None and fm_mode is not None and fm_mode != ns.fp32_cast:
        raise FlagError(f"--fast-math fp32-cast-{fm_mode} disagrees with --fp32-cast {ns.fp32_cast}")
    if ns.fp32_cast is not None:
        mode_pair = mode_to_pair(ns.fp32_cast)
        user_given = given & {"auto_cast", "auto_cast_type"}
        if user_given and mode_pair != (auto_cast, auto_cast_type):
            raise FlagError(
                f"--fp32-cast {ns.fp32_cast} means ({mode_pair[0]}, {mode_pair[1]}) but "
                f"--auto-cast/--auto-cast-type mean ({auto_cast}, {auto_cast_type}); "
                "give one door or make them agree"
            )
        auto_cast, auto_cast_type = mode_pair
        mode = ns.fp32_cast
        source = "fp32-cast"
    options = [PENGUIN_MAC_COUNT_TOKEN]  # unconditional, dec.2477
    if ns.enable_internal_native_int64:  # dec.2492..2576
        options.append(NATIVE_INT64_TOKEN)
    return PrecisionConfig(
        auto_cast=auto_cast,
        auto_cast_type=auto_cast_type,
        fp32_cast_mode=mode,
        token=encode_token(auto_cast, auto_cast_type),
        source=source,
        fast_math=tuple(fast_math_after_canonicalize(auto_cast, list(ns.fast_math or []))),
        tensorizer_options=tuple(options),
        enable_mixed_precision_accumulation=bool(ns.enable_mixed_precision_accumulation),
        enable_saturate_infinity=bool(ns.enable_saturate_infinity),
        enable_internal_native_int64=bool(ns.enable_internal_native_int64),
        internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3=bool(
            ns.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3
        ),
    )


def fast_math_mode(tokens: Sequence[str]) -> str | None:
    """The fp32-cast mode named by the ``fp32-cast-*`` tokens of ``--fast-math`` (the last one
    wins; ``fp32-cast-matmult-bf16`` is the internal mode ``matmult-bf16``, spec 003 §2.3 QUIRK),
    or None when there is none (decision F9)."""
    mode = None
    for t in tokens:
        if t.startswith(TOKEN_PREFIX):
            mode = t[len(TOKEN_PREFIX):]
    return mode


#: canonical dtype → the ``--auto-cast-type`` spelling that canonicalizes to it
USER_SPELLING = {"bf16": "bf16", "fp16": "fp16", "fp32r": "tf32", "fp8e4": "fp8_e4m3"}


def config_to_argv(config: PrecisionConfig) -> list[str]:
    """Flags that ``parse_flags`` turns back into ``config`` (canonical dtypes in the spelling
    argparse accepts: ``fp32r`` → ``tf32``, ``fp8e4`` → ``fp8_e4m3``)."""
    if config.source == "fp32-cast":
        argv = ["--fp32-cast", config.fp32_cast_mode]
    elif config.source == "fast-math":
        argv = []  # the mode rides in the fast-math tokens
    else:
        argv = ["--auto-cast", config.auto_cast, "--auto-cast-type",
                USER_SPELLING[config.auto_cast_type]]  # fmt: skip
    if not config.enable_mixed_precision_accumulation:
        argv.append("--disable-mixed-precision-accumulation")
    if config.enable_saturate_infinity:
        argv.append("--enable-saturate-infinity")
    if config.enable_internal_native_int64:
        argv.append("--enable-internal-native-int64")
    if config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3:
        argv.append("--experimental-unsafe-fp8e4m3fn-as-fp8e4m3")
    tokens = list(config.fast_math)
    if config.auto_cast == "none" and tokens and tokens[-1] == "none":
        tokens.pop()  # the unconditional append of spec 003 §4.1; parse_flags adds it again
    if tokens:
        argv += ["--fast-math", *tokens]
    return argv


def parse_flags(argv: Sequence[str]) -> PrecisionConfig:
    """Parse neuronx-cc precision flags (spec 003) into a :class:`PrecisionConfig`.

    Raises :class:`FlagError` (a PyPrecisionError) on unknown flags, unknown values or conflicting
    doors — never exits.
    """
    ns = build_parser().parse_args(list(argv))
    return config_from_namespace(ns)
