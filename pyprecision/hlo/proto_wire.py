"""A small decoder of the protobuf wire format, driven by a schema of the messages it needs.

A schema is ``{field number: Field}``; a decoded message is a ``dict`` from field name to value
(repeated fields: lists, always present; absent singular fields: absent). Unknown field numbers are
skipped (their wire type still checked), as protobuf itself does, and their numbers listed under
:data:`UNKNOWN` (those that hold anything: an empty message or a zero is "not set") so that a
caller can refuse what it does not understand. Every malformation — a length
past the end, a varint longer than 10 bytes, wire type 3/4/6/7, a wire type that does not match
the schema, nesting deeper than :data:`MAX_DEPTH`, a string that is not UTF-8 — is a
:class:`ProtoError` with the byte offset; nothing else escapes, and the work is linear in the input.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyprecision.errors import DumpError

__all__ = ["Field", "ProtoError", "ProtoUnsupported", "decode", "MAX_DEPTH", "UNKNOWN"]

#: Key of a decoded message's list of field numbers its schema does not know (absent when none).
UNKNOWN = "_unknown"

MAX_DEPTH = 64  # nested messages (tuple shapes, tuple literals); XLA's own modules use < 10

# wire types
VARINT, I64, LEN, I32 = 0, 1, 2, 5


class ProtoError(DumpError):
    """The bytes are not a well-formed message of the expected kind."""


class ProtoUnsupported(ProtoError):
    """A well-formed HloModuleProto that uses something the reader does not print (sharding,
    collectives, ...): refused by name rather than read without it."""


@dataclass(frozen=True)
class Field:
    """One field: its name, kind and whether it repeats.

    ``kind`` is ``int64`` / ``int32`` (two's complement varints), ``uint64``, ``bool``, ``enum``,
    ``float`` / ``double`` (fixed 32/64 bits), ``string``, ``bytes``, or ``message`` (then
    ``schema`` is the nested message's schema, or a zero-argument callable returning it, for
    recursive messages).
    """

    name: str
    kind: str
    repeated: bool = False
    schema: dict[int, Field] | Callable[[], dict[int, Field]] | None = None

    def nested(self) -> dict[int, Field]:
        """The nested message's schema."""
        s = self.schema
        assert s is not None
        return s() if callable(s) else s


_REPEATED: dict[int, tuple[str, ...]] = {}  # id(schema) → its repeated field names (schemas live
# for the whole process: module-level constants)
_WIRE = {"int64": VARINT, "int32": VARINT, "uint64": VARINT, "bool": VARINT, "enum": VARINT,
         "float": I32, "double": I64, "string": LEN, "bytes": LEN, "message": LEN}


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos < end and data[pos] < 0x80:  # the common one-byte case
        return data[pos], pos + 1
    result = shift = 0
    for i in range(10):
        if pos + i >= end:
            raise ProtoError(f"truncated: a varint runs past the end at byte {pos}")
        b = data[pos + i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + i + 1
        shift += 7
    raise ProtoError(f"corrupted: a varint longer than 10 bytes at byte {pos}")


def _scalar(kind: str, raw: int) -> Any:
    if kind in ("int64", "int32", "enum"):
        raw &= (1 << 64) - 1
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if kind == "bool":
        return raw != 0
    return raw


def _packed(data: bytes, pos: int, end: int, kind: str) -> list[Any]:
    out: list[Any] = []
    if kind in ("float", "double"):
        size = 4 if kind == "float" else 8
        if (end - pos) % size:
            raise ProtoError(f"corrupted: packed {kind}s of {end - pos} bytes at byte {pos}")
        fmt = f"<{(end - pos) // size}{'f' if size == 4 else 'd'}"
        return list(struct.unpack_from(fmt, data, pos))
    while pos < end:
        raw, pos = _varint(data, pos, end)
        out.append(_scalar(kind, raw))
    return out


def decode(data: bytes, schema: dict[int, Field], start: int = 0, end: int | None = None,
           depth: int = 0) -> dict[str, Any]:
    """Decode the message in ``data[start:end]`` by ``schema``; ProtoError when malformed."""
    if depth > MAX_DEPTH:
        raise ProtoError(f"corrupted: messages nested deeper than {MAX_DEPTH} at byte {start}")
    end = len(data) if end is None else end
    repeated = _REPEATED.get(id(schema))
    if repeated is None:
        repeated = _REPEATED[id(schema)] = tuple(f.name for f in schema.values() if f.repeated)
    msg: dict[str, Any] = {name: [] for name in repeated}
    pos = start
    while pos < end:
        at = pos
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtoError(f"corrupted: field number 0 at byte {at}")
        if wire == VARINT:
            raw, pos = _varint(data, pos, end)
            payload: Any = raw
        elif wire in (I64, I32):
            size = 8 if wire == I64 else 4
            if pos + size > end:
                raise ProtoError(f"truncated: a {size * 8}-bit field runs past the end at byte {at}")
            payload = data[pos:pos + size]
            pos += size
        elif wire == LEN:
            n, pos = _varint(data, pos, end)
            if n > end - pos:
                raise ProtoError(f"truncated: field {number} needs {n} bytes at byte {at}, "
                                 f"{end - pos} remain")
            payload = (pos, pos + n)
            pos += n
        else:
            raise ProtoError(f"corrupted: wire type {wire} (field {number}) at byte {at}")
        f = schema.get(number)
        if f is None:
            empty = payload == 0 if wire == VARINT else (
                payload[0] == payload[1] if wire == LEN else not any(payload))
            unknown = msg.setdefault(UNKNOWN, []) if not empty else None
            if unknown is not None and number not in unknown:
                unknown.append(number)
            continue
        value = _field_value(data, f, wire, payload, at, depth)
        if f.repeated:
            if isinstance(value, list):
                msg[f.name].extend(value)
            else:
                msg[f.name].append(value)
        else:
            msg[f.name] = value
    return msg


def _field_value(data: bytes, f: Field, wire: int, payload: Any, at: int, depth: int) -> Any:
    want = _WIRE[f.kind]
    if wire == LEN and want != LEN and f.repeated:  # packed repeated scalars
        return _packed(data, payload[0], payload[1], f.kind)
    if wire != want:
        raise ProtoError(f"another message: field {f.name} ({f.kind}) has wire type {wire} at "
                         f"byte {at}")
    if f.kind == "message":
        return decode(data, f.nested(), payload[0], payload[1], depth + 1)
    if f.kind == "bytes":
        return data[payload[0]:payload[1]]
    if f.kind == "string":
        try:
            return data[payload[0]:payload[1]].decode("utf-8")
        except UnicodeDecodeError:
            raise ProtoError(f"corrupted: field {f.name} is not UTF-8 at byte {at}") from None
    if f.kind == "float":
        return struct.unpack("<f", payload)[0]
    if f.kind == "double":
        return struct.unpack("<d", payload)[0]
    return _scalar(f.kind, payload)
