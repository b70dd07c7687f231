"""The proto reader against jaxlib on every committed HLO module (tests/data/**.hlo.txt): jaxlib
parses the text, serializes the HloModuleProto and prints it; pyprecision's reader of those bytes
must print the same text, byte for byte, or refuse the module naming what it does not read
(sharding, collectives' channels, schedules / aliasing of compiled modules). Skipped without
jaxlib (``pip install 'pyprecision[jax]'``)."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pyprecision.hlo.proto_text import proto_to_text
from pyprecision.hlo.proto_wire import ProtoUnsupported

xla_hlo = pytest.importorskip("jax._src.lib").hlo
DATA = Path(__file__).parent.parent / "data"
FILES = sorted(p for p in DATA.rglob("*") if p.name.endswith((".hlo.txt", ".hlo.txt.gz", ".hlo")))
#: What the reader refuses (by name) rather than prints: the fields it does not render.
REFUSED = ("sets sharding", "sets channel_id", "input/output aliasing or a schedule")


def _jaxlib(path: Path) -> tuple[bytes, str] | None:
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    try:
        module = xla_hlo.hlo_module_from_text(text)
    except Exception:  # noqa: BLE001 — text jaxlib's parser does not take (hand-written tests)
        return None
    proto = module.as_serialized_hlo_module_proto()
    opts = xla_hlo.HloPrintOptions.short_parsable()
    opts.print_metadata = True
    return proto, xla_hlo.XlaComputation(proto).as_hlo_module().to_string(opts)


def test_reader_prints_what_jaxlib_prints_for_every_committed_module() -> None:
    same, refused = 0, []
    for path in FILES:
        got = _jaxlib(path)
        if got is None:
            continue
        proto, ref = got
        try:
            mine = proto_to_text(proto)
        except ProtoUnsupported as exc:
            assert any(r in str(exc) for r in REFUSED), f"{path}: {exc}"
            refused.append(path.name)
            continue
        assert mine == ref, path
        same += 1
    assert same >= 180, (same, refused)  # 184 of 212 files (28 refused) at the time of writing
    assert len(refused) <= 40, refused
