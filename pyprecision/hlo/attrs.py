"""Attribute values of HLO text: C-escaped strings, ``metadata={...}``, ``frontend_attributes={...}``,
integer lists, and the balanced scanner that finds where a raw value ends.

Attribute values are kept verbatim in the model (so unchanged text prints back byte for byte);
these helpers read them and build the text of new ones.
"""
from __future__ import annotations

_CLOSE = {"{": "}", "(": ")", "[": "]"}
_SIMPLE_ESC = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\", "a": "\a",
               "b": "\b", "f": "\f", "v": "\v", "?": "?"}
_ESC_OUT = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}


def skip_string(text: str, pos: int) -> int:
    """``text[pos]`` is a double quote; return the index just past the closing quote (or -1)."""
    i = pos + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if c == "\n":
            return -1
        i += 1
    return -1


def scan_balanced(text: str, pos: int, stop: str = ",\n") -> int:
    """Index where a raw value starting at ``pos`` ends: the first character of ``stop`` (or a
    closing bracket that does not belong to the value) at bracket depth 0, outside strings.
    Raises ValueError(message, index) when a bracket or string is not closed on the line."""
    stack: list[str] = []
    i = pos
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = skip_string(text, i)
            if j < 0:
                raise ValueError("unterminated string", i)
            i = j
            continue
        if c in _CLOSE:
            stack.append(_CLOSE[c])
        elif c in ")]}":
            if not stack:
                return i
            if stack.pop() != c:
                raise ValueError(f"unbalanced '{c}'", i)
        elif c == "\n" and stack:
            raise ValueError("unbalanced brackets at end of line", i)
        elif not stack and c in stop:
            return i
        i += 1
    if stack:
        raise ValueError("unbalanced brackets at end of text", i)
    return i


def c_unescape(body: str) -> str:
    """absl::CUnescape of a quoted string's body (bytes decoded as UTF-8)."""
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in _SIMPLE_ESC:
            out += _SIMPLE_ESC[e].encode()
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < n and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        elif e == "x":
            j = i + 2
            while j < n and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j] or "0", 16) & 0xFF)
            i = j
        else:
            out += e.encode("utf-8")
            i += 2
    return out.decode("utf-8", errors="surrogateescape")


def c_escape(value: str) -> str:
    """absl::CEscape: \\n \\r \\t \\" \\' \\\\ and octal for every other non-printable byte."""
    out = []
    for b in value.encode("utf-8", errors="surrogateescape"):
        if b in _ESC_OUT:
            out.append(_ESC_OUT[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return "".join(out)


def quote(value: str) -> str:
    """A double-quoted, C-escaped string literal."""
    return '"' + c_escape(value) + '"'


def unquote(raw: str) -> str:
    """The string value of a quoted literal ``raw`` (returned unchanged when not quoted)."""
    if len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
        return c_unescape(raw[1:-1])
    return raw


def _split_items(body: str, sep: str) -> list[str]:
    """Split ``body`` at ``sep`` characters at depth 0 outside strings; drop empty items."""
    items = []
    i = 0
    n = len(body)
    while i < n:
        while i < n and body[i] in sep:
            i += 1
        if i >= n:
            break
        j = scan_balanced(body, i, sep)
        items.append(body[i:j].strip())
        i = j
    return [x for x in items if x]


def parse_kv_block(raw: str, sep: str) -> list[tuple[str, str]]:
    """``{k=v<sep>k=v}`` → [(k, raw v)]; items without ``=`` get an empty key."""
    body = raw.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    out = []
    for item in _split_items(body, sep):
        k, eq, v = item.partition("=")
        out.append((k.strip(), v.strip()) if eq else ("", item))
    return out


def parse_metadata(raw: str) -> list[tuple[str, str]]:
    """``{op_type="dot" op_name="x" source_line=3}`` → [(key, raw value)] in text order."""
    return parse_kv_block(raw, " \t")


#: The order in which XLA prints OpMetadata fields.
METADATA_ORDER = ("op_type", "op_name", "source_file", "source_line", "source_end_line",
                  "source_column", "source_end_column", "profile_type", "deduplicated_name",
                  "preserve_layout", "stack_frame_id", "scheduling_name")


def format_metadata(items: list[tuple[str, str]]) -> str:
    """``{k=v k=v}`` (raw values kept)."""
    return "{" + " ".join(f"{k}={v}" if k else v for k, v in items) + "}"


def metadata_set_string(items: list[tuple[str, str]], key: str, value: str) -> list[tuple[str, str]]:
    """Set a string field, inserting it at its place in XLA's field order when absent."""
    new = (key, quote(value))
    out = list(items)
    for i, (k, _) in enumerate(out):
        if k == key:
            out[i] = new
            return out
    rank = METADATA_ORDER.index(key) if key in METADATA_ORDER else len(METADATA_ORDER)
    for i, (k, _) in enumerate(out):
        r = METADATA_ORDER.index(k) if k in METADATA_ORDER else len(METADATA_ORDER)
        if r > rank:
            out.insert(i, new)
            return out
    out.append(new)
    return out


def parse_frontend_attributes(raw: str) -> list[tuple[str, str]]:
    """``{a="x",b="y"}`` → [(key, raw value)]."""
    return parse_kv_block(raw, ",")


def format_frontend_attributes(items: list[tuple[str, str]]) -> str:
    """``{a="x",b="y"}`` sorted by key, as XLA prints its map."""
    return "{" + ",".join(f"{k}={v}" for k, v in sorted(items)) + "}"


def parse_int_list(raw: str) -> list[int]:
    """``{1,0}`` or ``{}`` → [1, 0]."""
    body = raw.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    return [int(x) for x in body.replace(" ", "").split(",") if x]
