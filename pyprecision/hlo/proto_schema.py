"""The fields of XLA's HloModuleProto that pyprecision reads, by number.

Field numbers are those of ``xla/service/hlo.proto`` and ``xla/xla_data.proto`` (openxla/xla);
only the messages and fields a module's HLO text shows are listed. A field that the reader does not
render is listed under :data:`UNRENDERED` so that a module using it is refused by name instead of
printed without it (see pyprecision/hlo/proto_text.py).
"""
from __future__ import annotations

from pyprecision.hlo.proto_wire import Field

__all__ = ["MODULE", "INSTRUCTION", "SHAPE", "UNRENDERED", "WRAPPER"]


def _f(name: str, kind: str, schema: object = None) -> Field:
    return Field(name, kind, False, schema)  # type: ignore[arg-type]


def _r(name: str, kind: str, schema: object = None) -> Field:
    return Field(name, kind, True, schema)  # type: ignore[arg-type]


LAYOUT = {1: _r("minor_to_major", "int64"), 6: _r("tiles", "bytes"),
          7: _f("element_size_in_bits", "int64"), 8: _f("memory_space", "int64"),
          9: _r("dim_level_types", "enum"), 10: _f("physical_shape", "bytes"),
          17: _r("split_configs", "bytes")}


def _shape() -> dict[int, Field]:
    return SHAPE


SHAPE: dict[int, Field] = {
    2: _f("element_type", "enum"), 3: _r("dimensions", "int64"),
    4: _r("tuple_shapes", "message", _shape), 5: _f("layout", "message", LAYOUT),
    6: _r("is_dynamic_dimension", "bool"),
}

PROGRAM_SHAPE = {1: _r("parameters", "message", SHAPE), 2: _f("result", "message", SHAPE),
                 3: _r("parameter_names", "string")}

METADATA = {1: _f("op_type", "string"), 2: _f("op_name", "string"),
            3: _f("source_file", "string"), 4: _f("source_line", "int32"),
            17: _f("source_end_line", "int32"), 18: _f("source_column", "int32"),
            19: _f("source_end_column", "int32"), 12: _f("deduplicated_name", "string"),
            15: _f("stack_frame_id", "int32"), 16: _f("scheduling_name", "string")}


def _literal() -> dict[int, Field]:
    return LITERAL


#: LiteralProto: every element array by its field name (the dtype's proto spelling + "s").
LITERAL: dict[int, Field] = {
    1: _f("shape", "message", SHAPE), 2: _r("preds", "bool"), 3: _f("u8s", "bytes"),
    4: _r("s32s", "int32"), 5: _r("s64s", "int64"), 6: _r("u32s", "uint64"),
    7: _r("u64s", "uint64"), 8: _r("f32s", "float"), 9: _r("f64s", "double"),
    10: _r("tuple_literals", "message", _literal), 11: _f("f16s", "bytes"),
    13: _f("bf16s", "bytes"), 15: _f("s8s", "bytes"), 16: _f("u16s", "bytes"),
    17: _f("s16s", "bytes"), 19: _f("f8e5m2s", "bytes"), 20: _f("f8e4m3fns", "bytes"),
    21: _f("s4s", "bytes"), 22: _f("u4s", "bytes"), 23: _f("f8e4m3b11fnuzs", "bytes"),
    24: _f("f8e5m2fnuzs", "bytes"), 25: _f("f8e4m3fnuzs", "bytes"), 26: _f("s2s", "bytes"),
    27: _f("u2s", "bytes"), 28: _f("f8e4m3s", "bytes"), 29: _f("f8e3m4s", "bytes"),
    30: _f("s1s", "bytes"), 31: _f("u1s", "bytes"), 32: _f("f4e2m1fns", "bytes"),
    33: _f("f8e8m0fnus", "bytes"), 12: _r("c64s", "float"), 18: _r("c128s", "double"),
}

WINDOW_DIM = {1: _f("size", "int64"), 2: _f("stride", "int64"), 3: _f("padding_low", "int64"),
              4: _f("padding_high", "int64"), 5: _f("window_dilation", "int64"),
              6: _f("base_dilation", "int64"), 7: _f("window_reversal", "bool")}
WINDOW = {1: _r("dimensions", "message", WINDOW_DIM)}

CONV_DIMS = {7: _f("input_batch_dimension", "int64"), 8: _f("input_feature_dimension", "int64"),
             11: _r("input_spatial_dimensions", "int64"),
             3: _f("kernel_input_feature_dimension", "int64"),
             4: _f("kernel_output_feature_dimension", "int64"),
             6: _r("kernel_spatial_dimensions", "int64"),
             9: _f("output_batch_dimension", "int64"), 10: _f("output_feature_dimension", "int64"),
             12: _r("output_spatial_dimensions", "int64")}

DOT_DIMS = {1: _r("lhs_contracting_dimensions", "int64"),
            2: _r("rhs_contracting_dimensions", "int64"),
            3: _r("lhs_batch_dimensions", "int64"), 4: _r("rhs_batch_dimensions", "int64")}

GATHER_DIMS = {1: _r("offset_dims", "int64"), 2: _r("collapsed_slice_dims", "int64"),
               3: _r("start_index_map", "int64"), 4: _f("index_vector_dim", "int64"),
               5: _r("operand_batching_dims", "int64"),
               6: _r("start_indices_batching_dims", "int64")}

SCATTER_DIMS = {1: _r("update_window_dims", "int64"), 2: _r("inserted_window_dims", "int64"),
                3: _r("scatter_dims_to_operand_dims", "int64"), 4: _f("index_vector_dim", "int64"),
                5: _r("input_batching_dims", "int64"),
                6: _r("scatter_indices_batching_dims", "int64")}

SLICE_DIM = {1: _f("start", "int64"), 2: _f("limit", "int64"), 3: _f("stride", "int64")}
PAD_DIM = {1: _f("edge_padding_low", "int64"), 2: _f("edge_padding_high", "int64"),
           3: _f("interior_padding", "int64")}
PADDING = {1: _r("dimensions", "message", PAD_DIM)}
PRECISION = {1: _r("operand_precision", "enum"), 2: _f("algorithm", "enum")}
MAP_ENTRY = {1: _f("key", "string"), 2: _f("value", "string")}
FRONTEND_ATTRS = {1: _r("map", "message", MAP_ENTRY)}

REPLICA_GROUP = {1: _r("replica_ids", "int64")}
#: IotaReplicaGroupListProto (inside CollectiveDeviceListProto as field 2, and — jaxlib 0.10.2 —
#: as instruction field 92): [num_groups, group_size] <= [reshape_dims] T(perm)
IOTA_GROUPS = {1: _f("num_replica_groups", "int64"), 2: _f("num_devices_per_group", "int64"),
               3: _r("iota_reshape_dims", "int64"), 4: _r("iota_transpose_perm", "int32")}
DEVICE_LIST = {1: _r("replica_groups", "message", REPLICA_GROUP),
               2: _f("iota_replica_group_list", "message", IOTA_GROUPS)}
SOURCE_TARGET = {1: _f("source", "int64"), 2: _f("target", "int64")}

def _sharding() -> dict[int, Field]:
    return SHARDING


#: OpSharding: type (REPLICATED 0, MAXIMAL 1, TUPLE 2, OTHER 3, MANUAL 4, UNKNOWN 5, UNREDUCED 6),
#: the tile assignment (explicit devices or an iota), the tuple's elements; what the reader does
#: not print (tile_shape, metadata, shard groups, named sharding) is kept as bytes to refuse.
SHARDING: dict[int, Field] = {
    1: _f("type", "enum"), 2: _f("tile_shape", "bytes"),
    3: _r("tile_assignment_dimensions", "int64"), 4: _r("tile_assignment_devices", "int64"),
    5: _r("tuple_shardings", "message", _sharding), 6: _f("replicate_on_last_tile_dim", "bool"),
    7: _r("metadata", "bytes"), 8: _r("last_tile_dims", "enum"),
    9: _r("iota_reshape_dims", "int64"), 10: _r("iota_transpose_perm", "int32"),
    11: _f("is_shard_group", "bool"), 12: _f("shard_group_id", "int64"),
    13: _f("shard_group_type", "enum"), 14: _f("named_sharding", "bytes"),
}

INSTRUCTION: dict[int, Field] = {
    1: _f("name", "string"), 2: _f("opcode", "string"), 3: _f("shape", "message", SHAPE),
    7: _f("metadata", "message", METADATA), 8: _f("literal", "message", LITERAL),
    9: _f("parameter_number", "int64"), 11: _f("fusion_kind", "string"),
    13: _f("tuple_index", "int64"), 14: _r("dimensions", "int64"),
    15: _f("window", "message", WINDOW), 16: _f("convolution_dimension_numbers", "message",
                                               CONV_DIMS),
    17: _r("slice_dimensions", "message", SLICE_DIM), 18: _f("exponent_bits", "int32"),
    19: _f("mantissa_bits", "int32"), 20: _r("dynamic_slice_sizes", "int64"),
    21: _f("padding_config", "message", PADDING), 24: _f("epsilon", "float"),
    25: _f("feature_index", "int64"), 28: _f("custom_call_target", "string"),
    30: _f("dot_dimension_numbers", "message", DOT_DIMS),
    33: _f("gather_dimension_numbers", "message", GATHER_DIMS),
    34: _r("gather_slice_sizes", "int64"), 35: _f("id", "int64"), 36: _r("operand_ids", "int64"),
    37: _r("control_predecessor_ids", "int64"), 38: _r("called_computation_ids", "int64"),
    43: _f("backend_config", "bytes"),
    48: _f("scatter_dimension_numbers", "message", SCATTER_DIMS),
    50: _f("feature_group_count", "int64"), 51: _f("precision_config", "message", PRECISION),
    58: _f("batch_group_count", "int64"), 60: _f("is_stable", "bool"),
    63: _f("comparison_direction", "string"), 67: _f("indices_are_sorted", "bool"),
    68: _f("frontend_attributes", "message", FRONTEND_ATTRS), 69: _f("unique_indices", "bool"),
    72: _f("comparison_type", "string"), 81: _f("k", "int64"), 85: _f("largest", "bool"),
    89: _f("is_composite", "bool"), 70: _f("rng_algorithm", "enum"),
    # collectives: channel, replica groups (legacy list, device list, iota list), pairs
    26: _f("channel_id", "int64"), 71: _f("use_global_device_ids", "bool"),
    56: _f("constrain_layout", "bool"), 49: _r("replica_groups", "message", REPLICA_GROUP),
    87: _f("collective_device_list", "message", DEVICE_LIST),
    92: _f("iota_replica_groups", "message", IOTA_GROUPS),
    52: _r("source_target_pairs", "message", SOURCE_TARGET),
    65: _f("custom_call_has_side_effect", "bool"), 77: _f("custom_call_api_version", "enum"),
    40: _f("sharding", "message", SHARDING),
}

#: Instruction fields that change what a module means but that the reader does not print: a
#: module that sets one is refused by name (number: name), never read without it.
UNRENDERED = {22: "outfeed_config", 23: "distribution", 27: "infeed_config",
              29: "outfeed_shape", 31: "fft_type", 32: "fft_length",
              45: "all_reduce_id", 47: "is_host_transfer", 59: "triangular_solve_options",
              62: "cholesky_options",
              74: "output_operand_aliasing",
              76: "custom_call_schedule", 86: "dot_sparsity",
              90: "ragged_dot_dimension_numbers",
              91: "result_accuracy"}
for _n, _name in UNRENDERED.items():
    INSTRUCTION[_n] = _f(_name, "bytes") if _n not in (23, 31, 45, 47, 76) else _f(_name, "int64")

COMPUTATION = {1: _f("name", "string"), 2: _r("instructions", "message", INSTRUCTION),
               4: _f("program_shape", "message", PROGRAM_SHAPE), 5: _f("id", "int64"),
               6: _f("root_id", "int64"), 7: _f("is_fusion_computation", "bool"),
               8: _f("execution_thread", "string")}

FILE_LOCATION = {1: _f("file_name_id", "int32"), 2: _f("function_name_id", "int32"),
                 3: _f("line", "int32"), 4: _f("column", "int32"), 5: _f("end_line", "int32"),
                 6: _f("end_column", "int32")}
STACK_FRAME = {1: _f("file_location_id", "int32"), 2: _f("parent_frame_id", "int32")}
STACK_FRAME_INDEX = {1: _r("file_names", "string"), 2: _r("function_names", "string"),
                     3: _r("file_locations", "message", FILE_LOCATION),
                     4: _r("stack_frames", "message", STACK_FRAME)}

MODULE: dict[int, Field] = {
    1: _f("name", "string"), 2: _f("entry_computation_name", "string"),
    3: _r("computations", "message", COMPUTATION),
    4: _f("host_program_shape", "message", PROGRAM_SHAPE), 5: _f("id", "int64"),
    6: _f("entry_computation_id", "int64"), 7: _f("schedule", "bytes"),
    8: _f("input_output_alias", "bytes"), 17: _f("stack_frame_index", "message",
                                                 STACK_FRAME_INDEX),
    19: _f("frontend_attributes", "message", FRONTEND_ATTRS),
}

#: HloProto (``hlo_module = 1``) and HloSnapshot (``hlo = 1``): XLA's dump wrappers.
WRAPPER = {1: _f("first", "bytes")}
