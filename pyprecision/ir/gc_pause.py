"""Pause Python's cyclic garbage collector while building or rewriting a large loop-IR module.

A lowered real model (MiniLM-L6: 12 000 instructions) holds a few hundred thousand live container
objects. The passes, the lowering and the digests allocate tens of thousands more, which triggers
collections that walk every live object again: on MiniLM-L6 that was half to two thirds of the
precision passes' time (decision P24). What these steps allocate is the module itself, or garbage
that reference counting frees; the few cycles they drop (erased instructions and their values) are
collected once the collector runs again. ``hlo/_gc.py`` is the same for the HLO room, which may not
import this one.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


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
