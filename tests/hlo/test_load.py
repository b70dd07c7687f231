"""``hlo.load``: every committed module (tests/data/load/, scripts/gen_load_artifacts.py) gives the
same printed HLO, the same explain rows and the same emulated bits whichever form it comes in; the
proto reader's text is jaxlib's print of the proto (the committed ``.hlo.txt``, written by jaxlib,
not by this code); bad input is one DumpError line naming the file."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.errors import DumpError
from pyprecision.hlo.proto_text import proto_to_text

LOAD = Path(__file__).parent.parent / "data" / "load"
MODELS = Path(__file__).parent.parent / "data" / "models" / "jax-0.10.2"
MANIFEST = json.loads((LOAD / "manifest.json").read_text())["models"]
NAMES = sorted(MANIFEST)
HAVE_JAXLIB = True
try:
    from jaxlib import _jax  # noqa: F401
except ImportError:
    HAVE_JAXLIB = False
needs_jaxlib = pytest.mark.skipif(not HAVE_JAXLIB, reason="jaxlib is not installed")
_METADATA = re.compile(r", metadata=\{[^}]*\}")


def _text(name: str) -> str:
    return (LOAD / f"{name}.hlo.txt").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_proto_reader_text_is_jaxlibs_print_of_the_proto(name: str) -> None:
    assert proto_to_text((LOAD / f"{name}.hlo.pb").read_bytes()) == _text(name)


@pytest.mark.parametrize("form", ["hlo.pb", "hlo.pb.gz"])
@pytest.mark.parametrize("name", NAMES)
def test_proto_forms_print_the_text_module_byte_for_byte(name: str, form: str) -> None:
    ref = hlo.to_text(hlo.parse(_text(name), filename=f"{name}.hlo.txt"))
    path = LOAD / f"{name}.{form}"
    assert hlo.to_text(hlo.load(path)) == ref
    assert hlo.to_text(hlo.load(path.read_bytes())) == ref
    assert hlo.to_text(hlo.load(str(path))) == ref


def test_text_source_forms_path_str_and_bytes_agree() -> None:
    text = _text("scan_rnn")
    ref = hlo.to_text(hlo.parse(text))
    assert hlo.to_text(hlo.load(text)) == ref
    assert hlo.to_text(hlo.load(text.encode())) == ref
    assert hlo.to_text(hlo.load(gzip.compress(text.encode()))) == ref


@needs_jaxlib
@pytest.mark.parametrize("name", NAMES)
def test_stablehlo_gives_the_same_module(name: str) -> None:
    """Byte-identical where jaxlib itself converts the StableHLO back to the same text (the
    manifest says which); for the rest jaxlib names two region parameters' op_name differently,
    and the modules agree with metadata removed."""
    got = hlo.to_text(hlo.load(LOAD / f"{name}.stablehlo.mlir"))
    ref = hlo.to_text(hlo.parse(_text(name)))
    if MANIFEST[name]["stablehlo_converts_to_same_text"]:
        assert got == ref
    else:
        assert got != ref and _METADATA.sub("", got) == _METADATA.sub("", ref)


@needs_jaxlib
def test_stablehlo_bytecode_gives_the_same_module() -> None:
    got = hlo.load(LOAD / "mlp_param.stablehlo.mlirbc")
    assert hlo.to_text(got) == hlo.to_text(hlo.parse(_text("mlp_param")))


def _inputs(name: str) -> list[np.ndarray]:
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent))
    from models_data import load_model

    return list(load_model(name).inputs)


@pytest.mark.parametrize("name", ["mlp_param", "bf16_mlp", "scan_rnn", "cond_model"])
def test_emulated_bits_are_identical_from_every_form(name: str) -> None:
    from pyprecision.emulate import run_hlo

    args = _inputs(name)
    ref = run_hlo(hlo.parse(_text(name)), args)
    for form in ("hlo.pb", "hlo.pb.gz") + (("stablehlo.mlir",) if HAVE_JAXLIB else ()):
        outs = run_hlo(hlo.load(LOAD / f"{name}.{form}"), args)
        assert len(outs) == len(ref)
        for a, b in zip(outs, ref, strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), form


def test_explain_rows_and_locations_are_identical_from_proto() -> None:
    from pyprecision.explain import explain_hlo_program

    flags = ["--auto-cast", "matmult", "--auto-cast-type", "bf16"]
    a = explain_hlo_program(str(LOAD / "mlp_param.hlo.txt"), flags).to_json()
    b = explain_hlo_program(str(LOAD / "mlp_param.hlo.pb"), flags).to_json()
    rows_a, rows_b = a["rows"], b["rows"]
    # an op without source info is located by its line in the module's printed text (LD5):
    # the same line in both, under each file's own name
    text_name, pb_name = str(LOAD / "mlp_param.hlo.txt"), str(LOAD / "mlp_param.hlo.pb")
    for r in rows_a:
        r["location"] = r["location"].replace(text_name, pb_name)
    assert rows_a == rows_b and rows_a
    # parameters are located by their names (explain decision X3), read from the proto as from text
    assert [r["location"] for r in rows_b if r["op"] == "parameter"][:2] == ["x", "w[0]"]
    # the others come from the proto's metadata and stack-frame tables
    assert any(r.get("location", "").startswith("scripts/lower_models.py:") for r in rows_b)


# -- bad input ------------------------------------------------------------------------------
PROTO = (LOAD / "mlp_param.hlo.pb").read_bytes()


def _error(data: bytes, name: str) -> str:
    with pytest.raises(DumpError) as e:
        hlo.load(data, name=name)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{name}: ")
    return msg


def test_neff_says_compiled_output_and_asks_for_the_hlo_pb() -> None:
    msg = _error(b"\x01\x00\x00\x00" + bytes(range(256)) * 4, "model.neff")
    assert "NEFF" in msg and "compiled output" in msg and ".hlo.pb" in msg


@pytest.mark.parametrize("cut", [1, 17, 100, len(PROTO) // 2, len(PROTO) - 1])
def test_truncated_proto(cut: int) -> None:
    msg = _error(PROTO[:cut], "m.hlo.pb")
    assert "not an HLO module" in msg and ("truncated" in msg or "corrupted" in msg
                                           or "another message" in msg or "no module" in msg
                                           or "empty" in msg)


def test_corrupted_proto_wire_type() -> None:
    data = bytearray(PROTO)
    data[0] = (data[0] & ~7) | 7  # field 1 with the invalid wire type 7
    assert "corrupted: wire type 7" in _error(bytes(data), "m.hlo.pb")


def test_proto_of_another_message() -> None:
    """XLA's CompileOptionsProto (a real proto of another kind; committed by the generator)."""
    msg = _error((LOAD / "bad" / "compile_options.pb").read_bytes(), "opts.pb")
    assert "not an HloModuleProto" in msg


def test_gzip_that_does_not_unpack() -> None:
    gz = (LOAD / "mlp_param.hlo.pb.gz").read_bytes()
    assert "a gzip that does not unpack" in _error(gz[:len(gz) // 2], "m.hlo.pb.gz")
    broken = gz[:12] + bytes(b ^ 0x55 for b in gz[12:40]) + gz[40:]
    assert "a gzip that does not unpack" in _error(broken, "m.hlo.pb.gz")


@needs_jaxlib
def test_mlir_jaxlib_cannot_convert() -> None:
    text = (LOAD / "mlp_param.stablehlo.mlir").read_text().replace("stablehlo.tanh", "stablehlo.nope")
    assert "MLIR text that jaxlib cannot convert to HLO" in _error(text.encode(), "m.mlir")


def test_mlir_without_jaxlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    load_mod = importlib.import_module("pyprecision.hlo.load")

    monkeypatch.setattr(load_mod, "_mlir_converter", lambda: load_mod._missing)
    msg = _error((LOAD / "mlp_param.stablehlo.mlir").read_bytes(), "m.mlir")
    assert "needs jaxlib" in msg and "pyprecision[jax]" in msg


def test_unsupported_field_is_refused_by_name_not_dropped() -> None:
    """An instruction that sets a field the reader does not print (custom-call output aliasing,
    field 74, here hand-encoded) is refused, naming the field."""
    data = _hand_module(_msg(74, _key(2, 0) + _uvarint(1)))
    with pytest.raises(DumpError, match="sets output_operand_aliasing"):
        hlo.load(data, name="alias.hlo.pb")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match="no such file"):
        hlo.load(tmp_path / "nope.hlo.pb")
    with pytest.raises(DumpError, match="is a directory"):
        hlo.load(tmp_path)


@needs_jaxlib
def test_from_jax_gives_the_lowered_module_with_locations() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from pyprecision.emulate import run_hlo

    def f(x, w):  # noqa: ANN001, ANN202
        return jnp.tanh(x @ w) * 2.0 + 1.0

    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    w = np.linspace(0.5, -0.5, 8, dtype=np.float32).reshape(4, 2)
    m = hlo.from_jax(f, x, w)
    assert m.name == "jit_f" and any(i.opcode == "dot" for i in m.entry.instructions)
    assert any("jit(f)/" in i.metadata.get("op_name", "") for i in m.entry.instructions)
    assert "test_load.py" in hlo.to_text(m)  # the source location, from the stack frames
    assert hlo.to_text(hlo.from_jax(jax.jit(f), x, w)) == hlo.to_text(m)  # a jitted fn too
    (got,) = run_hlo(m, [x, w])
    assert got.shape == (3, 2) and got.dtype == np.float32


def _key(number: int, wire: int) -> bytes:
    return _uvarint(number << 3 | wire)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _msg(number: int, body: bytes) -> bytes:
    return _key(number, 2) + _uvarint(len(body)) + body


def _hand_module(extra: bytes = b"") -> bytes:
    """HloModuleProto{name, computations[{name, instructions[{name, opcode, shape, id,
    parameter_number}], id, root_id}], entry_computation_id}, encoded by hand from hlo.proto's
    field numbers (1, 3 / 1, 2, 5, 6 / 1, 2, 3, 35, 9; ShapeProto 2, 3, 5)."""
    shape = _key(2, 0) + _uvarint(11) + _key(3, 0) + _uvarint(2) + _msg(5, _key(1, 0) + b"\x00")
    inst = (_msg(1, b"p.1") + _msg(2, b"parameter") + _msg(3, shape) + _key(35, 0) + _uvarint(7)
            + _key(9, 0) + _uvarint(0) + extra)
    comp = _msg(1, b"main.1") + _msg(2, inst) + _key(5, 0) + _uvarint(3) + _key(6, 0) + _uvarint(7)
    return _msg(1, b"hand") + _msg(3, comp) + _key(6, 0) + _uvarint(3)


def test_a_hand_encoded_module_reads_as_its_text() -> None:
    assert proto_to_text(_hand_module()) == (
        "HloModule hand, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\n"
        "ENTRY main.1 {\n  ROOT p.1 = f32[2]{0} parameter(0)\n}\n\n")


def test_a_set_field_unknown_to_the_reader_is_refused() -> None:
    """A newer XLA's field (here number 999) that holds a value: refused, naming it; the same
    field empty (not set) is read."""
    assert "p.1" in proto_to_text(_hand_module(_key(999, 0) + _uvarint(0)))
    with pytest.raises(DumpError, match="sets proto field 999, unknown to the reader"):
        hlo.load(_hand_module(_key(999, 0) + _uvarint(5)), name="new.hlo.pb")


@needs_jaxlib
def test_mlir_with_mhlo_attributes_from_jaxlib_loads_and_runs_the_same() -> None:
    """jaxlib's own HLO → MLIR conversion (mhlo.* module attributes) reads back; its locations are
    regrouped by that conversion, the computation is the same: identical bits."""
    from jaxlib import _hlo, _jax

    from pyprecision.emulate import run_hlo

    pb = (LOAD / "scan_rnn.hlo.pb").read_bytes()
    text = _jax.mlir.xla_computation_to_mlir_module(_hlo.XlaComputation(pb))
    assert "mhlo." in text
    args = _inputs("scan_rnn")
    got = run_hlo(hlo.load(text), args)
    ref = run_hlo(hlo.load(pb), args)
    assert [a.tobytes() for a in got] == [b.tobytes() for b in ref]
