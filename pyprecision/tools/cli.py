"""``pyprecision`` — one command, one module per subcommand.

Each module in :data:`COMMAND_MODULES` exposes ``register(subparsers)``, which adds its parser and
sets ``func=run`` where ``run(args) -> int`` returns the exit code. Errors from
:mod:`pyprecision.errors` (and OSError) become one line on stderr and exit code 2, never a traceback.

Start-up stays cheap: :data:`COMMANDS` declares each subcommand's name and help line, so ``--help``
and the parser of one subcommand are built without importing the other commands' modules (and with
them numpy and the rooms); only the module of the command that runs is imported.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Iterator, Sequence

from pyprecision.errors import PyPrecisionError

#: Subcommand modules, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "demo",
    "formats_cmd",
    "cast_cmd",
    "verify_cmd",
    "explain_cmd",
    "reencode_cmd",
    "opt_cmd",
    "flags_cmd",
    "hlo_cmd",
    "tune_cmd",
)

#: The light declarations: module -> ((command, help line), ...) as its ``register`` adds them
#: (tests/tools/test_cli_startup.py checks that they agree).
COMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "demo": (("demo", "a short tour on bundled sample data"),),
    "formats_cmd": (("formats", "print the format table"),),
    "cast_cmd": (("cast", "cast a .npy array to a format (writes raw codes)"),
                 ("decode", "decode a .npy of raw codes to float32")),
    "verify_cmd": (("verify", "compare a device dump with the emulated cast or program, bit for bit"),),
    "explain_cmd": (("explain", "per op: dtype before/after the passes, which rule decided it, "
                                "its error"),),
    "reencode_cmd": (("reencode", "re-encode a checkpoint (safetensors, sharded, .npz, .npy) into "
                                  "another format"),),
    "opt_cmd": (("opt", "run AutoCast → DTypeMutator → cast elimination on a loop-IR program"),),
    "flags_cmd": (("flags", "canonicalize neuronx-cc precision flags and show the pass "
                            "configuration"),),
    "hlo_cmd": (("hlo-opt", "run spec-004 HLO passes on an HLO module"),
                ("hlo-run", "evaluate an HLO module on inputs from an .npz")),
    "tune_cmd": (("tune", "the cheapest neuronx-cc precision flags within an error budget"),),
}


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(
        prog="pyprecision",
        description="Bit-exact emulation of neuronx-cc's numeric lowering and cast engine.",
    )
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND")


def _register(sub: argparse._SubParsersAction, name: str) -> None:
    try:
        module = importlib.import_module(f"pyprecision.tools.{name}")
    except ModuleNotFoundError as exc:  # a command not built yet
        if exc.name == f"pyprecision.tools.{name}":
            return
        raise
    module.register(sub)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Without ``command``, every subcommand is registered in full; with it,
    only the module that provides ``command`` is imported and the others are declared by name and
    help line (:data:`COMMANDS`), which is all ``--help`` and the choice check read."""
    parser, sub = _top_parser()
    for name in COMMAND_MODULES:
        declared = COMMANDS.get(name)
        if command is None or declared is None or any(c == command for c, _ in declared):
            _register(sub, name)
        else:
            for cmd, help_line in declared:
                sub.add_parser(cmd, help=help_line, add_help=False)
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand named on the command line ('' when none: only options, e.g. --help)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
        if arg == "--":
            break
    return ""


@contextlib.contextmanager
def _threads_in_environment(threads: int | None) -> Iterator[None]:
    """PYPRECISION_THREADS set to ``threads`` (when given) for the command, restored after."""
    if threads is None:
        yield
        return
    old = os.environ.get("PYPRECISION_THREADS")
    os.environ["PYPRECISION_THREADS"] = str(threads)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYPRECISION_THREADS", None)
        else:
            os.environ["PYPRECISION_THREADS"] = old


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(a.startswith(("--neuron-cc-flags", "--from-command")) for a in argv):
        try:  # they become the flags they hold (tools/_neuron_flags); imported only then
            from pyprecision.tools._neuron_flags import expand_neuron_options

            argv, notes = expand_neuron_options(argv)
        except PyPrecisionError as exc:
            from pyprecision.tools._options import printable

            print(f"pyprecision {argv[0]}: error: {printable(str(exc))}", file=sys.stderr)
            return 2
        for note in notes:
            print(note, file=sys.stderr)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        from pyprecision.kernel import thread_limit

        # --threads (and PYPRECISION_THREADS, checked here) cap every parallel part of the command,
        # in the worker processes it starts too (verify's many dumps: they read the variable)
        threads = getattr(args, "threads", None)
        with thread_limit(threads), _threads_in_environment(threads):
            return int(args.func(args) or 0)
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, like other tools
        from pyprecision.tools._options import quiet_broken_pipe

        return quiet_broken_pipe()
    except (PyPrecisionError, OSError) as exc:
        from pyprecision.tools._options import printable

        print(f"pyprecision {args.command}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def console() -> int:
    """The console script and ``python -m pyprecision.tools.cli``: :func:`main`, then the process
    ends. What the command leaves on the heap is freed by the OS when it does; frozen out of the
    cyclic collector first (``gc.freeze``), it is not walked by the interpreter's last collection,
    which would only free it: 1.2 s after ``tune`` on MiniLM-L6, whose search keeps millions of
    objects in reference cycles (decision TU22). :func:`main` itself freezes nothing, so a caller
    that runs commands in its own process keeps its collector as it was."""
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
