"""Command-line options and inputs shared by the subcommands, declared once.

* the cast options (``--rounding``, ``--saturate/--no-saturate``, ``--nan``, ``--seed``,
  ``--threads``) of ``cast``, ``verify`` and ``reencode``, and the keyword arguments they make;
* the hardware generation (``--target``) of ``opt``, ``explain`` and ``verify``;
* reading a program or HLO module (UTF-8 text; an empty program is a ParseError) and a program's
  inputs (an .npz through :mod:`pyprecision.io`'s readers, raw bits relabelled by ``__dtypes__``).

Registering options imports nothing heavy: the command line stays quick to start.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from pyprecision.errors import CastError, ParseError

__all__ = [
    "TARGETS",
    "ROUNDING_CHOICES",
    "NAN_CHOICES",
    "MAX_THREADS",
    "thread_count",
    "add_cast_options",
    "add_threads_argument",
    "cast_options",
    "add_target_argument",
    "read_program",
    "read_program_inputs",
    "quiet_broken_pipe",
    "EXIT_BROKEN_PIPE",
    "check_emulation_memory",
    "printable",
]

#: Exit code after the reader of stdout went away: 128 + SIGPIPE, what a shell reports for a
#: command that SIGPIPE ended (``yes | head`` ends ``yes`` so).
EXIT_BROKEN_PIPE = 141

#: Hardware generations (tests/tools check them against ``pyprecision.passes.GENERATIONS``).
TARGETS = ("gen2", "gen3", "gen4")
#: Rounding modes and NaN policies (checked against ``pyprecision.kernel``'s).
ROUNDING_CHOICES = ("rne", "rtz", "rna", "stochastic")
NAN_CHOICES = ("ml_dtypes", "nvidia")
#: The most worker threads a command accepts (the C core takes a C int).
MAX_THREADS = 4096


def thread_count(text: str) -> int:
    """argparse type of ``--threads``: an integer from 1 to MAX_THREADS."""
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= n <= MAX_THREADS:
        raise argparse.ArgumentTypeError(f"{n} threads: expected 1 to {MAX_THREADS}")
    return n


def add_cast_options(
    p: Any, *, seed_help: str = "stochastic rounding: generator seed (default: random)",
    threads: bool = True,
) -> None:
    """Add the cast options to parser or group ``p``."""
    p.add_argument("--rounding", default="rne", choices=list(ROUNDING_CHOICES))
    sat = p.add_mutually_exclusive_group()
    sat.add_argument("--saturate", dest="saturate", action="store_true", default=None,
                     help="overflow and ±inf go to ±max (default for fp8 formats)")
    sat.add_argument("--no-saturate", dest="saturate", action="store_false",
                     help="overflow goes to ±inf, or NaN for fp8e4m3fn (default for bf16/fp16/fp32r)")
    p.add_argument("--nan", default="ml_dtypes", choices=list(NAN_CHOICES), help="NaN encoding")
    p.add_argument("--seed", type=int, default=None, help=seed_help)
    if threads:
        add_threads_argument(p)


def add_threads_argument(p: Any) -> None:
    """``--threads N`` on parser or group ``p``: the worker threads of every parallel part of the
    command (the CLI's main applies it around the command, pyprecision.kernel.thread_limit)."""
    p.add_argument("--threads", type=thread_count, default=None, metavar="N",
                   help="worker threads of the C core, and of tune and verify's second process "
                        "(default: PYPRECISION_THREADS, else the cores this process may run on); "
                        "results never depend on it")


def cast_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``pyprecision.encode`` from parsed cast options."""
    opts: dict[str, Any] = {"rounding": args.rounding, "saturate": args.saturate,
                            "nan": args.nan, "threads": getattr(args, "threads", None)}
    if args.rounding == "stochastic":
        opts["seed"] = args.seed
    elif args.seed is not None:
        raise CastError("--seed is only used with --rounding stochastic")
    return opts


def add_target_argument(p: Any, default: str | None = None, help: str | None = None) -> None:
    """Add ``--target {gen2,gen3,gen4}`` to parser or group ``p``."""
    p.add_argument("--target", choices=list(TARGETS), default=default,
                   help=help or "hardware generation (default: %(default)s)")


def _has_content(text: str) -> bool:
    """Whether IR text holds anything but blank lines and comments (``//`` or ``#``)."""
    for line in text.splitlines():
        s = line.strip()
        if s and not s.startswith(("//", "#")):
            return True
    return False


#: the forms of an HLO module every command reads (``hlo.load``'s), for the help texts
MODULE_FORMS = (
    "an HLO module: text, HloModuleProto (.pb, .pb.gz) or StableHLO (.mlir, .mlirbc: needs the jax "
    "extra)")


def read_program(path: str, *, ir: bool = True) -> tuple[str, str]:
    """(text, file name) of a program (``ir``: a .pir loop-IR program, else an HLO module in any
    form ``hlo.load`` reads — text, .hlo.pb, gzip, StableHLO — as HLO text); ``-`` reads stdin.
    Not UTF-8 (a .npy given as a program), not a module, missing: DumpError; an IR program
    with nothing but comments: ParseError at 1:1 (it has no function to run)."""
    from pyprecision.io import decode_text, read_text

    if not ir:
        from pyprecision.verify import read_module_text

        return read_module_text(path)
    if path == "-":
        name = "<stdin>"
        text = decode_text(sys.stdin.buffer.read(), name, "a program")
    else:
        name = path
        text = read_text(path, "a program")
    if ir:
        check_ir_text(text, name)
    return text, name


def check_ir_text(text: str, name: str) -> None:
    """ParseError at 1:1 for IR text with nothing but blank lines and comments."""
    if not _has_content(text):
        raise ParseError("empty program: it defines no function", 1, 1, name)


def read_program_inputs(path: str) -> dict[str, np.ndarray]:
    """A program's inputs from an .npz (or .npy / safetensors) through the io readers: by name,
    raw bits relabelled by a ``__dtypes__`` entry (which is dropped). Truncated or malformed
    files are a DumpError naming the file."""
    from pyprecision.verify import read_inputs

    return read_inputs(path)


def quiet_broken_pipe() -> int:
    """Point stdout at /dev/null (so the interpreter's last flush cannot fail and print a second
    error) and return EXIT_BROKEN_PIPE; nothing is printed."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout has no file descriptor (captured): nothing to flush
        pass
    return EXIT_BROKEN_PIPE


def _memory() -> int:
    """Bytes of physical memory (a large default where the platform does not say)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 1 << 40


def check_emulation_memory(text: str, name: str, budget: int | None = None) -> None:
    """Refuse (EmulationError), before anything is allocated, an IR program the emulator cannot
    hold: it keeps every tensor and value in memory (up to 8 bytes an element while computing), so
    any one of them larger than ``budget`` (default: physical memory) would end in MemoryError."""
    from pyprecision import ir
    from pyprecision.errors import EmulationError

    limit = _memory() if budget is None else budget
    for f in ir.parse(text, filename=name).functions:
        items = [*f.tensors, *f.values()]
        for obj in items:
            shape = tuple(getattr(obj, "shape", ()) or ())
            n = 1
            for d in shape:
                n *= int(d)
            if n * 8 > limit:
                raise EmulationError(
                    f"{name}: {obj} {getattr(obj, 'dtype', '')}{list(shape)} has {n} elements: "
                    f"more than the emulator can hold in memory ({limit >> 20} MiB here)"
                )


def printable(message: str) -> str:
    """``message`` as one terminal-safe line: control characters (line breaks, vertical tabs,
    escape sequences quoted from a malformed input) become ``\\xNN`` / ``\\n`` escapes."""
    if message.isprintable():
        return message
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
