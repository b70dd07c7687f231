"""The one place a command reads a module: the bytes (a local path, a URL, ``-`` for stdin)
through ``pyprecision.io``, the form (text, .hlo.pb, gzip, StableHLO) through
:func:`pyprecision.hlo.module_text`. verify, explain and every CLI command call
:func:`read_module_text`; none reads or parses a module file on its own."""
from __future__ import annotations

import sys

from pyprecision.errors import DumpError

__all__ = ["read_module_text"]


def read_module_text(path: str) -> tuple[str, str]:
    """(HLO text, name) of the module at ``path`` in any form :func:`pyprecision.hlo.load`
    reads. Missing, a directory, unreadable, not a module: one DumpError naming ``path``."""
    from pyprecision import hlo
    from pyprecision.io import is_dir, is_file, read_bytes

    if path == "-":
        return hlo.module_text(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    if is_dir(path):
        raise DumpError(f"{path}: is a directory, not an HLO module")
    if not is_file(path):
        raise DumpError(f"{path}: no such file")
    try:
        data = read_bytes(path)
    except OSError as exc:
        raise DumpError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return hlo.module_text(data, path), path
