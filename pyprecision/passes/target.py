"""The Target: hardware facts the passes ask about, built once from the flags (STYLE rule 9).

AutoCastFP32 reads ``fp32_cast_mode`` (spec 000 §1); AutoCastTCInputs asks
``getMatmultOperandType(dtype)`` (spec 000 §4); DTypeMutator reads ``enable_dma_cast``
(spec 002 mutateLoad :152). The per-generation facts are decisions (docs/decisions/passes.md, P9).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyprecision.errors import PassError
from pyprecision.frontend import (
    CANONICAL_DTYPES,
    MODE_TABLE,
    PrecisionConfig,
    autocast_dtype_for_mode,
)
from pyprecision.ir import (
    DType,
    as_dtype,
    bfloat16,
    float8_e5m2,
    float8e4,
    float8e4m3fn,
    float16,
    float32,
    float32r,
)

#: frontend dtype token (a format name) → IR dtype, through the one format vocabulary
DTYPE_OF_TOKEN: dict[str, DType] = {t: as_dtype(t) for t in CANONICAL_DTYPES}


@dataclass(frozen=True)
class Generation:
    """Facts of one Tonga generation: whether the DMA engine can carry a dtype conversion and which
    dtypes the PE array accepts as matmul operands."""

    name: str
    enable_dma_cast: bool
    matmult_operand_dtypes: frozenset[DType]


#: The three descriptors (decision P9: gen2 has no DMA cast; gen3 adds DMA cast and fp8 e5m2
#: operands; gen4 adds fp8 e4m3fn operands).
GENERATIONS: dict[str, Generation] = {
    "gen2": Generation("gen2", False, frozenset({float32, float32r, bfloat16, float16, float8e4})),
    "gen3": Generation(
        "gen3", True, frozenset({float32, float32r, bfloat16, float16, float8e4, float8_e5m2})
    ),
    "gen4": Generation(
        "gen4", True,
        frozenset({float32, float32r, bfloat16, float16, float8e4, float8_e5m2, float8e4m3fn}),
    ),
}


#: ``--fast-math`` relayout token → the transpose dtype token (``fast-relayout``: the mode's own)
RELAYOUT_TOKENS: dict[str, str | None] = {
    "fast-relayout": None,
    "fast-relayout-fp32": "fp32",
    "fast-relayout-fp32r": "fp32r",
    "fast-relayout-fp8e4": "fp8e4",
    "no-fast-relayout": "fp32",
}


def relayout_token(config: PrecisionConfig) -> str | None:
    """The transpose dtype the config's relayout tokens ask for (the last one given wins)."""
    token = None
    for t in config.fast_math:
        if t in RELAYOUT_TOKENS:
            token = RELAYOUT_TOKENS[t]
    return token


@dataclass(frozen=True)
class Target:
    """A generation plus the active precision mode (the bare ``fp32_cast_mode`` string)."""

    generation: Generation = field(default_factory=lambda: GENERATIONS["gen2"])
    fp32_cast_mode: str = "none"
    #: the dtype token of matmult-based transposes set by ``--fast-math fast-relayout-*`` /
    #: ``no-fast-relayout`` (``fp32``: lossless); None keeps the mode's transpose dtype (decision L8)
    relayout: str | None = None

    @classmethod
    def from_config(cls, config: PrecisionConfig | str, generation: str = "gen2") -> Target:
        """Build from a PrecisionConfig (or a bare mode string) and a generation name."""
        mode = config if isinstance(config, str) else config.fp32_cast_mode
        if mode not in MODE_TABLE:
            raise PassError(f"unknown fp32-cast mode {mode!r} (choose from {', '.join(MODE_TABLE)})")
        try:
            gen = GENERATIONS[generation]
        except KeyError:
            raise PassError(
                f"unknown target {generation!r} (choose from {', '.join(GENERATIONS)})"
            ) from None
        return cls(gen, mode, None if isinstance(config, str) else relayout_token(config))

    @property
    def name(self) -> str:
        """The generation name (gen2, gen3, gen4)."""
        return self.generation.name

    @property
    def enable_dma_cast(self) -> bool:
        """Can a runtime load's DMA carry a dtype conversion (spec 002 mutateLoad :152)?"""
        return self.generation.enable_dma_cast

    @property
    def scope(self) -> str:
        """none, matmult or all."""
        return MODE_TABLE[self.fp32_cast_mode].scope

    @property
    def autocast_dtype(self) -> DType:
        """The AutoCastFP32 cascade's dtype for this mode (spec 000 §1)."""
        return DTYPE_OF_TOKEN[autocast_dtype_for_mode(self.fp32_cast_mode)]

    def get_matmult_operand_type(self, dtype: Any, transpose: bool = False) -> DType:
        """getMatmultOperandType (spec 000 §4): the legal matmul-operand dtype for an operand
        currently of ``dtype``.

        An fp32 operand becomes the mode's dtype (the transpose dtype for a matmult-based
        transpose, which differs only in mode ``matmult``); with scope ``none`` it stays fp32. A dtype
        the generation's PE cannot read becomes bfloat16. Any other dtype is already legal.
        """
        dt = as_dtype(dtype)
        if dt is float32:
            row = MODE_TABLE[self.fp32_cast_mode]
            token = row.transpose_dtype if transpose else row.dtype
            if transpose and token is not None and self.relayout is not None:
                token = self.relayout
            if token is None or token == "fp32":
                return float32
            dt = DTYPE_OF_TOKEN[token]
        if dt.is_float and dt not in self.generation.matmult_operand_dtypes:
            return bfloat16
        return dt

    get_matmult_operand_type = get_matmult_operand_type  # the spec's spelling
