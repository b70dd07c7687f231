"""The one error ``tune`` raises for bad input of its own (budget, metric, cost table, inputs)."""

from __future__ import annotations

from pyprecision.errors import PyPrecisionError

__all__ = ["TuneError"]


class TuneError(PyPrecisionError, ValueError):
    """A bad budget, metric, cost table or input; the CLI prints it as one line and exits 2."""
