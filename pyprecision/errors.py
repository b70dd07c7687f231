"""One small exception hierarchy for the whole package.

Every error a user can provoke with bad input is one of these; the CLI turns them into a single
line on stderr and a non-zero exit code.
"""
from __future__ import annotations

import sys


class PyPrecisionError(Exception):
    """Base of every error pyprecision raises on purpose."""


class FormatError(PyPrecisionError, ValueError):
    """Unknown format, rounding or NaN-policy name (the message lists the valid ones)."""


class CastError(PyPrecisionError, ValueError):
    """A cast cannot be performed on these arguments (dtype, shape, out= ...)."""


class CoreError(PyPrecisionError, RuntimeError):
    """The C core returned a non-zero status."""


class FlagError(PyPrecisionError, ValueError):
    """An unknown compiler flag, an unknown choice, or conflicting precision flags."""


class ParseError(PyPrecisionError, ValueError):
    """Malformed IR or HLO text; ``str()`` is ``file:line:col: message``."""

    def __init__(self, message: str, line: int = 0, col: int = 0, filename: str = "<string>"):
        self.message = message
        self.line = line
        self.col = col
        self.filename = filename
        super().__init__(f"{filename}:{line}:{col}: {message}")


class VerifyError(PyPrecisionError, ValueError):
    """An IR or HLO module fails verification."""


class PassError(PyPrecisionError, RuntimeError):
    """A pass cannot run (unknown pass name, bad option, broken invariant)."""


class EmulationError(PyPrecisionError, ValueError):
    """A program cannot be evaluated on these inputs (missing input, wrong shape, unknown op)."""


class LoweringError(PyPrecisionError, ValueError):
    """An HLO construct the HLO → loop-IR lowering does not handle (``file:line:col: message``).

    ``refusal`` is the key of the refusal record (``pyprecision.hlo.opcodes.REFUSALS``, decision
    OP15) when the lowering refuses a well-formed module — the message then ends with that record's
    reason — and None for a malformed one (a missing attribute, a type error)."""

    def __init__(self, message: str, refusal: str | None = None):
        super().__init__(message)
        self.refusal = refusal

    def __reduce__(self) -> tuple[type, tuple[str, str | None]]:
        return (type(self), (str(self), self.refusal))


class DumpError(PyPrecisionError, ValueError):
    """A dump or checkpoint file is truncated, malformed or does not match its declared shape."""


class EngineError(PyPrecisionError, RuntimeError):
    """A distributed engine (Dask) is not installed, cannot be reached, or lost a task."""


def add_note(exc: BaseException, note: str) -> None:
    """Attach ``note`` to ``exc`` (PEP 678): ``exc.add_note`` on Python 3.11+, and the same
    ``__notes__`` list on 3.10, where ``BaseException.add_note`` does not exist yet."""
    if sys.version_info >= (3, 11):
        exc.add_note(note)
        return
    notes = getattr(exc, "__notes__", None)
    if not isinstance(notes, list):
        notes = []
        exc.__notes__ = notes  # type: ignore[attr-defined]
    notes.append(note)
