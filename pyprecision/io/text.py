"""Text inputs (programs, HLO modules): read as UTF-8, or a DumpError that says what the file is."""

from __future__ import annotations

import os

from pyprecision.errors import DumpError
from pyprecision.io.remote import as_local, is_dir, is_file, read_bytes

__all__ = ["read_text", "decode_text", "read_input_bytes"]

#: First bytes of binary files a text input is often confused with, and what they are.
_MAGICS = (
    (b"\x93NUMPY", "a .npy array"),
    (b"PK\x03\x04", "a zip archive (.npz?)"),
    (b"\x7fELF", "an executable"),
)


def read_text(path: str | os.PathLike[str], what: str = "text") -> str:
    """The UTF-8 text of ``path``. A missing file, a directory, or bytes that are not UTF-8 (a
    .npy given as a program ...) are a DumpError ``{path}: ...``; ``what`` names the expected
    content in the message (e.g. "a program")."""
    p = as_local(path)
    return decode_text(read_input_bytes(p, what), p, what)


def read_input_bytes(path: str, what: str) -> bytes:
    """The bytes of the input file ``path`` (a path or a URL), or one DumpError naming ``path`` as
    given: ``is a directory, not {what}``, ``no such file``, ``cannot read: {reason}``."""
    if is_dir(path):
        raise DumpError(f"{path}: is a directory, not {what}")
    if not is_file(path):
        raise DumpError(f"{path}: no such file")
    try:
        return read_bytes(path)
    except OSError as exc:
        raise DumpError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def decode_text(data: bytes, name: str, what: str = "text") -> str:
    """``data`` decoded as UTF-8, else a DumpError naming ``name`` and what the bytes look like."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        kind = next((k for magic, k in _MAGICS if data.startswith(magic)), None)
        looks = f"; it looks like {kind}" if kind else ""
        raise DumpError(
            f"{name}: not {what}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}){looks}"
        ) from None
