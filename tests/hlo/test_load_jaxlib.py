"""The proto reader against jaxlib on every committed HLO module (tests/data/**.hlo.txt): jaxlib
parses the text, serializes the HloModuleProto and prints it; pyprecision's reader of those bytes
must print the same text, byte for byte, or refuse the module naming what it does not read
(schedules / aliasing of compiled modules). Skipped without
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
REFUSED = ("input/output aliasing or a schedule",)


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
    assert same >= 190, (same, refused)  # 190 of 212 files (22 refused) at the time of writing
    assert len(refused) <= 22, refused


_COLLECTIVES = """HloModule collectives, entry_computation_layout={(f32[4,2]{1,0})->(f32[4,2]{1,0}, f32[8,2]{1,0}, f32[2,2]{1,0}, f32[4,2]{1,0}, f32[4,2]{1,0}, /*index=5*/f32[4,2]{1,0}, f32[8,2]{1,0}, f32[4,2]{1,0}, f32[2,2]{1,0})}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY e {
  p = f32[4,2]{1,0} parameter(0)
  ar = f32[4,2]{1,0} all-reduce(p), channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=add
  ag = f32[8,2]{1,0} all-gather(p), channel_id=2, replica_groups=[2,2]<=[4], dimensions={0}, use_global_device_ids=true
  rs = f32[2,2]{1,0} reduce-scatter(p), channel_id=3, replica_groups={{0,1},{2,3}}, dimensions={0}, to_apply=add
  cp = f32[4,2]{1,0} collective-permute(p), channel_id=4, source_target_pairs={{0,1},{1,0}}
  ar2 = f32[4,2]{1,0} all-reduce(p), replica_groups={}, to_apply=add
  a2a = f32[4,2]{1,0} all-to-all(p), replica_groups={{0,1}}, dimensions={0}
  ag2 = f32[8,2]{1,0} all-gather(p), replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}
  cp2 = f32[4,2]{1,0} collective-permute(p), source_target_pairs={{0,1}}
  rs2 = f32[2,2]{1,0} reduce-scatter(p), channel_id=5, replica_groups=[1,2]<=[2], dimensions={0}, use_global_device_ids=true, to_apply=add
  ROOT t = (f32[4,2]{1,0}, f32[8,2]{1,0}, f32[2,2]{1,0}, f32[4,2]{1,0}, f32[4,2]{1,0}, /*index=5*/f32[4,2]{1,0}, f32[8,2]{1,0}, f32[4,2]{1,0}, f32[2,2]{1,0}) tuple(ar, ag, rs, cp, ar2, a2a, ag2, cp2, rs2)
}
"""


def test_collectives_print_as_jaxlib_prints_them() -> None:
    """channel_id, the three spellings of replica groups (lists, empty, iota with and without a
    transpose), dimensions, use_global_device_ids, source_target_pairs."""
    module = xla_hlo.hlo_module_from_text(_COLLECTIVES)
    proto = module.as_serialized_hlo_module_proto()
    opts = xla_hlo.HloPrintOptions.short_parsable()
    opts.print_metadata = True
    assert proto_to_text(proto) == xla_hlo.XlaComputation(proto).as_hlo_module().to_string(opts)


_SHARDINGS = """HloModule shardings, entry_computation_layout={(f32[8,4]{1,0}, f32[8,4]{1,0})->(f32[8,4]{1,0}, f32[8,4]{1,0})}

ENTRY e {
  a = f32[8,4]{1,0} parameter(0), sharding={replicated}
  b = f32[8,4]{1,0} parameter(1), sharding={maximal device=1}
  c = f32[8,4]{1,0} custom-call(a), custom_call_target="Sharding", sharding={devices=[2,2]0,2,1,3}
  d = f32[8,4]{1,0} custom-call(b), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  e = f32[8,4]{1,0} custom-call(c), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dims={manual}}
  f = f32[8,4]{1,0} custom-call(d), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT t = (f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(e, f), sharding={{replicated}, {devices=[4,1]<=[4]}}
}
"""


def test_shardings_print_as_jaxlib_prints_them() -> None:
    """replicated, maximal, explicit and iota tile assignments (with a transpose), the two
    replication suffixes, manual, a tuple sharding."""
    module = xla_hlo.hlo_module_from_text(_SHARDINGS)
    proto = module.as_serialized_hlo_module_proto()
    opts = xla_hlo.HloPrintOptions.short_parsable()
    opts.print_metadata = True
    assert proto_to_text(proto) == xla_hlo.XlaComputation(proto).as_hlo_module().to_string(opts)
