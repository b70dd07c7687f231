"""Say on stderr when a precision flag the user gave changes nothing in their program: the program is
compiled once with every flag and once without each given flag; equal printed IR means the flag had
no effect there (issue 11: no flag is dropped silently)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["compile_text", "inert_flag_notes", "warn_inert_flags"]

_RELAYOUT = ("fast-relayout", "fast-relayout-fp32", "fast-relayout-fp32r", "fast-relayout-fp8e4",
             "no-fast-relayout")  # fmt: skip


def compile_text(text: str, filename: str) -> Callable[[Any, str], str]:
    """``build(config, target) → printed loop IR after the passes`` for a .pir or HLO program."""
    from pyprecision import ir

    if text.lstrip().startswith("HloModule"):
        from pyprecision import hlo
        from pyprecision.emulate import compile_hlo

        module = hlo.parse(text, filename=filename)

        def build_hlo(config: Any, target: str) -> str:
            compiled = compile_hlo(module, config, target, filename=filename, text=text)
            return ir.to_text(compiled.lowered.module)

        return build_hlo

    from pyprecision.passes import run_pipeline

    def build_pir(config: Any, target: str) -> str:
        m = ir.parse(text, filename=filename)
        run_pipeline(m, config, target)
        return ir.to_text(m)

    return build_pir


def inert_flag_notes(build: Callable[[Any, str], str], config: Any, target: str | None) -> list[str]:
    """One sentence per given flag that leaves the compiled program unchanged."""
    tgt = target or "gen2"
    variants: list[tuple[str, Any, str, str]] = []
    if config.fp32_cast_mode != "none":
        variants.append((f"the mode {config.fp32_cast_mode}",
                         dataclasses.replace(config, fp32_cast_mode="none"), tgt,
                         "no operation of the kind it casts is in fp32"))  # fmt: skip
    relayout = [t for t in config.fast_math if t in _RELAYOUT]
    if relayout:
        rest = tuple(t for t in config.fast_math if t not in _RELAYOUT)
        variants.append(("--fast-math " + " ".join(relayout),
                         dataclasses.replace(config, fast_math=rest), tgt,
                         "no matmult-based transpose is cast in this mode"))  # fmt: skip
    if not config.enable_mixed_precision_accumulation:
        variants.append(("--disable-mixed-precision-accumulation",
                         dataclasses.replace(config, enable_mixed_precision_accumulation=True), tgt,
                         "no reduction to accumulate"))  # fmt: skip
    if config.enable_saturate_infinity:
        variants.append(("--enable-saturate-infinity",
                         dataclasses.replace(config, enable_saturate_infinity=False), tgt,
                         "no operation that could turn an infinity into NaN"))  # fmt: skip
    if config.internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3:
        variants.append(("--experimental-unsafe-fp8e4m3fn-as-fp8e4m3",
                         dataclasses.replace(
                             config, internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3=False), tgt,
                         "no float8e4m3fn tensor or value"))  # fmt: skip
    if target not in (None, "gen2"):
        variants.append((f"--target {target}", config, "gen2",
                         "nothing in it differs from gen2"))  # fmt: skip
    if not variants:
        return []
    base = build(config, tgt)
    return [f"{flag} changes nothing in this program ({why})"
            for flag, cfg, t, why in variants if build(cfg, t) == base]  # fmt: skip


def warn_inert_flags(command: str, text: str, filename: str, config: Any, target: str | None) -> None:
    """Print ``pyprecision COMMAND: note: ...`` on stderr for every inert flag."""
    for note in inert_flag_notes(compile_text(text, filename), config, target):
        print(f"pyprecision {command}: note: {note}", file=sys.stderr)


def warn_inert(command: str, args: argparse.Namespace) -> None:
    """Warn about the precision flags that change nothing in ``args.program`` (verify, explain)."""
    from pyprecision.frontend import config_from_namespace
    from pyprecision.io import read_text
    from pyprecision.tools._options import read_program
    from pyprecision.verify import is_hlo_path

    hlo = is_hlo_path(args.program)  # a module in any form (text, .hlo.pb, ...), or a .pir
    text = read_program(args.program, ir=not hlo)[0] if hlo else read_text(args.program, "a program")
    warn_inert_flags(command, text, args.program, config_from_namespace(args), args.target)
