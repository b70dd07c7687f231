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

__all__ = ["freeze_made", "frozen_gc", "paused_gc"]

#: frozen_gc's nesting depth, and whether the outermost one froze (decision P30)
_depth = 0
_owner = False


@contextmanager
def paused_gc(keep: bool = False) -> Iterator[None]:
    """Disable the cyclic GC for the duration of the block (re-entrant; restores the old state).
    ``keep``: the block makes what a search keeps (a program's module: its copy, its passes, its
    digest): inside :func:`frozen_gc` that is frozen (:func:`freeze_made`) before the collector
    comes back on, so the collection the block's allocations set off at once does not walk it
    (decision P34); the few cycles the block dropped are then collected when the search ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            freeze_made()
        if was_enabled:
            gc.enable()


@contextmanager
def frozen_gc() -> Iterator[None]:
    """A search that makes and keeps many large modules (tune, verify's diagnosis; decision
    P30): inside, :func:`freeze_made` moves every object the collector tracks into its permanent
    generation (``gc.freeze``), so the collections that follow do not walk the modules made so
    far again; on leaving the outermost block they are unfrozen (``gc.unfreeze``) into the oldest
    generation and collected as usual from then on. Nothing is frozen when the collector was off
    or the process had frozen objects on entry (a ``gc.freeze()`` of the caller's, made before a
    fork say, is never undone). Re-entrant; process-wide, like the collector."""
    global _depth, _owner
    if _depth == 0:
        _owner = gc.isenabled() and gc.get_freeze_count() == 0
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _owner:
            _owner = False
            gc.unfreeze()


def freeze_made() -> None:
    """Inside :func:`frozen_gc` (when it owns the freeze): freeze what is tracked now, the
    module just made included. Outside: nothing."""
    if _depth and _owner:
        gc.freeze()
