"""The bridge of spec 003 §4: canonicalize the user pair, re-encode the ``fp32-cast-`` token, and the
mode ↔ (scope, dtype, transpose dtype) table.

Every value on this axis is a string (spec 003 abstract: "there is no integer enum anywhere on this
axis"), so every function here takes and returns plain strings.
"""
from __future__ import annotations

from dataclasses import dataclass

#: ``--auto-cast`` choices (spec 003 §2.1), in registration order.
AUTO_CAST_CHOICES: tuple[str, ...] = ("none", "matmult", "all")
#: ``--auto-cast-type`` choices (spec 003 §2.2), in registration order.
AUTO_CAST_TYPE_CHOICES: tuple[str, ...] = ("fp16", "bf16", "tf32", "fp8_e4m3")
#: The four dtypes the cast actually sees after canonicalization (spec 003 §2.2 NOTE).
CANONICAL_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32r", "fp8e4")
#: ``--fp32-cast`` choices (spec 003 §3.1), in the order of the PyList_New(10) items.
FP32_CAST_MODES: tuple[str, ...] = (
    "all",
    "matmult",
    "matmult-fp16",
    "matmult-bf16",
    "matmult-fp32r",
    "matmult-fp8e4",
    "experimental-all-fp16",
    "all-fp32r",
    "all-fp8e4",
    "none",
)
#: ``--fast-math`` choices (spec 003 §2.3), the 16 tokens in registration order.
FAST_MATH_CHOICES: tuple[str, ...] = (
    "all",
    "none",
    "fp32-cast-matmult-bf16",
    "fp32-cast-matmult-fp16",
    "fp32-cast-matmult-fp32r",
    "fp32-cast-matmult-fp8e4",
    "fp32-cast-matmult",
    "fp32-cast-all",
    "fp32-cast-all-fp32r",
    "fp32-cast-all-fp8e4",
    "fp32-cast-none",
    "fast-relayout",
    "fast-relayout-fp32",
    "fast-relayout-fp32r",
    "fast-relayout-fp8e4",
    "no-fast-relayout",
)
#: The literal prefix of the re-encoded token (spec 003 §4.2, ``__pyx_kp_u_fp32_cast_2``).
TOKEN_PREFIX = "fp32-cast-"


@dataclass(frozen=True)
class ModeInfo:
    """One row of the mode table (spec 003 §4.3): the cast scope, the op dtype and the dtype of a
    matmult-based transpose. ``dtype``/``transpose_dtype`` are None for ``none`` (nothing is cast)."""

    mode: str
    scope: str
    dtype: str | None
    transpose_dtype: str | None


#: mode → (scope, dtype, transpose dtype). Only ``matmult`` splits the transpose dtype from the op
#: dtype (spec 003 §3.1 QUIRK); ``matmult-fp32r`` and ``none`` are inferred (§3.1 CORRECTION).
MODE_TABLE: dict[str, ModeInfo] = {
    "all": ModeInfo("all", "all", "bf16", "bf16"),
    "matmult": ModeInfo("matmult", "matmult", "bf16", "fp16"),
    "matmult-fp16": ModeInfo("matmult-fp16", "matmult", "fp16", "fp16"),
    "matmult-bf16": ModeInfo("matmult-bf16", "matmult", "bf16", "bf16"),
    "matmult-fp32r": ModeInfo("matmult-fp32r", "matmult", "fp32r", "fp32r"),
    "matmult-fp8e4": ModeInfo("matmult-fp8e4", "matmult", "fp8e4", "fp8e4"),
    "experimental-all-fp16": ModeInfo("experimental-all-fp16", "all", "fp16", "fp16"),
    "all-fp32r": ModeInfo("all-fp32r", "all", "fp32r", "fp32r"),
    "all-fp8e4": ModeInfo("all-fp8e4", "all", "fp8e4", "fp8e4"),
    "none": ModeInfo("none", "none", None, None),
}

#: canonical (scope, dtype) → the bare ``fp32_cast_mode`` the passes gate on. ``matmult`` (the
#: split mode) is deliberately absent: the user pair (matmult, bf16) is ``matmult-bf16``
#: (spec 003 §1 GOTCHA). See docs/decisions/frontend.md, "pair → mode".
_PAIR_TO_MODE: dict[tuple[str, str], str] = {
    ("all", "bf16"): "all",
    ("all", "fp16"): "experimental-all-fp16",
    ("all", "fp32r"): "all-fp32r",
    ("all", "fp8e4"): "all-fp8e4",
    ("matmult", "bf16"): "matmult-bf16",
    ("matmult", "fp16"): "matmult-fp16",
    ("matmult", "fp32r"): "matmult-fp32r",
    ("matmult", "fp8e4"): "matmult-fp8e4",
}

#: The ``dtype`` component given to mode ``none`` when it is decoded to a pair: the argparse
#: default of ``--auto-cast-type`` (so ``--fp32-cast none`` equals passing no flag at all).
NONE_MODE_DTYPE = "bf16"


def canonicalize(auto_cast: str, auto_cast_type: str) -> tuple[str, str]:
    """The three value rewrites of spec 003 §4.1, in their order; returns the canonical pair.

    ``tf32 → fp32r`` and, *nested inside that branch*, ``all → matmult`` (the silent downgrade);
    then ``fp8_e4m3 → fp8e4``. The fourth rewrite (``none`` appends ``"none"`` to fast_math) acts on
    the fast-math list and lives in :func:`fast_math_after_canonicalize`.
    """
    if auto_cast_type == "tf32":  # spec 003 §4.1, dec.6597
        auto_cast_type = "fp32r"  # dec.6630
        if auto_cast == "all":  # dec.6656 — INSIDE the tf32 branch (GOTCHA)
            auto_cast = "matmult"  # dec.6715
    if auto_cast_type == "fp8_e4m3":  # dec.6770
        auto_cast_type = "fp8e4"  # dec.6801
    return auto_cast, auto_cast_type


def fast_math_after_canonicalize(auto_cast: str, fast_math: list[str]) -> list[str]:
    """Rewrite 4 of spec 003 §4.1: ``auto_cast == 'none'`` appends ``'none'`` (unconditionally, even
    if already present). Returns a new list; the input is not modified."""
    result = list(fast_math)
    if auto_cast == "none":  # dec.6827
        result.append("none")
    return result


def encode_token(auto_cast: str, auto_cast_type: str) -> str:
    """Spec 003 §4.2: the 4-part join ``"fp32-cast-" + scope + "-" + dtype`` — a concatenation, not a
    table lookup, so every pair (even ``none``) produces a token."""
    return f"{TOKEN_PREFIX}{auto_cast}-{auto_cast_type}"


def decode_token(token: str) -> tuple[str, str]:
    """Inverse of :func:`encode_token` for canonical pairs (scope never contains ``-``)."""
    if not token.startswith(TOKEN_PREFIX):
        raise ValueError(f"not an fp32-cast token: {token!r}")
    scope, sep, dtype = token[len(TOKEN_PREFIX):].partition("-")
    if not sep or scope not in AUTO_CAST_CHOICES or dtype not in CANONICAL_DTYPES:
        raise ValueError(f"not a canonical fp32-cast token: {token!r}")
    return scope, dtype


def mode_info(mode: str) -> ModeInfo:
    """The table row of an ``--fp32-cast`` mode; ValueError on an unknown mode."""
    try:
        return MODE_TABLE[mode]
    except KeyError:
        raise ValueError(
            f"unknown fp32-cast mode {mode!r} (choose from {', '.join(FP32_CAST_MODES)})"
        ) from None


def mode_to_pair(mode: str) -> tuple[str, str]:
    """The canonical (scope, dtype) pair a mode encodes; ``none`` decodes to (none, bf16)."""
    info = mode_info(mode)
    return info.scope, info.dtype if info.dtype is not None else NONE_MODE_DTYPE


def pair_to_mode(auto_cast: str, auto_cast_type: str) -> str:
    """The bare ``fp32_cast_mode`` string of a canonical pair (the value AutoCastFP32 compares).

    ``(none, *) → none``; ``(all, bf16) → all``; ``(all, fp16) → experimental-all-fp16``;
    ``(all, fp32r|fp8e4) → all-fp32r|all-fp8e4``; ``(matmult, d) → matmult-d``.
    """
    if auto_cast == "none":
        return "none"
    try:
        return _PAIR_TO_MODE[(auto_cast, auto_cast_type)]
    except KeyError:
        raise ValueError(
            f"not a canonical (auto_cast, auto_cast_type) pair: ({auto_cast}, {auto_cast_type})"
        ) from None


def autocast_dtype_for_mode(mode: str) -> str:
    """The AutoCastFP32 ``__init__`` cascade of spec 000 §1 on a mode string: ``all → bf16``,
    ``all-fp32r → fp32r``, ``all-fp8e4 → fp8e4``, anything else → ``fp16``."""
    if mode == "all":
        return "bf16"
    if mode == "all-fp32r":
        return "fp32r"
    if mode == "all-fp8e4":
        return "fp8e4"
    return "fp16"
