"""pyprecision.reencode: bits, dtypes, selection, scaling, shards, npz, stats, streaming."""

from __future__ import annotations

import hashlib
import json
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from test_reencode_helpers import metadata, raw_tensors, sharded, single

import pyprecision as pp
from pyprecision.io import open_tensors
from pyprecision.reencode import reencode, tensor_seed

ST_NAME = {
    "bf16": "BF16",
    "fp16": "F16",
    "fp32r": "F32",
    "fp8e4m3fn": "F8_E4M3",
    "fp8e5": "F8_E5M2",
    "fp8e4": "U8",
}
FLOATS = (
    "layer.0.weight",
    "layer.0.bias",
    "norm.weight",
    "layer.1.weight",
    "special",
    "half",
    "double",
)


@pytest.mark.parametrize("fmt", sorted(ST_NAME))
def test_every_format_dtype_and_bits(tmp_path, fmt):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    s = reencode(src, out, fmt)
    f = pp.format(fmt)
    raw = raw_tensors(out)
    for name in FLOATS:
        assert raw[name]["dtype"] == ST_NAME[fmt], name
        assert raw[name]["shape"] == list(w[name].shape)
        want = pp.encode(w[name], fmt)  # the cast core is tested on its own; this checks plumbing
        assert raw[name]["data"] == want.astype(f"<u{f.bits // 8}").tobytes(), name
    assert raw["position_ids"]["dtype"] == "I64"
    assert raw["position_ids"]["data"] == w["position_ids"].tobytes()
    dtypes = json.loads(metadata(out)["pyprecision.dtypes"])
    assert dtypes == dict.fromkeys(FLOATS, f.name)
    assert {t.name for t in s.tensors if t.action == "kept"} == {"position_ids"}


def test_bf16_matches_ml_dtypes(tmp_path):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, "bf16")
    store = open_tensors(out)
    for name in ("layer.0.weight", "layer.1.weight", "half"):
        got = store.load(name)
        assert got.dtype == ml_dtypes.bfloat16
        assert got.tobytes() == w[name].astype(ml_dtypes.bfloat16).tobytes()


def test_fp8e4m3fn_in_range_matches_ml_dtypes(tmp_path):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, "float8_e4m3fn")
    got = open_tensors(out).load("layer.0.weight")
    assert got.dtype == ml_dtypes.float8_e4m3fn
    assert got.tobytes() == w["layer.0.weight"].astype(ml_dtypes.float8_e4m3fn).tobytes()


def test_metadata_says_what_was_done(tmp_path):
    src, _ = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, "fp8e5", rounding="rtz", exclude=("norm.*",))
    meta = metadata(out)
    assert meta["format"] == "pt"  # the input's own metadata is kept
    run = json.loads(meta["pyprecision.reencode"])
    assert run["format"] == "fp8e5" and run["rounding"] == "rtz" and run["saturate"] is True
    assert run["exclude"] == ["norm.*"] and run["version"] == pp.__version__
    assert run["source"] == "model.safetensors"


def test_include_exclude_keep_tensors_bit_for_bit(tmp_path):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, "bf16", include=("layer.*",), exclude=("*.bias",))
    raw = raw_tensors(out)
    assert raw["layer.0.weight"]["dtype"] == "BF16" and raw["layer.1.weight"]["dtype"] == "BF16"
    for kept, st in (
        ("layer.0.bias", "F32"),
        ("norm.weight", "F32"),
        ("half", "F16"),
        ("special", "F32"),
    ):
        assert raw[kept]["dtype"] == st and raw[kept]["data"] == w[kept].tobytes()


def test_fp8e4_is_u8_codes_that_round_trip_through_our_reader(tmp_path):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, "fp8e4")
    got = open_tensors(out).load("layer.0.weight")
    assert got.dtype == ml_dtypes.float8_e4m3
    want = pp.encode(w["layer.0.weight"], "fp8e4")
    np.testing.assert_array_equal(got.view(np.uint8), want)


def test_stochastic_chunking_equals_whole_tensor(tmp_path):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, "bf16", rounding="stochastic", seed=1234, chunk_elements=1000)
    got = open_tensors(out).load("layer.0.weight").view(np.uint16)
    seed = int.from_bytes(hashlib.sha256(b"1234:layer.0.weight").digest()[:8], "little")
    assert seed == tensor_seed(1234, "layer.0.weight")
    want = pp.encode(w["layer.0.weight"], "bf16", rounding="stochastic", seed=seed)
    np.testing.assert_array_equal(got, want)
    assert json.loads(metadata(out)["pyprecision.reencode"])["seed"] == 1234


def test_stochastic_without_seed_records_the_one_it_chose(tmp_path):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, "fp8e5", rounding="stochastic")
    seed = json.loads(metadata(out)["pyprecision.reencode"])["seed"]
    assert isinstance(seed, int)
    want = pp.encode(w["half"], "fp8e5", rounding="stochastic", seed=tensor_seed(seed, "half"))
    np.testing.assert_array_equal(open_tensors(out).load("half").view(np.uint8), want)


@pytest.mark.parametrize("fmt", ["fp8e4m3fn", "fp8e5", "fp8e4", "bf16"])
def test_scale_amax_and_its_inverse(tmp_path, fmt):
    src, w = single(tmp_path)
    out = tmp_path / "out.safetensors"
    reencode(src, out, fmt, scale="amax")
    f = pp.format(fmt)
    store = open_tensors(out)
    assert (
        json.loads(metadata(out)["pyprecision.scales"])["layer.1.weight"] == "layer.1.weight.scale"
    )
    for name in ("layer.0.weight", "layer.1.weight", "half"):
        x = w[name].astype(np.float64)
        s = float(store.load(name + ".scale"))
        ideal = np.abs(x).max() / f.max
        tiny = float(np.finfo(np.float32).tiny)
        assert s == (pytest.approx(ideal, rel=1e-6) if ideal >= tiny else tiny)  # documented clamp
        codes = store.load(name).view(f.storage_dtype)
        # the element with the largest magnitude lands on ±max (unless the scale was clamped)
        assert (
            ideal < tiny
            or int(codes.reshape(-1)[np.abs(x).argmax()]) & ((1 << (f.bits - 1)) - 1) == f.max_bits
        )
        back = pp.decode(codes, f).astype(np.float64) * s  # the documented inverse
        tol = 2.0 ** -(f.mantissa_bits + 1)  # half an ulp, relative, in the normal range
        normal = np.abs(x) / s >= f.min_normal
        assert np.all(np.abs(back - x)[normal] <= tol * np.abs(x)[normal] * (1 + 1e-9))
        assert np.all(np.abs(back - x)[~normal] <= f.min_subnormal * s / 2 * (1 + 1e-9))


def test_scale_name_clash(tmp_path):
    import safetensors.numpy as stnp

    from pyprecision.errors import DumpError

    stnp.save_file(
        {"a": np.ones(2, np.float32), "a.scale": np.ones(1, np.float32)},
        str(tmp_path / "m.safetensors"),
    )
    with pytest.raises(DumpError, match="already has a tensor named 'a.scale'"):
        reencode(tmp_path / "m.safetensors", tmp_path / "o.safetensors", "bf16", scale="amax")


def test_sharded_checkpoint_mirrors_shards_and_index(tmp_path):
    d, w = sharded(tmp_path)
    out = tmp_path / "out"
    s = reencode(d, out, "bf16", verify=True)
    assert s.verify_failures == []
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert (
        index["weight_map"]
        == json.loads((d / "model.safetensors.index.json").read_text())["weight_map"]
    )
    files = {p.name for p in out.iterdir()}
    assert files == {
        "model.safetensors.index.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    }
    assert index["metadata"]["total_size"] == sum(
        len(v["data"]) for f in files if f.endswith("s") for v in raw_tensors(out / f).values()
    )
    store = open_tensors(out)
    np.testing.assert_array_equal(
        store.load("layer.1.weight").view(np.uint16), pp.encode(w["layer.1.weight"], "bf16")
    )


def test_npz_and_npy_inputs_and_npz_output(tmp_path):
    w = {"a": np.linspace(-500, 500, 101, dtype=np.float32), "i": np.arange(3, dtype=np.int32)}
    d = tmp_path / "in"
    d.mkdir()
    np.savez(d / "pack.npz", **w)
    np.save(d / "solo.npy", np.float32([1, 2.5, 3e5]))
    out = tmp_path / "out"
    s = reencode(d, out, "fp8e4m3fn", output_format="npz", verify=True)
    assert not s.verify_failures
    z = np.load(out / "pack.npz")
    assert z["a"].dtype == np.uint8  # fp8 codes, named in __metadata__.json
    np.testing.assert_array_equal(z["a"], pp.encode(w["a"], "fp8e4m3fn"))
    np.testing.assert_array_equal(z["i"], w["i"])
    meta = json.loads(z["__metadata__.json"])  # a plain JSON member, not an array
    assert json.loads(meta["pyprecision.dtypes"])["a"] == "fp8e4m3fn"
    assert open_tensors(out / "solo.npz").load("solo").dtype == ml_dtypes.float8_e4m3fn


def test_npz_output_of_fp16_is_plain_float16(tmp_path):
    src, w = single(tmp_path)
    reencode(src, tmp_path / "o.npz", "fp16")
    z = np.load(tmp_path / "o.npz")
    assert z["layer.0.weight"].dtype == np.float16
    np.testing.assert_array_equal(z["layer.0.weight"], w["layer.0.weight"].astype(np.float16))


def test_counts(tmp_path):
    import safetensors.numpy as stnp

    x = np.array([1.0, 449.0, 464.0, 465.0, 1e9, np.inf, -np.inf, np.nan, -1e9], np.float32)
    stnp.save_file({"x": x}, str(tmp_path / "m.safetensors"))
    sat = reencode(tmp_path / "m.safetensors", tmp_path / "a.safetensors", "fp8e4m3fn")
    # saturating: 465, 1e9, -1e9 overflow and ±inf are clamped; 449 and 464 round to 448 (§3)
    assert (
        sat.total("saturated"),
        sat.total("overflowed"),
        sat.total("nan"),
        sat.total("inf"),
    ) == (5, 0, 1, 0)
    plain = reencode(
        tmp_path / "m.safetensors", tmp_path / "b.safetensors", "fp8e4m3fn", saturate=False
    )
    # non-saturating e4m3fn: 465, ±1e9 become NaN, ±inf become NaN; NaN stays NaN
    assert (plain.total("saturated"), plain.total("overflowed"), plain.total("nan")) == (0, 3, 6)
    bf = reencode(tmp_path / "m.safetensors", tmp_path / "c.safetensors", "fp8e5", saturate=False)
    assert (bf.total("overflowed"), bf.total("inf"), bf.total("nan")) == (2, 4, 1)


def test_summary_table(tmp_path):
    src, _ = single(tmp_path)
    s = reencode(src, tmp_path / "o.safetensors", "bf16", exclude=("norm*",), verify=True)
    text = s.table()
    assert "float32 → bf16" in text and "int64 (kept)" in text and "float32 (kept)" in text
    assert "verify" in text and "ok" in text and "GB/s" in text
    rows = {r[0]: r[1:] for r in s.rows()}
    assert rows["float32 → bf16"][0] == 4 and rows["int64 (kept)"] == (1, 17 * 8, 17 * 8)


def test_verify_reports_a_difference(tmp_path, monkeypatch):
    import pyprecision.reencode.core as mod

    src, _ = single(tmp_path)
    real = mod.fresh_encode

    def off_by_one(*a, **k):
        out = real(*a, **k)
        out.reshape(-1)[0] ^= 1
        return out

    monkeypatch.setattr(mod, "fresh_encode", off_by_one)
    s = reencode(src, tmp_path / "o.safetensors", "bf16", verify=True)
    assert len(s.verify_failures) == len(FLOATS)
    assert "1 of" in s.verify_failures[0] and "first at (0" in s.verify_failures[0]


def test_streams_with_memory_bounded_by_the_chunk(tmp_path):
    import safetensors.numpy as stnp

    x = np.random.default_rng(1).standard_normal((4096, 2048)).astype(np.float32)  # 32 MiB
    stnp.save_file({"big": x}, str(tmp_path / "m.safetensors"))
    del x
    tracemalloc.start()
    try:
        reencode(
            tmp_path / "m.safetensors", tmp_path / "o.safetensors", "bf16", chunk_elements=1 << 18
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # input is memory-mapped; only chunk buffers are allocated


def test_empty_scalar_and_big_endian_tensors(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    np.save(d / "big.npy", np.arange(6, dtype=">f4").reshape(2, 3) * 1.25)
    np.save(d / "bigint.npy", np.arange(4, dtype=">i4"))
    np.save(d / "empty.npy", np.zeros((0, 4), np.float32))
    np.save(d / "scalar.npy", np.float64(2.5))
    for kind in ("safetensors", "npz"):
        out = tmp_path / f"out-{kind}"
        s = reencode(d, out, "bf16", output_format=kind, scale="amax", verify=True)
        assert not s.verify_failures, s.verify_failures
        store = open_tensors(out)
        np.testing.assert_array_equal(
            store.load("big").astype(np.float32) * store.load("big.scale"),
            np.arange(6, dtype=np.float32).reshape(2, 3) * 1.25,
        )
        np.testing.assert_array_equal(store.load("bigint"), np.arange(4))
        assert store.load("empty").shape == (0, 4) and store.load("scalar").shape == ()
        assert (
            float(store.load("scalar").astype(np.float32)) * float(store.load("scalar.scale"))
            == 2.5
        )


@pytest.mark.parametrize("fmt", sorted(ST_NAME))
def test_npz_output_every_format(tmp_path, fmt):
    src, w = single(tmp_path)
    out = tmp_path / "o.npz"
    s = reencode(src, out, fmt, verify=True)
    assert not s.verify_failures
    f = pp.format(fmt)
    z = np.load(out)
    raw = z["layer.1.weight"]
    assert raw.dtype.itemsize == f.bits // 8
    np.testing.assert_array_equal(raw.view(f.storage_dtype), pp.encode(w["layer.1.weight"], fmt))
    assert open_tensors(out).load("layer.1.weight").dtype == f.dtype


@pytest.mark.parametrize("name,kind", [("o.st", None), ("o.bin", "npz"), ("o.data", "safetensors")])
def test_output_names_without_the_usual_extension(tmp_path, name, kind):
    src, w = single(tmp_path)
    s = reencode(src, tmp_path / name, "fp8e5", output_format=kind, verify=True)
    assert not s.verify_failures
    got = open_tensors(tmp_path / name).load("half")  # recognised by its first bytes
    np.testing.assert_array_equal(got.view(np.uint8), pp.encode(w["half"], "fp8e5"))
