"""``--neuron-cc-flags "$NEURON_CC_FLAGS"`` and ``--from-command "neuronx-cc ... compile ..."``
for ``verify``, ``explain`` and ``hlo-run``: the flags as a Neuron user has them.

Both are expanded, where they stand on the command line, into the precision flags they hold and
``--target <generation>`` (pyprecision.frontend.parse_neuron_command: the one flag parser picks
them out; the neuronx-cc target is mapped by decision F7), before the command's parser runs; so
every later flag, and every rule of the command, applies as if they had been typed. A ``--target``
of the command that disagrees with the one in them is an error, not a silent override. What was
skipped (the input path, ``--output``, ``--framework``, ``-O2`` ...) is said in one note line.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence

from pyprecision.errors import FlagError

__all__ = ["COMMANDS", "NEURON_OPTIONS", "add_neuron_flag_arguments", "expand_neuron_options"]

COMMANDS = ("verify", "explain", "hlo-run")
NEURON_OPTIONS = ("--neuron-cc-flags", "--from-command")


def add_neuron_flag_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Register the two options (for ``--help``; main() expands them before parsing)."""
    p.add_argument("--neuron-cc-flags", metavar="FLAGS", default=None,
                   help='neuronx-cc flags as in $NEURON_CC_FLAGS (e.g. "--auto-cast matmult '
                        '--target=trn1"): the precision flags and --target are used, the rest '
                        "is skipped")
    p.add_argument("--from-command", metavar="COMMAND", default=None,
                   help="a neuronx-cc command line pasted from a log; as --neuron-cc-flags "
                        "(its input path and non-precision flags are skipped)")


def _explicit_target(argv: Sequence[str]) -> str | None:
    for i, a in enumerate(argv):
        if a == "--target" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--target="):
            return a.split("=", 1)[1]
    return None


def expand_neuron_options(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(``argv`` with each --neuron-cc-flags / --from-command replaced by the flags it holds,
    the note lines saying what was skipped); FlagError when they are malformed or disagree."""
    from pyprecision.frontend import parse_neuron_command

    if not argv or argv[0] not in COMMANDS or not any(
            a.split("=", 1)[0] in NEURON_OPTIONS for a in argv):
        return list(argv), []
    out: list[str] = []
    notes: list[str] = []
    targets: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        opt, eq, val = a.partition("=")
        i += 1
        if opt not in NEURON_OPTIONS:
            out.append(a)
            continue
        if not eq:
            if i >= len(argv):
                raise FlagError(f"{opt} needs a value (quote the flags: {opt} \"--auto-cast ...\")")
            val, i = argv[i], i + 1
        cmd = parse_neuron_command(val)
        out.extend(cmd.precision_argv)
        if cmd.target is not None:
            targets[f"{opt} (--target={cmd.neuron_target})"] = cmd.target
        if cmd.skipped:
            notes.append(f"pyprecision {argv[0]}: note: {opt}: not precision flags, skipped: "
                         + " ".join(cmd.skipped))
    explicit = _explicit_target(out)
    gens = set(targets.values()) | ({explicit} if explicit else set())
    if len(gens) > 1:
        said = [f"{k} → {v}" for k, v in targets.items()] + ([f"--target {explicit}"]
                                                             if explicit else [])
        raise FlagError("conflicting targets: " + "; ".join(said))
    if targets and explicit is None:
        out += ["--target", next(iter(targets.values()))]
    return out, notes
