"""``reencode`` and ``verify`` end to end on URLs (issue 15): Python API and command line, memory://
in process and file://; the output bytes are those of the local-path run. And a hypothesis fuzz of
the remote header readers: truncated or malformed bytes on memory:// raise only DumpError."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import fsspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_remote_fs import fresh_bucket, objects, upload, write_checkpoints

import pyprecision as pp
import pyprecision.ir
from pyprecision.errors import DumpError
from pyprecision.io import open_tensors, save_safetensors
from pyprecision.reencode import reencode
from pyprecision.tools.cli import main

MEM = fsspec.filesystem("memory")


@pytest.fixture
def bucket() -> Iterator[str]:
    """A fresh memory:// prefix, removed afterwards."""
    yield from fresh_bucket()


ROOT = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _remote_tree(prefix: str) -> dict[str, bytes]:
    return {o: MEM.cat_file(f"{prefix}/{o}") for o in objects(MEM, prefix)}


@pytest.mark.parametrize(
    ("to", "rounding"), [("bf16", "rne"), ("fp8e4m3fn", "rne"), ("fp8e5", "stochastic")]
)
def test_reencode_a_sharded_url_writes_the_local_bytes(
    tmp_path: Path, bucket: str, to: str, rounding: str
) -> None:
    local = write_checkpoints(tmp_path)
    upload(local["sharded"], MEM, f"{bucket}/ck")
    seed = 11 if rounding == "stochastic" else None
    opts = {
        "exclude": ("*.bias",),
        "scale": "amax",
        "verify": True,
        "rounding": rounding,
        "seed": seed,
    }
    want = reencode(local["sharded"], tmp_path / "out", to, **opts)
    got = reencode(f"{bucket}/ck", f"{bucket}/out", to, **opts)
    assert got.verify_failures == [] and want.verify_failures == []
    assert _remote_tree(f"{bucket}/out") == _tree(tmp_path / "out")
    assert sorted(_tree(tmp_path / "out")) == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
    ]
    assert got.outputs == [f"{bucket}/out/{n}" for n in sorted(_tree(tmp_path / "out"))]


def test_reencode_mixes_local_and_remote_and_file_urls(tmp_path: Path, bucket: str) -> None:
    local = write_checkpoints(tmp_path)
    reencode(local["safetensors"], tmp_path / "a.safetensors", "bf16")
    ref = (tmp_path / "a.safetensors").read_bytes()
    reencode(local["safetensors"], f"{bucket}/a.safetensors", "bf16")  # local → remote
    assert MEM.cat_file(f"{bucket}/a.safetensors") == ref
    reencode(f"{bucket}/a.safetensors", tmp_path / "b.safetensors", "bf16")  # remote → local
    reencode(tmp_path / "a.safetensors", tmp_path / "c.safetensors", "bf16")
    assert (tmp_path / "b.safetensors").read_bytes() == (tmp_path / "c.safetensors").read_bytes()
    reencode(f"file://{local['safetensors']}", f"file://{tmp_path}/d.safetensors", "bf16")
    assert (tmp_path / "d.safetensors").read_bytes() == ref
    reencode(local["npz"], f"{bucket}/m.npz", "fp8e5", verify=True)  # .npz out through the spool
    reencode(local["npz"], tmp_path / "m.npz", "fp8e5")
    a, b = open_tensors(f"{bucket}/m.npz"), open_tensors(str(tmp_path / "m.npz"))
    assert all(a.load(n).tobytes() == b.load(n).tobytes() for n in a)


def test_reencode_a_model_folder_into_a_bucket(tmp_path: Path, bucket: str) -> None:
    local = write_checkpoints(tmp_path)
    folder = local["sharded"]
    (folder / "config.json").write_text(json.dumps({"torch_dtype": "float32"}))
    (folder / "sub").mkdir()
    (folder / "sub" / "tokenizer.json").write_text("{}")
    reencode(folder, tmp_path / "out", "bf16")
    reencode(folder, f"{bucket}/out", "bf16")
    assert _remote_tree(f"{bucket}/out") == _tree(tmp_path / "out")
    assert "sub/tokenizer.json" in _tree(tmp_path / "out")


def test_reencode_command_line_on_urls(
    tmp_path: Path, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    local = write_checkpoints(tmp_path)
    upload(local["sharded"], MEM, f"{bucket}/ck")
    argv = ["--to", "fp8e4", "--exclude", "*.bias", "--verify", "-q"]
    assert main(["reencode", str(local["sharded"]), "-o", str(tmp_path / "out"), *argv]) == 0
    assert (
        main(
            ["reencode", f"{bucket}/ck/model.safetensors.index.json", "-o", f"{bucket}/out", *argv]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "verify" in out and f"wrote {bucket}/out/model.safetensors.index.json" in out
    assert _remote_tree(f"{bucket}/out") == _tree(tmp_path / "out")
    assert (
        main(["reencode", f"{bucket}/ck", "-o", f"{bucket}/out", *argv]) == 2
    )  # exists: no --force
    assert "already exists" in capsys.readouterr().err
    assert main(["reencode", f"{bucket}/ck", "--list", "--to", "bf16"]) == 0
    assert "layer.0.weight" in capsys.readouterr().out


def _verify_files(d: Path) -> dict[str, Path]:
    x = (np.random.default_rng(3).standard_normal((8, 16)) * 10).astype(np.float32)
    codes = pp.encode(x, "bf16")
    bad = codes.copy()
    bad[2, 5] ^= 1
    np.save(d / "x.npy", x)
    np.save(d / "good.npy", codes)
    np.save(d / "bad.npy", bad)
    codes.tofile(d / "good.bin")
    xT = np.array([[1, -2], [0.5, 3], [-1, 1], [2, 0.25]], np.float32)  # products exact in fp32
    np.savez(d / "in.npz", xT=xT)
    np.savez(d / "ref.npz", y=_mlp_reference(xT))
    return {
        "x": d / "x.npy",
        "good": d / "good.npy",
        "bad": d / "bad.npy",
        "raw": d / "good.bin",
        "in": d / "in.npz",
        "ref": d / "ref.npz",
    }


def _mlp_reference(xT: np.ndarray) -> np.ndarray:
    """examples/mlp.pir by numpy: y = relu(xT^T @ W + b), W and b from the program's constants."""
    f = pp.ir.parse((ROOT / "examples" / "mlp.pir").read_text()).main
    w = np.asarray(f.get_tensor("w").value, np.float32)
    acc = np.zeros((xT.shape[1], w.shape[1]), np.float32)
    for k in range(xT.shape[0]):
        acc = (acc + (xT[k][:, None] * w[k][None, :]).astype(np.float32)).astype(np.float32)
    return np.maximum(acc + np.float32(0.25), np.float32(0)).astype(np.float32)


def test_verify_command_line_on_urls(
    tmp_path: Path, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _verify_files(tmp_path)
    for p in files.values():
        upload(p, MEM, f"{bucket}/{p.name}")
    cases = [("good.npy", [], 0), ("bad.npy", [], 1), ("good.bin", ["--shape", "8,16"], 0)]
    for dump, extra, code in cases:
        results = []
        for base in (str(tmp_path), bucket, f"file://{tmp_path}"):
            argv = [
                "verify",
                "--input",
                f"{base}/x.npy",
                "--dump",
                f"{base}/{dump}",
                "--format",
                "bf16",
                "--json",
                *extra,
            ]
            assert main(argv) == code
            results.append(json.loads(capsys.readouterr().out))
        assert results[0] == results[1] == results[2]
        assert results[0]["mismatches"] == (1 if dump == "bad.npy" else 0)
    mlp = (ROOT / "examples" / "mlp.pir").read_bytes()
    MEM.pipe_file(f"{bucket}/mlp.pir", mlp)
    (tmp_path / "mlp.pir").write_bytes(mlp)
    outs = []
    for base in (str(tmp_path), bucket, f"file://{tmp_path}"):
        argv = [
            "verify",
            "--program",
            f"{base}/mlp.pir",
            "--inputs",
            f"{base}/in.npz",
            "--dump",
            f"{base}/ref.npz",
            "--json",
            "--no-diagnosis",
        ]
        code = main(argv)
        cap = capsys.readouterr()
        assert cap.out, cap.err
        doc = json.loads(cap.out)
        outs.append((code, doc["elements"], doc["mismatches"], doc["outputs"]))
    assert outs[0] == outs[1] == outs[2] and outs[0][:3] == (0, 6, 0)


def test_verify_api_reads_urls(tmp_path: Path, bucket: str) -> None:
    from pyprecision.verify import read_array, read_arrays

    files = _verify_files(tmp_path)
    upload(files["in"], MEM, f"{bucket}/in.npz")
    upload(files["good"], MEM, f"{bucket}/good.npy")
    assert read_arrays(f"{bucket}/in.npz")["xT"].tobytes() == np.load(files["in"])["xT"].tobytes()
    assert read_array(f"{bucket}/good.npy").tobytes() == np.load(files["good"]).tobytes()


# --- fuzz: the remote header readers on mutated bytes ----------------------------------------

_EXAMPLES = int(os.environ.get("PYPRECISION_FUZZ_EXAMPLES", "150"))


def _seed_files() -> dict[str, bytes]:
    import io
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d)
        save_safetensors(
            p / "m.safetensors",
            {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(3, np.int16)},
            {"k": "v"},
        )
        buf = io.BytesIO()
        np.savez(buf, a=np.arange(4, dtype=np.float32), b=np.zeros(2, np.int8))
        npy = io.BytesIO()
        np.save(npy, np.arange(5, dtype=np.float64))
        return {
            ".safetensors": (p / "m.safetensors").read_bytes(),
            ".npz": buf.getvalue(),
            ".npy": npy.getvalue(),
        }


_SEEDS = _seed_files()


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    ext = draw(st.sampled_from(sorted(_SEEDS)))
    data = bytearray(_SEEDS[ext])
    how = draw(st.sampled_from(["truncate", "flip", "splice", "random"]))
    if how == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
    elif how == "splice":
        i = draw(st.integers(0, len(data)))
        data[i:i] = draw(st.binary(max_size=64))
    else:
        data = bytearray(draw(st.binary(max_size=256)))
    return ext, bytes(data)


@settings(
    max_examples=_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=_mutated())
def test_fuzz_remote_readers_raise_only_dump_errors(case: tuple[str, bytes]) -> None:
    ext, data = case
    url = f"memory://fuzz/f{ext}"
    MEM.pipe_file(url, data)
    try:
        store = open_tensors(url)
        for name in store:
            store.load(name)
    except DumpError as exc:
        assert str(exc).startswith(url), str(exc)
    finally:
        MEM.rm_file(url)
