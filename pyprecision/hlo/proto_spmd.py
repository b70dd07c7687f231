"""The SPMD attributes of an HloInstructionProto as XLA prints them: collectives' channel ids,
replica groups and device pairs (decision LD10), and shardings (HloSharding::ToString, LD11)."""
from __future__ import annotations

from typing import Any

from pyprecision.hlo.proto_wire import ProtoError, ProtoUnsupported

__all__ = ["COLLECTIVES", "collective_attributes", "ints", "sharding_text"]

#: HloCollectiveInstruction's opcodes: channel_id, replica_groups (always), their dimensions
COLLECTIVES = {"all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
               "reduce-scatter", "all-to-all", "collective-broadcast"}


def ints(values: list[int]) -> str:
    """``{1,0}``."""
    return "{" + ",".join(str(v) for v in values) + "}"


def _replica_groups(inst: dict[str, Any]) -> str:
    """``{{0,2},{1,3}}``, ``{}``, or the iota form ``[2,2]<=[4]`` / ``[2,2]<=[2,2]T(1,0)``."""
    dl = inst.get("collective_device_list") or {}
    iota = inst.get("iota_replica_groups") or dl.get("iota_replica_group_list")
    if iota:
        perm = iota.get("iota_transpose_perm", [])
        dims = iota.get("iota_reshape_dims", [])
        text = (f"[{iota.get('num_replica_groups', 0)},{iota.get('num_devices_per_group', 0)}]"
                f"<=[{','.join(map(str, dims))}]")
        if perm and perm != list(range(len(perm))):
            text += f"T({','.join(map(str, perm))})"
        return text
    groups = dl.get("replica_groups") or inst.get("replica_groups", [])
    return "{" + ",".join(ints(g.get("replica_ids", [])) for g in groups) + "}"


def collective_attributes(inst: dict[str, Any], op: str) -> list[str]:
    """channel_id, replica_groups / source_target_pairs, constrain_layout, dimensions and
    use_global_device_ids, in HloCollectiveInstruction's order (decision LD10)."""
    out = []
    if inst.get("channel_id", 0) > 0:
        out.append(f"channel_id={inst['channel_id']}")
    if op == "collective-permute":
        pairs = inst.get("source_target_pairs", [])
        out.append("source_target_pairs={" + ",".join(
            f"{{{p.get('source', 0)},{p.get('target', 0)}}}" for p in pairs) + "}")
        return out
    out.append("replica_groups=" + _replica_groups(inst))
    if inst.get("constrain_layout"):
        out.append("constrain_layout=true")
    dims = ["dimensions=" + ints(inst.get("dimensions", []))] if op in (
        "all-gather", "all-gather-start", "reduce-scatter") or (
        op == "all-to-all" and inst.get("dimensions")) else []
    flag = ["use_global_device_ids=true"] if inst.get("use_global_device_ids") else []
    # reduce-scatter is an all-reduce (its base prints the flag first); all-gather the reverse
    return out + (flag + dims if op == "reduce-scatter" else dims + flag)


_SHARDING_TYPES = ("replicated", "maximal", "tuple", "other", "manual", "unknown", "unreduced")


def sharding_text(s: dict[str, Any], depth: int = 0) -> str:
    """HloSharding::ToString of a decoded OpSharding: ``{replicated}``, ``{maximal device=0}``,
    ``{devices=[2,2]<=[4]}``, ``{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}``,
    ``{devices=[2,2]0,2,1,3}``, ``{manual}``, ``{{replicated}, {manual}}``."""
    if depth > 32:
        raise ProtoError("corrupted: tuple shardings nested too deeply")
    for key in ("tile_shape", "metadata", "is_shard_group", "shard_group_id", "named_sharding"):
        if s.get(key):
            raise ProtoUnsupported(f"a sharding with {key}")
    t = s.get("type", 0)
    if not 0 <= t < len(_SHARDING_TYPES):
        raise ProtoError(f"corrupted: sharding type {t}")
    kind = _SHARDING_TYPES[t]
    if kind == "tuple":
        return "{" + ", ".join(sharding_text(e, depth + 1) for e in s.get("tuple_shardings", [])) + "}"
    if kind in ("replicated", "manual", "unknown", "unreduced"):
        return "{" + kind + "}"
    devices = s.get("tile_assignment_devices", [])
    if kind == "maximal":
        if len(devices) != 1:
            raise ProtoError(f"corrupted: a maximal sharding on {len(devices)} devices")
        return f"{{maximal device={devices[0]}}}"
    dims = s.get("tile_assignment_dimensions", [])
    text = "{devices=[" + ",".join(map(str, dims)) + "]"
    if s.get("iota_reshape_dims"):
        perm = s.get("iota_transpose_perm", [])
        text += "<=[" + ",".join(map(str, s["iota_reshape_dims"])) + "]"
        if perm and perm != list(range(len(perm))):
            text += "T(" + ",".join(map(str, perm)) + ")"
    else:
        text += ",".join(map(str, devices))
    if s.get("replicate_on_last_tile_dim"):
        text += " last_tile_dim_replicate"
    last = s.get("last_tile_dims", [])
    if last:
        if any(not 0 <= x < len(_SHARDING_TYPES) for x in last):
            raise ProtoError(f"corrupted: last tile dims {last}")
        text += " last_tile_dims={" + ", ".join(_SHARDING_TYPES[x] for x in last) + "}"
    return text + "}"
