"""The neuronx-cc precision flags (spec 003): parsers, canonicalization, the
``fp32-cast-<scope>-<dtype>`` token and the boolean toggles. Pure Python; imports only errors."""
from __future__ import annotations

from pyprecision.frontend.canonical import (
    AUTO_CAST_CHOICES,
    AUTO_CAST_TYPE_CHOICES,
    CANONICAL_DTYPES,
    FAST_MATH_CHOICES,
    FP32_CAST_MODES,
    MODE_TABLE,
    ModeInfo,
    autocast_dtype_for_mode,
    canonicalize,
    decode_token,
    encode_token,
    mode_info,
    mode_to_pair,
    pair_to_mode,
)
from pyprecision.frontend.command_line import (
    NEURON_TARGETS,
    NeuronCommand,
    neuron_target_generation,
    parse_neuron_command,
    split_neuron_argv,
)
from pyprecision.frontend.config import (
    NATIVE_INT64_TOKEN,
    PENGUIN_MAC_COUNT_TOKEN,
    USER_SPELLING,
    PrecisionConfig,
    config_from_namespace,
    config_to_argv,
    fast_math_mode,
    parse_flags,
)
from pyprecision.frontend.flags import (
    EnableDisableArgumentAction,
    FlagError,
    add_precision_arguments,
    build_parser,
)

__all__ = [
    "USER_SPELLING",
    "config_to_argv",
    "fast_math_mode",
    "NEURON_TARGETS",
    "NeuronCommand",
    "neuron_target_generation",
    "parse_neuron_command",
    "split_neuron_argv",
    "AUTO_CAST_CHOICES",
    "AUTO_CAST_TYPE_CHOICES",
    "CANONICAL_DTYPES",
    "FAST_MATH_CHOICES",
    "FP32_CAST_MODES",
    "MODE_TABLE",
    "NATIVE_INT64_TOKEN",
    "PENGUIN_MAC_COUNT_TOKEN",
    "EnableDisableArgumentAction",
    "FlagError",
    "ModeInfo",
    "PrecisionConfig",
    "add_precision_arguments",
    "autocast_dtype_for_mode",
    "build_parser",
    "canonicalize",
    "config_from_namespace",
    "decode_token",
    "encode_token",
    "mode_info",
    "mode_to_pair",
    "pair_to_mode",
    "parse_flags",
]
