"""The precision flags as a Neuron user has them: ``$NEURON_CC_FLAGS``, or a whole neuronx-cc
command line pasted from a log (``neuronx-cc --target=trn1 compile --framework XLA model.hlo.pb
--auto-cast matmult --output model.neff``).

The precision flags are picked out by the one parser of spec 003 (:func:`build_parser`'s own option
table: which options exist, how many values each takes, their choices); everything else — the
program name, ``compile``, the input path, ``--framework``, ``--output``, ``--verbose``, ``-O2`` ... —
is skipped and reported, never guessed at. ``--target`` is mapped to a generation by
:data:`NEURON_TARGETS` (decision F7, docs/frontend.md).
"""
from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from pyprecision.errors import FlagError
from pyprecision.frontend.config import parse_flags
from pyprecision.frontend.flags import build_parser

__all__ = ["NEURON_TARGETS", "NeuronCommand", "neuron_target_generation", "split_neuron_argv",
           "parse_neuron_command"]

#: neuronx-cc ``--target`` → generation (F7): NeuronCore-v2 (Trainium1, Inferentia2) is gen2,
#: NeuronCore-v3 (Trainium2) gen3, NeuronCore-v4 (Trainium3) gen4.
NEURON_TARGETS: dict[str, str] = {"trn1": "gen2", "trn1n": "gen2", "inf2": "gen2",
                                  "trn2": "gen3", "trn2n": "gen3", "trn3": "gen4"}


@dataclass(frozen=True)
class NeuronCommand:
    """What a Neuron command line says about precision.

    ``precision_argv`` are the spec-003 flags, as written (``parse_flags`` accepts them);
    ``target`` the generation its ``--target`` maps to (None when absent) and ``neuron_target``
    that ``--target`` as written; ``skipped`` every other token, in order.
    """

    precision_argv: tuple[str, ...]
    target: str | None
    neuron_target: str | None
    skipped: tuple[str, ...]


def neuron_target_generation(name: str) -> str:
    """The generation of a neuronx-cc ``--target`` (``trn1`` → ``gen2``); FlagError otherwise."""
    key = name.strip().lower()
    if key in NEURON_TARGETS:
        return NEURON_TARGETS[key]
    if key == "inf1":
        raise FlagError("--target=inf1 is neuron-cc's (NeuronCore-v1), not neuronx-cc's; "
                        "pyprecision emulates neuronx-cc (inf2, trn1, trn1n, trn2, trn2n, trn3)")
    raise FlagError(f"unknown neuronx-cc target {name!r}; known: "
                    + ", ".join(sorted(NEURON_TARGETS)))


def _options() -> dict[str, argparse.Action]:
    table: dict[str, argparse.Action] = {}
    for action in build_parser()._actions:  # the parser's own table: names, nargs, choices
        for s in action.option_strings:
            table[s] = action
    return table


def split_neuron_argv(tokens: Sequence[str]) -> NeuronCommand:
    """Split neuronx-cc arguments into precision flags, ``--target`` and the rest (see module
    docstring); the precision flags are then checked by :func:`parse_flags` (FlagError)."""
    table = _options()
    keep: list[str] = []
    skipped: list[str] = []
    targets: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        opt, eq, val = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        i += 1
        if opt == "--target":
            if not eq:
                if i >= len(tokens):
                    raise FlagError("--target needs a value")
                val, i = tokens[i], i + 1
            targets.append(val)
            continue
        action = table.get(opt)
        if action is None:
            skipped.append(tok)
            continue
        if eq or action.nargs == 0:
            keep.append(tok)
            continue
        keep.append(opt)
        if action.nargs == "+":  # --fast-math a b c: the tokens that are its choices
            start = i
            while i < len(tokens) and action.choices is not None and tokens[i] in action.choices:
                i += 1
            if i == start:
                raise FlagError(f"{opt} needs at least one of: "
                                + ", ".join(map(str, action.choices or [])))
            keep.extend(tokens[start:i])
            continue
        if i >= len(tokens):
            raise FlagError(f"{opt} needs a value")
        keep.append(tokens[i])
        i += 1
    gens = {neuron_target_generation(t) for t in targets}
    if len(gens) > 1:
        raise FlagError("conflicting --target values: " + ", ".join(targets))
    parse_flags(keep)  # the one parser says whether the precision flags are valid together
    return NeuronCommand(tuple(keep), gens.pop() if gens else None,
                         targets[-1] if targets else None, tuple(skipped))


def parse_neuron_command(text: str) -> NeuronCommand:
    """:func:`split_neuron_argv` of a shell-quoted string (``$NEURON_CC_FLAGS`` or a command line
    from a log); unbalanced quotes are a FlagError."""
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise FlagError(f"cannot split {text!r} as a shell command line: {exc}") from None
    return split_neuron_argv(tokens)
