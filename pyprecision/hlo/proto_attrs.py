"""The ``key=value`` attributes of one HloInstructionProto, in the order XLA prints them.

First the opcode's own attributes (dimensions, window, dim_labels, dot dimensions, ...), then the
called computations (``to_apply=``, ``condition=``/``body=``, ``branch_computations=``, ``calls=``),
``frontend_attributes``, ``metadata`` and ``backend_config`` — the order of XLA's
HloInstruction::PrintWithCanonicalNameMap. Values are spelt as XLA spells them (so that the text
reads back byte for byte as jaxlib prints the same proto).
"""
from __future__ import annotations

from typing import Any

from pyprecision.hlo.literal import format_f32
from pyprecision.hlo.proto_spmd import COLLECTIVES, collective_attributes, ints, sharding_text
from pyprecision.hlo.proto_wire import ProtoError, ProtoUnsupported
from pyprecision.hlo.types import PrimitiveType, is_float

__all__ = ["attributes", "c_escape"]

_DIMENSIONS_OPS = {"broadcast", "reduce", "transpose", "reverse", "concatenate", "map", "sort"}
_TO_APPLY_OPS = {"call", "map", "reduce-window", "reduce", "all-reduce", "reduce-scatter",
                 "all-reduce-start", "scatter", "sort", "topk"}
_PRECISIONS = ("default", "high", "highest")


def c_escape(s: str) -> str:
    """absl::CEscape of the UTF-8 bytes of ``s``."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in "\n\r\t\"'\\":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'",
                        "\\": "\\\\"}[c])
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


def window_text(window: dict[str, Any]) -> str:
    """``size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=... rhs_dilate=... rhs_reversal=...``."""
    dims = window.get("dimensions", [])
    parts = ["size=" + "x".join(str(d.get("size", 0)) for d in dims)]

    def add(key: str, fmt: Any, present: Any) -> None:
        if any(present(d) for d in dims):
            parts.append(key + "=" + "x".join(fmt(d) for d in dims))

    add("stride", lambda d: str(d.get("stride", 0)), lambda d: d.get("stride", 0) != 1)
    add("pad", lambda d: f"{d.get('padding_low', 0)}_{d.get('padding_high', 0)}",
        lambda d: d.get("padding_low", 0) != 0 or d.get("padding_high", 0) != 0)
    add("lhs_dilate", lambda d: str(d.get("base_dilation", 0)),
        lambda d: d.get("base_dilation", 0) != 1)
    add("rhs_dilate", lambda d: str(d.get("window_dilation", 0)),
        lambda d: d.get("window_dilation", 0) != 1)
    add("rhs_reversal", lambda d: str(int(d.get("window_reversal", False))),
        lambda d: d.get("window_reversal", False))
    return " ".join(parts)


def dim_labels(dn: dict[str, Any]) -> str:
    """``b01f_01io->b01f`` from ConvolutionDimensionNumbers."""
    def labels(batch: int, feature: int, spatial: list[int], b: str, f: str) -> str:
        chars = ["?"] * (len(spatial) + 2)
        for idx, label in ((batch, b), (feature, f)):
            if not 0 <= idx < len(chars):
                raise ProtoError(f"corrupted: convolution dimension {idx} of {len(chars)}")
            chars[idx] = label
        for i, d in enumerate(spatial):
            if not 0 <= d < len(chars):
                raise ProtoError(f"corrupted: convolution dimension {d} of {len(chars)}")
            chars[d] = str(i)
        return "".join(chars)

    g = dn.get
    lhs = labels(g("input_batch_dimension", 0), g("input_feature_dimension", 0),
                 g("input_spatial_dimensions", []), "b", "f")
    rhs = labels(g("kernel_input_feature_dimension", 0), g("kernel_output_feature_dimension", 0),
                 g("kernel_spatial_dimensions", []), "i", "o")
    out = labels(g("output_batch_dimension", 0), g("output_feature_dimension", 0),
                 g("output_spatial_dimensions", []), "b", "f")
    return f"{lhs}_{rhs}->{out}"


def _precision(inst: dict[str, Any]) -> list[str]:
    pc = inst.get("precision_config") or {}
    ops = pc.get("operand_precision", [])
    out = []
    if any(p != 0 for p in ops):
        try:
            out.append("operand_precision={" + ",".join(_PRECISIONS[p] for p in ops) + "}")
        except IndexError:
            raise ProtoError(f"corrupted: operand precision {ops}") from None
    if pc.get("algorithm", 0):
        raise ProtoUnsupported("a dot algorithm")
    return out


def _dot(inst: dict[str, Any]) -> list[str]:
    dn = inst.get("dot_dimension_numbers") or {}
    out = []
    if dn.get("lhs_batch_dimensions"):
        out.append("lhs_batch_dims=" + ints(dn["lhs_batch_dimensions"]))
    out.append("lhs_contracting_dims=" + ints(dn.get("lhs_contracting_dimensions", [])))
    if dn.get("rhs_batch_dimensions"):
        out.append("rhs_batch_dims=" + ints(dn["rhs_batch_dimensions"]))
    out.append("rhs_contracting_dims=" + ints(dn.get("rhs_contracting_dimensions", [])))
    return out + _precision(inst)


def _gather(inst: dict[str, Any]) -> list[str]:
    dn = inst.get("gather_dimension_numbers") or {}
    out = [f"offset_dims={ints(dn.get('offset_dims', []))}",
           f"collapsed_slice_dims={ints(dn.get('collapsed_slice_dims', []))}",
           f"start_index_map={ints(dn.get('start_index_map', []))}"]
    if dn.get("operand_batching_dims"):
        out.append(f"operand_batching_dims={ints(dn['operand_batching_dims'])}")
    if dn.get("start_indices_batching_dims"):
        out.append(f"start_indices_batching_dims={ints(dn['start_indices_batching_dims'])}")
    out.append(f"index_vector_dim={dn.get('index_vector_dim', 0)}")
    out.append(f"slice_sizes={ints(inst.get('gather_slice_sizes', []))}")
    if inst.get("indices_are_sorted"):
        out.append("indices_are_sorted=true")
    return out


def _scatter(inst: dict[str, Any]) -> list[str]:
    dn = inst.get("scatter_dimension_numbers") or {}
    out = [f"update_window_dims={ints(dn.get('update_window_dims', []))}",
           f"inserted_window_dims={ints(dn.get('inserted_window_dims', []))}",
           f"scatter_dims_to_operand_dims={ints(dn.get('scatter_dims_to_operand_dims', []))}"]
    if dn.get("input_batching_dims"):
        out.append(f"input_batching_dims={ints(dn['input_batching_dims'])}")
    if dn.get("scatter_indices_batching_dims"):
        out.append(f"scatter_indices_batching_dims={ints(dn['scatter_indices_batching_dims'])}")
    out.append(f"index_vector_dim={dn.get('index_vector_dim', 0)}")
    if inst.get("indices_are_sorted"):
        out.append("indices_are_sorted=true")
    if inst.get("unique_indices"):
        out.append("unique_indices=true")
    return out


def _default_comparison(t: PrimitiveType) -> str:
    if is_float(t):
        return "FLOAT"
    return "SIGNED" if t.name.startswith("S") else "UNSIGNED"


def _own(inst: dict[str, Any], op: str, operand_types: list[PrimitiveType]) -> list[str]:
    """The opcode's own attributes (HloInstruction subclasses' PrintExtraAttributesImpl)."""
    if op in COLLECTIVES or op == "collective-permute":
        return collective_attributes(inst, op)
    for key in ("channel_id", "use_global_device_ids", "constrain_layout", "replica_groups",
                "collective_device_list", "iota_replica_groups", "source_target_pairs"):
        if inst.get(key):
            raise ProtoUnsupported(f"{key} on a {op}")
    out: list[str] = []
    if op in _DIMENSIONS_OPS:
        out.append("dimensions=" + ints(inst.get("dimensions", [])))
    if op == "iota":
        dims = inst.get("dimensions", [])
        out.append(f"iota_dimension={dims[0] if dims else 0}")
    elif op == "get-tuple-element":
        out.append(f"index={inst.get('tuple_index', 0)}")
    elif op == "slice":
        dims = inst.get("slice_dimensions", [])
        strided = any(d.get("stride", 0) != 1 for d in dims)  # then every dimension shows one
        out.append("slice={" + ", ".join(
            f"[{d.get('start', 0)}:{d.get('limit', 0)}"
            + (f":{d.get('stride', 0)}" if strided else "") + "]" for d in dims) + "}")
    elif op == "dynamic-slice":
        out.append("dynamic_slice_sizes=" + ints(inst.get("dynamic_slice_sizes", [])))
    elif op == "pad":
        dims = (inst.get("padding_config") or {}).get("dimensions", [])
        interior = any(d.get("interior_padding", 0) for d in dims)
        out.append("padding=" + "x".join(
            f"{d.get('edge_padding_low', 0)}_{d.get('edge_padding_high', 0)}"
            + (f"_{d.get('interior_padding', 0)}" if interior else "") for d in dims))
    elif op == "dot":
        out += _dot(inst)
    elif op == "convolution":
        out.append("window={" + window_text(inst.get("window") or {}) + "}")
        out.append("dim_labels=" + dim_labels(inst.get("convolution_dimension_numbers") or {}))
        for key in ("feature_group_count", "batch_group_count"):
            if inst.get(key, 1) not in (0, 1):
                out.append(f"{key}={inst[key]}")
        out += _precision(inst)
    elif op in ("reduce-window", "select-and-scatter"):
        out.append("window={" + window_text(inst.get("window") or {}) + "}")
    elif op == "compare":
        out.append(f"direction={inst.get('comparison_direction', '')}")
        ctype = inst.get("comparison_type", "")
        if ctype and operand_types and ctype != _default_comparison(operand_types[0]):
            out.append(f"type={ctype}")
    elif op == "gather":
        out += _gather(inst)
    elif op == "scatter":
        out += _scatter(inst)
    elif op == "reduce-precision":
        out += [f"exponent_bits={inst.get('exponent_bits', 0)}",
                f"mantissa_bits={inst.get('mantissa_bits', 0)}"]
    elif op in ("batch-norm-training", "batch-norm-inference", "batch-norm-grad"):
        out += [f"epsilon={format_f32(inst.get('epsilon', 0.0))}",
                f"feature_index={inst.get('feature_index', 0)}"]
    elif op == "fusion":
        out.append(f"kind={inst.get('fusion_kind', '')}")
    elif op == "custom-call":
        out.append(f'custom_call_target="{c_escape(inst.get("custom_call_target", ""))}"')
        if inst.get("custom_call_has_side_effect"):
            out.append("custom_call_has_side_effect=true")
        version = inst.get("custom_call_api_version", 0)
        if version not in (0, 1):  # API_VERSION_ORIGINAL (1) is not printed
            names = {2: "API_VERSION_STATUS_RETURNING", 3: "API_VERSION_STATUS_RETURNING_UNIFIED",
                     4: "API_VERSION_TYPED_FFI"}
            if version not in names:
                raise ProtoError(f"corrupted: custom-call api version {version}")
            out.append(f"api_version={names[version]}")
    elif op == "rng-bit-generator":
        algorithms = ("rng_default", "rng_three_fry", "rng_philox")
        a = inst.get("rng_algorithm", 0)
        if not 0 <= a < len(algorithms):
            raise ProtoError(f"corrupted: rng algorithm {a}")
        out.append(f"algorithm={algorithms[a]}")
    elif op == "topk":
        out += [f"k={inst.get('k', 0)}", f"largest={'true' if inst.get('largest') else 'false'}"]
    if op == "sort" and inst.get("is_stable"):
        out.append("is_stable=true")
    return out


def _called(op: str, names: list[str], operand_types: list[PrimitiveType]) -> list[str]:
    if not names:
        return []
    if op == "while" and len(names) >= 2:  # XLA keeps the body first, the condition second
        return [f"condition={names[1]}", f"body={names[0]}"]
    if op == "select-and-scatter" and len(names) >= 2:
        return [f"select={names[0]}", f"scatter={names[1]}"]
    if op == "conditional":
        if operand_types and operand_types[0] == PrimitiveType.PRED and len(names) == 2:
            return [f"true_computation={names[0]}", f"false_computation={names[1]}"]
        return ["branch_computations={" + ", ".join(names) + "}"]
    if op in _TO_APPLY_OPS:
        return [f"to_apply={names[0]}"]
    return ["calls=" + ", ".join(names)]


def metadata_text(md: dict[str, Any]) -> str:
    """XLA's OpMetadataToString (empty when nothing is set)."""
    parts = []
    for key in ("op_type", "op_name", "source_file"):
        if md.get(key):
            parts.append(f'{key}="{c_escape(md[key])}"')
    for key in ("source_line", "source_end_line", "source_column", "source_end_column"):
        if md.get(key):
            parts.append(f"{key}={md[key]}")
    if md.get("deduplicated_name"):
        parts.append(f'deduplicated_name="{c_escape(md["deduplicated_name"])}"')
    if md.get("stack_frame_id"):
        parts.append(f"stack_frame_id={md['stack_frame_id']}")
    if md.get("scheduling_name"):
        parts.append(f'scheduling_name="{c_escape(md["scheduling_name"])}"')
    return " ".join(parts)


def frontend_text(fa: dict[str, Any] | None) -> str:
    """``{a="1",b="x"}`` (keys sorted, as XLA's map prints) or "" when empty."""
    entries = sorted((e.get("key", ""), e.get("value", "")) for e in (fa or {}).get("map", []))
    if not entries:
        return ""
    def value(v: str) -> str:  # a braced value prints raw (XLA's FrontendAttributesToString)
        return v if len(v) > 1 and v[0] == "{" and v[-1] == "}" else f'"{c_escape(v)}"'

    return "{" + ",".join(f"{k}={value(v)}" for k, v in dict(entries).items()) + "}"


def attributes(inst: dict[str, Any], called: list[str],
               operand_types: list[PrimitiveType]) -> list[str]:
    """Every ``key=value`` of the instruction, in XLA's order."""
    op = inst.get("opcode", "")
    out = _own(inst, op, operand_types) + _called(op, called, operand_types)
    if op == "call" and inst.get("is_composite"):
        out.append("is_composite=true")
    if inst.get("sharding") is not None:
        out.append("sharding=" + sharding_text(inst["sharding"]))
    fa = frontend_text(inst.get("frontend_attributes"))
    if fa:
        out.append("frontend_attributes=" + fa)
    md = metadata_text(inst.get("metadata") or {})
    if md:
        out.append("metadata={" + md + "}")
    bc = inst.get("backend_config", b"")
    if bc:
        try:
            text = bc.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtoError("corrupted: backend_config is not UTF-8") from None
        out.append(f'backend_config="{c_escape(text)}"' if not text.startswith("{")
                   else f"backend_config={text}")
    return out
