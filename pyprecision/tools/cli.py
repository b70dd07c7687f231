"""``pyprecision`` — one command, one module per subcommand.

Each module in :data:`COMMAND_MODULES` exposes ``register(subparsers)``, which adds its parser and
sets ``func=run`` where ``run(args) -> int`` returns the exit code. Errors from
:mod:`pyprecision.errors` (and OSError) become one line on stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every available subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="pyprecision",
        description="Bit-exact emulation of neuronx-cc's numeric lowering and cast engine.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"pyprecision.tools.{name}")
        except ModuleNotFoundError as exc:  # a command not built yet
            if exc.name == f"pyprecision.tools.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
