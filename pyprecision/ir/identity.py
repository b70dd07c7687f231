"""The identity-matrix test of constants, one for every reader (decision P29): the passes'
matmult-transpose test (P8) and the emulator's PE-transpose shortcut (EM-12) both ask it, mostly
of the lowering's few identity constants, again and again.

A read-only array found to be an identity is remembered by object (a weak reference: forgotten
when it dies); a writeable one is tested each time, so a write into it is seen. The callers'
arrays that are read-only are never written while they live: the lowering's constants (P28) and
the emulator's values, read-only views of results it never writes again (EM-9) — so a read-only
array given to this test is taken to be constant (a read-only view of an array written through
another name is not one: do not give it).
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

__all__ = ["is_identity_matrix"]

#: ``id`` → a weak reference to a read-only array found to be an identity
_IDENTITIES: dict[int, weakref.ref[np.ndarray]] = {}


def is_identity_matrix(value: np.ndarray) -> bool:
    """``value`` is a square 2-D array equal to the identity, as ``np.array_equal(value,
    np.eye(n))`` decides it (-0 counts as 0; a NaN anywhere makes it not one; a 0×0 array is
    one), tested without building the identity: every diagonal element 1 and exactly n nonzero
    elements. A read-only array found to be one is remembered (see the module docstring)."""
    value = np.asarray(value)
    known = _IDENTITIES.get(id(value))
    if known is not None and known() is value:
        return True
    if not _is_identity(value):
        return False
    if not value.flags.writeable:
        key = id(value)
        _IDENTITIES[key] = weakref.ref(value, functools.partial(_forget, key))
    return True


def _is_identity(value: np.ndarray) -> bool:
    n = value.shape[0] if value.ndim == 2 else -1
    if value.shape != (n, n):
        return False
    if value.dtype.kind not in "biufc":  # ml_dtypes' narrow floats: exact in float32
        value = value.astype(np.float32)
    if not bool((np.diagonal(value) == 1).all()):
        return False
    # float32: n nonzero words, all on the diagonal, decide it (4x faster than counting floats);
    # more words may still be an identity with -0 off the diagonal, which the float count sees
    if value.dtype == np.float32 and value.flags.c_contiguous \
            and int(np.count_nonzero(value.view(np.uint32))) == n:
        return True
    return int(np.count_nonzero(value)) == n


def _forget(key: int, _ref: object) -> None:
    _IDENTITIES.pop(key, None)
