"""Pause Python's cyclic garbage collector while building or rewriting large modules.

A module of 1e5 instructions holds ~1e6 live container objects; every full collection walks all
of them, which makes allocation-heavy work (parsing, rewriting) grow faster than linearly. Nothing
we allocate there is garbage, so collection is paused and the previous state restored afterwards.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic GC for the duration of the block (re-entrant; restores the old state)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
