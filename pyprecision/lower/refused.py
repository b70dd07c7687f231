"""Opcodes the lowering refuses on purpose, each with the reason and what to do instead
(decision L24)."""

from __future__ import annotations

__all__ = ["REFUSED"]

_RNG = ("is not lowered: the notes of neuronx-cc do not say which generator the device runs for "
        "it, so its bits cannot be emulated (an emulation would give XLA's {what} bits, not the "
        "device's). Draw the random bits with jax.random (its threefry is integer HLO, which "
        "lowers) or pass them in as an input; `pyprecision hlo-run` without precision flags "
        "evaluates XLA's own generator")  # fmt: skip

#: opcode -> the sentence the located error ends with
REFUSED: dict[str, str] = {
    "rng-bit-generator": "rng-bit-generator " + _RNG.format(what="Philox / ThreeFry"),
    "rng": "rng " + _RNG.format(what="uniform / normal"),
}
