"""The search space of ``tune``: every neuronx-cc flag the frontend knows that changes numerics, in
the spelling a user pastes into ``NEURON_CC_FLAGS``, valid combinations only (each is parsed by
``frontend.parse_flags``), one flag set per key the caller gives (``tune`` gives
``FlagSetRunner.program_key``: what the lowering and the passes read; decisions TU1, TU8).

Axes: the precision mode (``--auto-cast`` × ``--auto-cast-type``, and ``--fast-math
fp32-cast-matmult`` for the one mode no pair reaches) × the relayout token × mixed-precision
accumulation × saturate-infinity × fp8e4m3fn-as-fp8e4m3."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from pyprecision.frontend import PrecisionConfig, parse_flags

__all__ = ["FlagSet", "MODE_FLAGS", "RELAYOUT_FLAGS", "flag_sets"]

#: each precision mode once, in the user's spelling (tf32 is fp32r). Two modes have no
#: ``--auto-cast`` pair and are reached through ``--fast-math``: ``matmult`` (bf16 matmuls, fp16
#: transposes) and ``all-fp32r`` (``all`` + ``tf32`` is downgraded to ``matmult`` + ``tf32``)
MODE_FLAGS: dict[str, tuple[str, ...]] = {
    "none": ("--auto-cast", "none"),
    "matmult-bf16": ("--auto-cast", "matmult", "--auto-cast-type", "bf16"),
    "matmult-fp16": ("--auto-cast", "matmult", "--auto-cast-type", "fp16"),
    "matmult-fp32r": ("--auto-cast", "matmult", "--auto-cast-type", "tf32"),
    "matmult-fp8e4": ("--auto-cast", "matmult", "--auto-cast-type", "fp8_e4m3"),
    "matmult": ("--fast-math", "fp32-cast-matmult"),
    "all": ("--auto-cast", "all", "--auto-cast-type", "bf16"),
    "experimental-all-fp16": ("--auto-cast", "all", "--auto-cast-type", "fp16"),
    "all-fp8e4": ("--auto-cast", "all", "--auto-cast-type", "fp8_e4m3"),
    "all-fp32r": ("--fast-math", "fp32-cast-all-fp32r"),
}
#: the relayout tokens by effect: the mode's own transpose dtype (no token), fp32 (lossless),
#: fp32r, fp8e4 (``fast-relayout`` and ``fast-relayout-fp32`` repeat two of these)
RELAYOUT_FLAGS: tuple[str | None, ...] = (None, "no-fast-relayout", "fast-relayout-fp32r",
                                          "fast-relayout-fp8e4")  # fmt: skip
ACCUMULATION_FLAG = "--disable-mixed-precision-accumulation"
SATURATE_FLAG = "--enable-saturate-infinity"
FP8_AS_E4M3_FLAG = "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"


@dataclass(frozen=True)
class FlagSet:
    """One point of the search: its flags as typed (``argv``) and the config they parse to."""

    argv: tuple[str, ...]
    config: PrecisionConfig = field(compare=False, repr=False)

    @property
    def cli(self) -> str:
        """The flags as one line, ready for ``NEURON_CC_FLAGS``."""
        return " ".join(self.argv)

    @property
    def mode(self) -> str:
        """The fp32-cast mode the flags select."""
        return self.config.fp32_cast_mode


def _argv(mode: str, relayout: str | None, narrow_acc: bool, saturate: bool,
          fp8: bool) -> tuple[str, ...]:  # fmt: skip
    argv = list(MODE_FLAGS[mode])
    if relayout is not None:
        if "--fast-math" in argv:
            argv.append(relayout)  # one --fast-math list
        else:
            argv += ["--fast-math", relayout]
    if narrow_acc:
        argv.append(ACCUMULATION_FLAG)
    if saturate:
        argv.append(SATURATE_FLAG)
    if fp8:
        argv.append(FP8_AS_E4M3_FLAG)
    return tuple(argv)


def flag_sets(*, accumulation: bool = True, saturate: bool = True, fp8: bool = True,
              modes: tuple[str, ...] | None = None,
              key: Callable[[PrecisionConfig], Hashable] | None = None) -> list[FlagSet]:  # fmt: skip
    """Every valid flag set of the space, ``--auto-cast none`` first. An axis turned off
    (``accumulation``/``saturate``/``fp8`` False) stays at its default: the caller has measured
    that it does not change the program (decision TU1). Mode ``none`` takes no relayout token
    (its transposes stay fp32 whatever the token: ``Target.get_matmult_operand_type``). With
    ``key`` (e.g. ``FlagSetRunner.program_key``), of flag sets whose configs have one key the
    shortest (the first of the shortest) is kept, where the first of them stood."""
    out: list[FlagSet] = []
    seen: dict[Hashable, int] = {}  # key -> its set's place in out
    for mode in modes or tuple(MODE_FLAGS):
        relayouts = (None,) if mode == "none" else RELAYOUT_FLAGS
        for r, a, s, f in itertools.product(relayouts, (False, True) if accumulation else (False,),
                                            (False, True) if saturate else (False,),
                                            (False, True) if fp8 else (False,)):  # fmt: skip
            argv = _argv(mode, r, a, s, f)
            fs = FlagSet(argv, parse_flags(list(argv)))  # FlagError if it were not valid
            if key is None:
                out.append(fs)
                continue
            k = key(fs.config)
            at = seen.get(k)
            if at is None:
                seen[k] = len(out)
                out.append(fs)
            elif len(argv) < len(out[at].argv):  # e.g. --fast-math fp32-cast-matmult <token> (P32)
                out[at] = fs
    return out
