"""The one place a command reads a module: the bytes (a local path, a URL, ``-`` for stdin)
through ``pyprecision.io``, the form (text, .hlo.pb, gzip, StableHLO) through
:func:`pyprecision.hlo.module_text`. verify, explain and every CLI command call
:func:`read_module_text`; none reads or parses a module file on its own."""
from __future__ import annotations

import sys

__all__ = ["read_module_text"]


def read_module_text(path: str) -> tuple[str, str]:
    """(HLO text, name) of the module at ``path`` in any form :func:`pyprecision.hlo.load`
    reads. Missing, a directory, unreadable, not a module: one DumpError naming ``path``."""
    from pyprecision import hlo
    from pyprecision.io import read_input_bytes

    if path == "-":
        return hlo.module_text(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    return hlo.module_text(read_input_bytes(path, "an HLO module"), path), path
