"""Work done in a forked child while the parent does its own: ``tune`` compiles half of its flag
sets in a child on the second core and takes back their digests and costs (decision TU14);
``FlagSetRunner.run`` compiles and emulates half of its program keys in a child and takes back
their digests and outputs (decision V30).

The child is a ``fork`` of the parent: it starts with everything the parent has made (the parsed
module, the bound inputs, the lowerings), runs one function, sends its pickled result through a
pipe and leaves with ``os._exit`` (no ``atexit`` handler, no flush of the parent's buffers). The
C core's thread pool restarts its workers in a child (``csrc/pool.c``'s ``pthread_atfork``).
Anything that goes wrong in the child (an exception, a crash, a result that does not unpickle)
makes :meth:`Forked.result` None: the parent then does that work itself, so a failing child costs
time, never a result. So does a child that hangs: a fork of a process with other threads (JAX's,
a user's) can deadlock in the child on a lock one of them held, so the parent waits for the child
at most :data:`PATIENCE` times as long as it took over its own share, and never less than
:data:`GRACE` seconds, then kills it (decision V31). Off Linux (:func:`can_fork`) nothing is
forked and the result is None.
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

__all__ = ["GRACE", "PATIENCE", "Forked", "can_fork", "forked"]

#: How much longer than the parent's own share (from the fork to its call of ``result``) the
#: parent waits for the child before it kills it and does the child's work itself (V31).
PATIENCE = 4.0
#: The least time, in seconds, the parent waits for the child after its own share.
GRACE = 60.0

# What Python (3.12+: "This process is multi-threaded, use of fork() may lead to deadlocks in the
# child.") and JAX ("os.fork() was called. os.fork() is incompatible with multithreaded code, ...")
# warn at a fork: the hazard is real, and handled here by the deadline, so the user is not told.
_FORK_WARNING = r".*multi-?threaded.*fork|.*fork.*multi-?threaded"  # any category


def can_fork() -> bool:
    """Whether work is forked here: Linux only. macOS has ``os.fork`` but its system libraries
    (Accelerate, the Objective-C runtime) are not safe in a forked child, which could then hang
    rather than fail; elsewhere there is no ``os.fork``."""
    return hasattr(os, "fork") and sys.platform.startswith("linux")


class Forked:
    """A child running one function; :meth:`result` waits for it."""

    def __init__(self, pid: int, fd: int, started: float = 0.0) -> None:
        self.pid, self.fd = pid, fd
        self.started = started  # time.monotonic() at the fork
        self._done = False
        self._result: Any = None

    def result(self, patience: float | None = None, grace: float | None = None) -> Any:
        """The function's return value, or None if the child failed (or nothing was forked), or
        did not finish within ``max(grace, patience * (now - fork))`` seconds from now (by
        default :data:`GRACE` and :data:`PATIENCE`): it is then killed (V31)."""
        if self._done:
            return self._result
        if self.pid <= 0:
            self._done = True
            return None
        now = time.monotonic()
        patience = PATIENCE if patience is None else patience
        deadline = now + max(GRACE if grace is None else grace, patience * (now - self.started))
        chunks = []
        poll = select.poll()  # not select.select: it refuses descriptors above 1023
        poll.register(self.fd, select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poll.poll(max(1, math.ceil(left * 1000))):
                self.cancel()  # hung (or too slow to be worth waiting for): the parent does it
                return None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        self._done = True
        os.close(self.fd)
        self.fd = -1
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            return None
        try:
            ok, value = pickle.loads(b"".join(chunks))
        except Exception:  # a truncated or garbled result: the child died while writing
            return None
        self._result = value if ok else None
        return self._result

    def cancel(self) -> None:
        """Stop the child (if any is left) and reap it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid > 0:
            with suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0
        self._done = True


@contextmanager
def forked(fn: Callable[[], Any], enabled: bool = True) -> Iterator[Forked]:
    """Run ``fn()`` in a forked child while the block runs; ``.result()`` inside the block is
    its return value (pickled across), or None when the child failed or nothing was forked
    (``enabled`` False, not Linux). Leaving the block early (an exception) kills the child."""
    if not (enabled and can_fork()):
        yield Forked(0, -1)
        return
    r, w = os.pipe()
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _FORK_WARNING)
        pid = os.fork()
    if pid == 0:  # the child: run, send, leave without running the parent's exit handlers
        code = 0
        try:
            os.close(r)
            try:
                payload = pickle.dumps((True, fn()), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:  # noqa: BLE001 - any failure: the parent does the work
                payload = pickle.dumps((False, None))
            with os.fdopen(w, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001 - the pipe closed under us: nothing to tell
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    child = Forked(pid, r, started)
    try:
        yield child
    finally:
        if not child._done:
            child.cancel()
