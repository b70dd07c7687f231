"""An HloModuleProto binary → the HLO text XLA prints for it (``short_parsable`` + metadata).

The proto becomes text, and the text goes through the one HLO parser: the module a proto gives is
then the module its text gives, byte for byte, with its ``metadata={...}`` and stack-frame tables
(the source locations explain prints). Computations and instructions are printed in XLA's post
orders (HloModule::MakeComputationPostOrder, HloComputation::MakeInstructionPostOrder), so the text
equals jaxlib's ``XlaComputation(proto).as_hlo_module().to_string(...)`` — tested on every committed
artifact. A field that changes a module's meaning but is not printed here (sharding, collectives'
replica groups, ...) is refused by name, never dropped.
"""
from __future__ import annotations

from typing import Any

from pyprecision.hlo.proto_attrs import attributes, c_escape, frontend_text
from pyprecision.hlo.proto_literal import literal_text, shape_dims
from pyprecision.hlo.proto_schema import MODULE, UNRENDERED
from pyprecision.hlo.proto_wire import UNKNOWN, ProtoError, ProtoUnsupported, decode
from pyprecision.hlo.shape import Layout, Shape
from pyprecision.hlo.types import PrimitiveType

__all__ = ["proto_to_text", "ProtoError"]

_MAX_SHAPE_DEPTH = 64
#: Set fields that only describe (no effect on what the module computes or prints):
#: statistics_viz (82).
_IGNORED_INSTRUCTION = frozenset({82})
#: HloModuleProto: profile_info (13), device_assignment (15).
_IGNORED_MODULE = frozenset({13, 15})


def shape_from_proto(s: dict[str, Any], depth: int = 0) -> Shape:
    """A decoded ShapeProto as a :class:`Shape`."""
    if depth > _MAX_SHAPE_DEPTH:
        raise ProtoError("corrupted: tuple shapes nested too deeply")
    t, dims = shape_dims(s)
    if t == PrimitiveType.TUPLE:
        return Shape.tuple_of([shape_from_proto(x, depth + 1) for x in s.get("tuple_shapes", [])])
    if t in (PrimitiveType.TOKEN, PrimitiveType.OPAQUE_TYPE):
        return Shape(t)
    if t == PrimitiveType.PRIMITIVE_TYPE_INVALID:
        raise ProtoError("corrupted: a shape has no element type")
    dyn = list(s.get("is_dynamic_dimension", [])) or [False] * len(dims)
    if len(dyn) != len(dims) or any(d < 0 for d in dims):
        raise ProtoError(f"corrupted: dimensions {dims}")
    layout = None
    lp = s.get("layout")
    if lp is not None:
        m2m = tuple(lp.get("minor_to_major", []))
        extras = []
        if lp.get("tiles") or lp.get("dim_level_types") or lp.get("split_configs") \
                or lp.get("physical_shape"):
            raise ProtoUnsupported("a tiled, sparse or split layout")
        if lp.get("element_size_in_bits"):
            extras.append(f"E({lp['element_size_in_bits']})")
        if lp.get("memory_space"):
            extras.append(f"S({lp['memory_space']})")
        if m2m or dims:
            if sorted(m2m) != list(range(len(dims))):
                raise ProtoError(f"corrupted: layout {{{','.join(map(str, m2m))}}} of a rank "
                                 f"{len(dims)} shape")
            layout = Layout(m2m, "".join(extras))
    return Shape(t, tuple(dims), tuple(bool(x) for x in dyn), layout)


def _post_order(insts: list[dict[str, Any]], by_id: dict[int, dict[str, Any]]) -> list[dict]:
    """HloComputation::MakeInstructionPostOrder: a DFS (operands first, in order; then control
    predecessors) from every instruction without users, in the proto's order."""
    used = {o for i in insts for o in i.get("operand_ids", [])}
    state: dict[int, int] = {}  # 1 visiting, 2 visited
    order: list[dict[str, Any]] = []
    for start in insts:
        if start["id"] in used:
            continue
        stack = [start["id"]]
        while stack:
            cur = stack[-1]
            if cur in state:
                stack.pop()
                if state[cur] == 1:
                    state[cur] = 2
                    order.append(by_id[cur])
                continue
            state[cur] = 1
            inst = by_id[cur]
            stack.extend(reversed(inst.get("operand_ids", [])))
            stack.extend(inst.get("control_predecessor_ids", []))
    if len(order) != len(insts):
        raise ProtoError("corrupted: the instructions form a cycle")
    return order


def _instruction_line(inst: dict[str, Any], names: dict[int, str], comp_names: dict[int, str],
                      types: dict[int, PrimitiveType], root: bool) -> str:
    op = inst.get("opcode", "")
    shape = shape_from_proto(inst.get("shape") or {})
    operands = inst.get("operand_ids", [])
    if op == "parameter":
        args = str(inst.get("parameter_number", 0))
    elif op == "constant":
        args = literal_text(inst.get("literal") or {"shape": inst.get("shape") or {}})
    else:
        args = ", ".join(names[o] for o in operands)  # short_parsable: no /*index=N*/ here
    called = [comp_names[c] for c in inst.get("called_computation_ids", [])]
    attrs = attributes(inst, called, [types[o] for o in operands])
    text = f"{'ROOT ' if root else ''}{inst.get('name', '')} = {shape.to_text()} {op}({args})"
    return "  " + ", ".join([text, *attrs])


def _check_unknown(msg: dict[str, Any], what: str, ignorable: frozenset[int]) -> None:
    """Refuse a message that sets a field this reader's schema does not know (a newer XLA's):
    it might change what the module means."""
    unknown = [n for n in msg.get(UNKNOWN, []) if n not in ignorable]
    if unknown:
        raise ProtoUnsupported(f"{what} sets proto field {unknown[0]}, unknown to the reader")


def _check_instruction(inst: dict[str, Any], comp: str) -> None:
    _check_unknown(inst, f"instruction {inst.get('name')!r} in {comp!r}", _IGNORED_INSTRUCTION)
    for name in UNRENDERED.values():
        if inst.get(name):
            raise ProtoUnsupported(f"instruction {inst.get('name')!r} in {comp!r} sets {name}")
    if inst.get("control_predecessor_ids"):
        raise ProtoUnsupported(f"instruction {inst.get('name')!r} has control predecessors")


def _computation_order(comps: list[dict[str, Any]], orders: dict[int, list[dict]]) -> list[dict]:
    """HloModule::MakeComputationPostOrder: each computation nobody calls, after its callees
    (found through its instructions in post order)."""
    by_id = {c["id"]: c for c in comps}
    called = {cid for c in comps for i in c.get("instructions", [])
              for cid in i.get("called_computation_ids", [])}
    out: list[dict[str, Any]] = []
    done: set[int] = set()

    def embedded(cid: int, seen: set[int]) -> None:
        if cid in seen:
            raise ProtoError("corrupted: a computation calls itself")
        for inst in orders[cid]:
            for callee in inst.get("called_computation_ids", []):
                if callee not in done:
                    embedded(callee, seen | {cid})
        if cid not in done:
            done.add(cid)
            out.append(by_id[cid])

    for c in comps:
        if c["id"] not in called:
            embedded(c["id"], set())
    if len(out) != len(comps):
        raise ProtoError("corrupted: a computation is called by nothing reachable")
    return out


def _tables(sfi: dict[str, Any] | None) -> str:
    if not sfi or not any(sfi.get(k) for k in ("file_names", "function_names", "file_locations",
                                                "stack_frames")):
        return ""
    parts = ["FileNames"] + [f'{i} "{c_escape(n)}"' for i, n in enumerate(sfi["file_names"], 1)]
    parts += ["", "FunctionNames"]
    parts += [f'{i} "{c_escape(n)}"' for i, n in enumerate(sfi["function_names"], 1)]
    parts += ["", "FileLocations"]
    for i, loc in enumerate(sfi["file_locations"], 1):
        g = loc.get
        parts.append(f"{i} {{file_name_id={g('file_name_id', 0)} function_name_id="
                     f"{g('function_name_id', 0)} line={g('line', 0)} end_line={g('end_line', 0)} "
                     f"column={g('column', 0)} end_column={g('end_column', 0)}}}")
    parts += ["", "StackFrames"]
    for i, fr in enumerate(sfi["stack_frames"], 1):
        parts.append(f"{i} {{file_location_id={fr.get('file_location_id', 0)} parent_frame_id="
                     f"{fr.get('parent_frame_id', 0) + 1}}}")
    return "\n".join(parts) + "\n\n\n"


def _header(m: dict[str, Any], entry: dict[str, Any]) -> str:
    if m.get("input_output_alias") or m.get("schedule"):
        raise ProtoUnsupported("input/output aliasing or a schedule")
    ps = m.get("host_program_shape") or entry.get("program_shape")
    if ps:
        params = [shape_from_proto(p) for p in ps.get("parameters", [])]
        result = shape_from_proto(ps.get("result") or {"element_type": PrimitiveType.TUPLE})
    else:  # neither given: the entry computation's own (XLA's ComputeProgramShape)
        insts = entry["instructions"]
        params = [shape_from_proto(i.get("shape") or {}) for i in sorted(
            (i for i in insts if i.get("opcode") == "parameter"),
            key=lambda i: i.get("parameter_number", 0))]
        root = next((i for i in insts if i["id"] == entry.get("root_id")), insts[-1])
        result = shape_from_proto(root.get("shape") or {})
    layout = ", ".join((f"/*index={i}*/" if i and i % 5 == 0 else "") + p.to_text()
                       for i, p in enumerate(params))
    text = f"HloModule {m.get('name', '')}, entry_computation_layout={{({layout})->" \
           f"{result.to_text()}}}"
    fa = frontend_text(m.get("frontend_attributes"))
    return text + (f", frontend_attributes={fa}" if fa else "") + "\n\n"


def proto_to_text(data: bytes) -> str:
    """The HLO text of a serialized HloModuleProto (ProtoError when it is not one)."""
    m = decode(data, MODULE)
    comps = m.get("computations", [])
    if not m.get("name") or not comps:
        raise ProtoError("not an HloModuleProto: it has no module name or no computations")
    _check_unknown(m, f"module {m['name']!r}", _IGNORED_MODULE)
    comp_names: dict[int, str] = {}
    inst_index: dict[int, dict[int, dict[str, Any]]] = {}
    for c in comps:
        c.setdefault("id", 0)
        if c["id"] in comp_names or not c.get("name") or not c.get("instructions"):
            raise ProtoError("not an HloModuleProto: a computation has no name, no "
                             "instructions or a repeated id")
        comp_names[c["id"]] = c["name"]
        _check_unknown(c, f"computation {c['name']!r}", frozenset())
        idx: dict[int, dict[str, Any]] = {}
        for inst in c["instructions"]:
            inst.setdefault("id", 0)
            if inst["id"] in idx or not inst.get("opcode") or not inst.get("name"):
                raise ProtoError(f"corrupted: an instruction of {c['name']!r} has no opcode, no "
                                 "name or a repeated id")
            _check_instruction(inst, c["name"])
            idx[inst["id"]] = inst
        for inst in c["instructions"]:
            for o in inst.get("operand_ids", []):
                if o not in idx:
                    raise ProtoError(f"corrupted: instruction {inst['name']!r} uses operand id "
                                     f"{o}, not in {c['name']!r}")
            for cc in inst.get("called_computation_ids", []):
                if cc not in {x.get("id", 0) for x in comps}:
                    raise ProtoError(f"corrupted: instruction {inst['name']!r} calls computation "
                                     f"id {cc}, which does not exist")
        inst_index[c["id"]] = idx
    orders = {c["id"]: _post_order(c["instructions"], inst_index[c["id"]]) for c in comps}
    entry_id = m.get("entry_computation_id", comps[-1]["id"])
    if entry_id not in comp_names:
        raise ProtoError(f"corrupted: the entry computation id {entry_id} does not exist")
    entry = next(c for c in comps if c["id"] == entry_id)
    out = [_header(m, entry), _tables(m.get("stack_frame_index"))]
    for c in _computation_order(comps, orders):
        idx = inst_index[c["id"]]
        names = {i: inst["name"] for i, inst in idx.items()}
        types = {i: shape_dims(inst.get("shape") or {})[0] for i, inst in idx.items()}
        root = c.get("root_id", c["instructions"][-1]["id"])
        lines = [_instruction_line(inst, names, comp_names, types, inst["id"] == root)
                 for inst in orders[c["id"]]]
        prefix = "ENTRY " if c["id"] == entry_id else ""
        out.append(f"{prefix}{c['name']} {{\n" + "\n".join(lines) + "\n}\n\n")
    return "".join(out)
