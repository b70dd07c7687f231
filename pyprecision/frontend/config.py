"""PrecisionConfig — the one object the precision flags produce and the passes consume."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from pyprecision.frontend.canonical import (
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


def parse_flags(argv: Sequence[str]) -> PrecisionConfig:
    """Parse neuronx-cc precision flags (spec 003) into a :class:`PrecisionConfig`.

    Raises :class:`FlagError` (a PyPrecisionError) on unknown flags, unknown values or conflicting
    doors — never exits.
    """
    ns = build_parser().parse_args(list(argv))
    return config_from_namespace(ns)
