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
time, never a result. Off Linux (:func:`can_fork`) nothing is forked and the result is None.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

__all__ = ["Forked", "can_fork", "forked"]


def can_fork() -> bool:
    """Whether work is forked here: Linux only. macOS has ``os.fork`` but its system libraries
    (Accelerate, the Objective-C runtime) are not safe in a forked child, which could then hang
    rather than fail; elsewhere there is no ``os.fork``."""
    return hasattr(os, "fork") and sys.platform.startswith("linux")


class Forked:
    """A child running one function; :meth:`result` waits for it."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self._done = False
        self._result: Any = None

    def result(self) -> Any:
        """The function's return value, or None if the child failed (or nothing was forked)."""
        if self._done:
            return self._result
        self._done = True
        if self.pid <= 0:
            return None
        chunks = []
        with os.fdopen(self.fd, "rb") as r:
            while chunk := r.read(1 << 20):
                chunks.append(chunk)
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
    child = Forked(pid, r)
    try:
        yield child
    finally:
        if not child._done:
            child.cancel()
