"""Fuzz every file reader: safetensors (mutated bytes and generated headers), sharded indexes,
.npz, .npy and raw dumps. Only DumpError (or another pyprecision error) may escape, every tensor
that opens must load, and no input may take longer than fuzzlib.DEADLINE_MS."""

from __future__ import annotations

import io as _io
import itertools
import json
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from fuzzlib import FUZZ, mutations, within_budget
from hypothesis import given
from hypothesis import strategies as st

from pyprecision.io import load_dump, open_tensors, read_raw, save_safetensors

_COUNTER = itertools.count()


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    """One directory for the module; every input gets a fresh name (a file still mapped by an
    earlier input's arrays is never rewritten)."""
    with tempfile.TemporaryDirectory(prefix="pp-fuzz-") as d:
        yield Path(d)


def _fresh(workdir: Path, suffix: str) -> Path:
    return workdir / f"in{next(_COUNTER)}{suffix}"


def _open_and_load(path: Path | str) -> None:
    store = open_tensors(path)
    for name in store:
        np.asarray(store.load(name)).tobytes()


def _safetensors_seed() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.safetensors"
        save_safetensors(p, {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
                             "b": np.arange(4).astype(ml_dtypes.bfloat16),
                             "i": np.array([1, 2], np.int64)}, metadata={"format": "pt"})
        return p.read_bytes()


def _npz_seed(compressed: bool) -> bytes:
    buf = _io.BytesIO()
    arrays = {"a": np.arange(5, dtype=np.float32), "b": np.ones((2, 2), np.int16)}
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def _npy_seed() -> bytes:
    buf = _io.BytesIO()
    np.save(buf, np.arange(12, dtype=np.float64).reshape(3, 4))
    return buf.getvalue()


SAFETENSORS = _safetensors_seed()
NPZ = [_npz_seed(False), _npz_seed(True)]
NPY = _npy_seed()


@FUZZ
@given(mutations(SAFETENSORS, max_edits=4))
def test_fuzz_safetensors_mutated(workdir, data):
    p = _fresh(workdir, ".safetensors")
    p.write_bytes(data)
    within_budget("safetensors (mutated bytes)", lambda: _open_and_load(p))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=12,
)
dtypes = st.sampled_from(["F32", "BF16", "F8_E4M3", "I64", "BOOL", "F4", "U8"]) | json_values
shapes = st.lists(st.integers(0, 2**64), max_size=70) | json_values
offsets = st.lists(st.integers(-2, 2**64) | st.booleans(), min_size=0, max_size=3) | json_values


@FUZZ
@given(st.dictionaries(st.text(min_size=1, max_size=5),
                       st.fixed_dictionaries({"dtype": dtypes, "shape": shapes,
                                              "data_offsets": offsets}) | json_values,
                       max_size=3),
       st.one_of(st.none(), st.dictionaries(st.text(max_size=20), json_values, max_size=2)),
       st.binary(max_size=64))
def test_fuzz_safetensors_headers(workdir, header, metadata, tail):
    if metadata is not None:
        header = {**header, "__metadata__": metadata}
    text = json.dumps(header).encode()
    p = _fresh(workdir, ".safetensors")
    p.write_bytes(struct.pack("<Q", len(text)) + text + tail)
    within_budget("safetensors (generated headers)", lambda: _open_and_load(p))


@FUZZ
@given(st.one_of(
    json_values,
    st.just({"weight_map": {"w": "a.safetensors", "b": "a.safetensors", "i": "a.safetensors"}}),
    st.fixed_dictionaries({"weight_map": st.dictionaries(
        st.sampled_from(["w", "b", "i"]) | st.text(max_size=4),
        st.sampled_from(["a.safetensors", "../a.safetensors", "/etc/passwd", "", ".",
                         "sub/a.safetensors"]) | json_values,
        max_size=3)}),
))
def test_fuzz_safetensors_index(workdir, doc):
    d = _fresh(workdir, "")
    d.mkdir()
    (d / "a.safetensors").write_bytes(SAFETENSORS)
    index = d / "model.safetensors.index.json"
    index.write_text(json.dumps(doc))
    within_budget("safetensors index", lambda: _open_and_load(index))
    within_budget("checkpoint directory", lambda: _open_and_load(d))


@FUZZ
@given(st.sampled_from(NPZ).flatmap(lambda s: mutations(s, max_edits=4)))
def test_fuzz_npz_mutated(workdir, data):
    p = _fresh(workdir, ".npz")
    p.write_bytes(data)
    within_budget("npz (mutated bytes)", lambda: _open_and_load(p))


@FUZZ
@given(mutations(NPY, max_edits=4))
def test_fuzz_npy_mutated(workdir, data):
    p = _fresh(workdir, ".npy")
    p.write_bytes(data)
    within_budget("npy (mutated bytes)", lambda: _open_and_load(p))
    within_budget("load_dump (npy)", lambda: np.asarray(load_dump(p)).tobytes())


raw_dtypes = st.sampled_from(["float32", "bf16", "F8_E4M3", "uint16", "object", "str", "V3",
                              "<U2", "nope", "", "fp8e4", "int64", "bool"]) | st.text(max_size=6)
raw_shapes = st.none() | st.text(max_size=12) | st.lists(st.integers(-3, 2**64), max_size=4)


@FUZZ
@given(st.binary(max_size=64), raw_dtypes, raw_shapes, st.integers(-4, 80),
       st.sampled_from(["little", "big", "native", "middle"]))
def test_fuzz_raw_dumps(workdir, data, dtype, shape, offset, order):
    p = _fresh(workdir, ".bin")
    p.write_bytes(data)
    within_budget("raw dump (read_raw)",
                  lambda: np.asarray(read_raw(p, dtype, shape, byte_order=order,
                                              offset=offset)).tobytes())
