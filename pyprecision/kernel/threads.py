"""How many worker threads the C core's parallel parts use (docs/decisions/kernel.md K10).

Every call into the core that can run in parallel (casts, decodes, the PE dot, the integer dot)
takes its thread count from :func:`resolve`:

1. the call's own ``threads=`` argument, when given;
2. else the innermost :func:`thread_limit` in force (``run_hlo(..., threads=)`` and the CLI's
   ``--threads`` set one);
3. else the ``PYPRECISION_THREADS`` environment variable (a positive integer);
4. else the cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where the
   platform has no affinity mask).

A bad value anywhere (``PYPRECISION_THREADS=abc``, ``0``, ``threads=-1``) is a one-line
:class:`~pyprecision.errors.CastError`, raised when a thread count is needed.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from pyprecision.errors import CastError

__all__ = ["ENV", "MAX_THREADS", "default_threads", "resolve", "thread_limit"]

#: The environment variable read when neither ``threads=`` nor a :func:`thread_limit` says.
ENV = "PYPRECISION_THREADS"
#: The largest count accepted (the core takes a C int and caps its pool at 64 workers).
MAX_THREADS = 4096

_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("pyprecision_threads",
                                                                   default=None)


def check(threads: Any, what: str = "threads") -> int:
    """``threads`` as an int from 1 to MAX_THREADS, else a CastError naming ``what``."""
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)):
        raise CastError(f"{what} must be a positive integer or None, got {threads!r}")
    if not 1 <= threads <= MAX_THREADS:
        raise CastError(f"{what} must be from 1 to {MAX_THREADS}, got {threads}")
    return int(threads)


def _env_threads() -> int | None:
    text = os.environ.get(ENV)
    if text is None or not text.strip():
        return None
    try:
        n = int(text.strip(), 10)
    except ValueError:
        raise CastError(f"{ENV}={text!r}: not an integer (a thread count from 1 to "
                        f"{MAX_THREADS})") from None
    if not 1 <= n <= MAX_THREADS:
        raise CastError(f"{ENV}={text!r}: a thread count must be from 1 to {MAX_THREADS}")
    return n


def _affinity() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """The count a call without ``threads=`` uses: the innermost :func:`thread_limit`, else
    ``PYPRECISION_THREADS``, else the cores this process may run on."""
    limit = _LIMIT.get()
    if limit is not None:
        return limit
    env = _env_threads()
    return env if env is not None else _affinity()


def resolve(threads: Any = None) -> int:
    """The thread count of one call: ``threads`` when given (checked), else :func:`default_threads`."""
    return default_threads() if threads is None else check(threads)


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[int]:
    """Within the block, calls without ``threads=`` use ``threads`` workers (None: no new limit,
    but ``PYPRECISION_THREADS`` is still checked here, so a bad value fails before any work).
    Yields the count in force. The limit belongs to the current context (thread / task)."""
    if threads is None:
        yield default_threads()
        return
    token = _LIMIT.set(check(threads))
    try:
        yield int(threads)
    finally:
        _LIMIT.reset(token)
