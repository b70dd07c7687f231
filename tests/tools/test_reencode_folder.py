"""A Hugging Face-shaped model folder re-encoded whole: every file is accounted for (issue 14).

The folder is shaped like bert-base-uncased's on the Hub: config.json, the tokenizer files, a
generation config, a README, a sentence-transformers pooling sub-folder, weights sharded in two
``.safetensors`` files with their index — plus a ``pytorch_model.bin`` of the same weights, which a
re-encode must not carry over. Input shards are written by the ``safetensors`` package itself; the
output is read back with it and checked the way transformers checks a sharded checkpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

safetensors = pytest.importorskip("safetensors", reason="the safetensors package cross-checks our files")
import safetensors.numpy as stnp  # noqa: E402

from pyprecision.errors import DumpError  # noqa: E402
from pyprecision.reencode import reencode  # noqa: E402

CONFIG = {
    "_name_or_path": "bert-small-like",
    "architectures": ["BertModel"],
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_size": 32,
    "intermediate_size": 64,
    "model_type": "bert",
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "torch_dtype": "float32",
    "transformers_version": "4.46.0",
    "vocab_size": 40,
}

OTHER_FILES = {
    "tokenizer.json": json.dumps({"version": "1.0", "model": {"type": "WordPiece", "vocab": {"[PAD]": 0}}}),
    "tokenizer_config.json": json.dumps({"do_lower_case": True, "model_max_length": 512}),
    "special_tokens_map.json": json.dumps({"cls_token": "[CLS]", "sep_token": "[SEP]"}),
    "vocab.txt": "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n",
    "generation_config.json": json.dumps({"pad_token_id": 0}),
    "README.md": "# bert-small-like\n\nA test model.\n",
    "1_Pooling/config.json": json.dumps({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}),
}


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    w = {
        "embeddings.word_embeddings.weight": rng.standard_normal((40, 32), np.float32),
        "embeddings.position_embeddings.weight": rng.standard_normal((16, 32), np.float32),
        "embeddings.LayerNorm.weight": np.ones(32, np.float32),
        "embeddings.position_ids": np.arange(16, dtype=np.int64)[None],
    }
    for i in range(2):
        p = f"encoder.layer.{i}."
        w[p + "attention.self.query.weight"] = rng.standard_normal((32, 32), np.float32)
        w[p + "attention.self.query.bias"] = rng.standard_normal(32, np.float32)
        w[p + "intermediate.dense.weight"] = rng.standard_normal((64, 32), np.float32)
        w[p + "output.dense.weight"] = rng.standard_normal((32, 64), np.float32)
    return w


def make_folder(root: Path) -> dict[str, np.ndarray]:
    """Write the model folder; return its weights."""
    root.mkdir()
    w = _weights(np.random.default_rng(7))
    names = sorted(w)
    shards = {"model-00001-of-00002.safetensors": names[:5], "model-00002-of-00002.safetensors": names[5:]}
    weight_map = {}
    for shard, ns in shards.items():
        stnp.save_file({n: w[n] for n in ns}, str(root / shard), metadata={"format": "pt"})
        weight_map.update({n: shard for n in ns})
    total = sum(a.nbytes for a in w.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (root / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    (root / "config.json").write_text(json.dumps(CONFIG, indent=2))
    for rel, text in OTHER_FILES.items():
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_text(text)
    (root / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not read")  # weights in another format
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return w


def transformers_index_check(folder: Path) -> dict[str, str]:
    """What transformers' sharded loading relies on: every shard the index names exists, the
    shards hold exactly the index's tensors, total_size is their byte count. Returns the weight map."""
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    wmap = index["weight_map"]
    held: dict[str, str] = {}
    nbytes = 0
    for shard in sorted(set(wmap.values())):
        assert (folder / shard).is_file(), shard
        with safetensors.safe_open(str(folder / shard), framework="numpy") as fh:
            for k in fh.keys():  # noqa: SIM118 (safe_open has no __iter__)
                held[k] = shard
                sl = fh.get_slice(k)
                itemsize = {"BF16": 2, "F16": 2, "F32": 4, "I64": 8, "F8_E4M3": 1, "F8_E5M2": 1}
                nbytes += int(np.prod(sl.get_shape(), dtype=np.int64)) * itemsize[sl.get_dtype()]
    assert held == wmap
    assert index["metadata"]["total_size"] == nbytes
    return wmap


def test_every_file_of_the_folder_is_accounted_for(tmp_path: Path) -> None:
    src = tmp_path / "bert"
    w = make_folder(src)
    out = tmp_path / "bert-bf16"
    s = reencode(src, out, "bf16")

    # Every input file is re-encoded, copied or skipped with a reason — none silently dropped.
    inputs = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    outputs = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    skipped = dict(s.skipped)
    assert skipped == {
        "pytorch_model.bin": "weights in another format (the output would hold two models)",
        ".git/": "hidden directory",
    }
    assert inputs - outputs == {"pytorch_model.bin", ".git/HEAD"}
    assert outputs == inputs - {"pytorch_model.bin", ".git/HEAD"}

    # The files beside the weights are byte-identical, config.json differs only in its dtype.
    for rel in OTHER_FILES:
        assert (out / rel).read_bytes() == (src / rel).read_bytes(), rel
    cfg = json.loads((out / "config.json").read_text())
    assert cfg == {**CONFIG, "torch_dtype": "bfloat16"}
    assert "config.json: dtype set to bfloat16 (was float32)" in s.notes

    # The weights load with the safetensors package, bits equal to ml_dtypes' RNE cast.
    wmap = transformers_index_check(out)
    assert set(wmap) == set(w)
    for name, shard in wmap.items():
        got = stnp.load_file(str(out / shard))[name]
        if w[name].dtype == np.float32:
            assert got.dtype == ml_dtypes.bfloat16
            want = w[name].astype(ml_dtypes.bfloat16)
            assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), name
        else:
            assert np.array_equal(got, w[name]), name
    assert not list(out.glob(".*")), "no marker or temporary left"


@pytest.mark.parametrize("fmt", ["fp8e4m3fn", "fp8e5", "fp8e4"])
def test_fp8_keeps_config_dtype_and_says_why(tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    s = reencode(src, tmp_path / "o", fmt)
    assert (tmp_path / "o" / "config.json").read_bytes() == (src / "config.json").read_bytes()
    assert f"config.json: dtype float32 kept: transformers upcasts the {fmt} weights to it on load" \
        in s.notes


@pytest.mark.parametrize(("fmt", "name"), [("fp16", "float16"), ("fp32r", "float32")])
def test_config_dtype_names_the_run_dtype(tmp_path: Path, fmt: str, name: str) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    reencode(src, tmp_path / "o", fmt)
    assert json.loads((tmp_path / "o" / "config.json").read_text()) == {**CONFIG, "torch_dtype": name}


def test_no_tensor_encoded_leaves_config_unchanged(tmp_path: Path) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    reencode(src, tmp_path / "o", "bf16", include=("*position_ids",))  # an int64 tensor: kept
    assert (tmp_path / "o" / "config.json").read_bytes() == (src / "config.json").read_bytes()


def test_existing_companion_file_refused_before_anything_is_written(tmp_path: Path) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    out = tmp_path / "o"
    out.mkdir()
    (out / "vocab.txt").write_text("mine\n")
    with pytest.raises(DumpError, match="o: the output folder already exists and holds vocab.txt"):
        reencode(src, out, "bf16")
    assert sorted(p.name for p in out.iterdir()) == ["vocab.txt"]
    assert (out / "vocab.txt").read_text() == "mine\n"
    reencode(src, out, "bf16", overwrite=True)
    assert (out / "vocab.txt").read_bytes() == (src / "vocab.txt").read_bytes()


def test_failed_copy_leaves_no_partial_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    import pyprecision.reencode.folder as folder

    real = folder.atomic_file
    calls = []

    def failing(path, *a, **k):  # type: ignore[no-untyped-def]
        calls.append(path)
        if len(calls) == 3:
            raise DumpError(f"{path}: cannot write: No space left on device")
        return real(path, *a, **k)

    monkeypatch.setattr(folder, "atomic_file", failing)
    with pytest.raises(DumpError, match="No space left"):
        reencode(src, tmp_path / "o", "bf16")
    assert not (tmp_path / "o").exists()


def test_symlink_out_of_the_folder_refused(tmp_path: Path) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    os.symlink(secret, src / "notes.txt")
    with pytest.raises(DumpError, match="symbolic link leading out"):
        reencode(src, tmp_path / "o", "bf16")
    assert not (tmp_path / "o").exists()


def test_malformed_config_is_a_located_error(tmp_path: Path) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    (src / "config.json").write_text('{\n  "torch_dtype": "float32",\n  oops\n}\n')
    with pytest.raises(DumpError, match=r"config.json:3:3: not valid JSON"):
        reencode(src, tmp_path / "o", "bf16")
    assert not (tmp_path / "o").exists()


def test_list_names_the_shard_of_each_tensor(tmp_path: Path) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    index = json.loads((src / "model.safetensors.index.json").read_text())["weight_map"]
    r = subprocess.run(
        [sys.executable, "-m", "pyprecision.tools.cli", "reencode", str(src), "--to", "bf16", "--list"],
        capture_output=True, text=True, check=True,
    )
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert {row[0]: row[3] for row in rows} == index


REAL = Path(__file__).resolve().parent.parent / "data" / "hf" / "tiny-bert"


@pytest.mark.parametrize(("fmt", "dtype"), [("bf16", "bfloat16"), ("fp8e4m3fn", "float32")])
def test_folder_written_by_transformers_save_pretrained(tmp_path: Path, fmt: str, dtype: str) -> None:
    """tests/data/hf/tiny-bert was written by transformers 5.24's save_pretrained (three shards, an
    index, the fast tokenizer; config key ``dtype``): re-encoded, it is the same folder file for file."""
    out = tmp_path / "o"
    s = reencode(REAL, out, fmt)
    names = sorted(p.name for p in REAL.iterdir())
    assert sorted(p.name for p in out.iterdir()) == names
    assert s.skipped == []
    for n in ("tokenizer.json", "tokenizer_config.json"):
        assert (out / n).read_bytes() == (REAL / n).read_bytes()
    cfg, orig = (json.loads((d / "config.json").read_text()) for d in (out, REAL))
    assert orig["dtype"] == "float32"
    assert cfg == {**orig, "dtype": dtype}
    wmap = transformers_index_check(out)
    assert wmap == json.loads((REAL / "model.safetensors.index.json").read_text())["weight_map"]


def test_folder_of_torch_bin_weights_says_how_to_name_them(tmp_path: Path) -> None:
    src = tmp_path / "old"
    src.mkdir()
    (src / "config.json").write_text(json.dumps(CONFIG))
    (src / "pytorch_model.bin").write_bytes(b"PK\x03\x04")
    with pytest.raises(DumpError, match=r"it holds pytorch_model.bin: name such a file itself"):
        reencode(src, tmp_path / "o", "bf16")
    assert not (tmp_path / "o").exists()


def test_model_folder_on_an_object_store_comes_whole(tmp_path: Path) -> None:
    """The folder under a memory:// prefix (fsspec's in-process store) re-encodes, into another
    prefix and into a local directory, to the same files as the local folder does."""
    fsspec = pytest.importorskip("fsspec", reason="fsspec is the object-store layer (pyprecision[cloud])")
    fs = fsspec.filesystem("memory")
    prefix = f"/pp-folder-{os.getpid()}"
    for p in REAL.iterdir():
        fs.pipe_file(f"{prefix}/in/{p.name}", p.read_bytes())
    fs.pipe_file(f"{prefix}/in/.git/HEAD", b"ref\n")
    try:
        reencode(REAL, tmp_path / "want", "bf16")
        want = {p.name: p.read_bytes() for p in (tmp_path / "want").iterdir()}
        s = reencode(f"memory://{prefix}/in", tmp_path / "local", "bf16")
        assert {p.name: p.read_bytes() for p in (tmp_path / "local").iterdir()} == want
        assert s.skipped == [(".git/", "hidden directory")]
        reencode(f"memory://{prefix}/in", f"memory://{prefix}/out", "bf16")
        got = {k.rsplit("/", 1)[-1]: fs.cat_file(k) for k in fs.find(f"{prefix}/out")}
        assert got == want
    finally:
        fs.rm(prefix, recursive=True)


def test_cli_names_the_occupied_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyprecision.tools.cli import main

    src = tmp_path / "bert"
    make_folder(src)
    out = tmp_path / "x"
    assert main(["reencode", "-q", str(src), "-o", str(out), "--to", "bf16"]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["reencode", "-q", str(src), "-o", str(out), "--to", "fp8e4m3fn"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"pyprecision reencode: error: {out}: the output folder already exists "
                          "and holds ")
    assert "--force" in err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_config_note_is_always_there(tmp_path: Path) -> None:
    src = tmp_path / "bert"
    make_folder(src)
    cfg = json.loads((src / "config.json").read_text())
    del cfg["torch_dtype"]
    (src / "config.json").write_text(json.dumps(cfg))
    s = reencode(src, tmp_path / "b", "bf16")
    assert "config.json: torch_dtype set to bfloat16 (it named no dtype)" in s.notes
    assert json.loads((tmp_path / "b" / "config.json").read_text())["torch_dtype"] == "bfloat16"
    s = reencode(src, tmp_path / "f8", "fp8e5")
    assert any(n.startswith("config.json: torch_dtype set to float32 (it named no dtype)")
               for n in s.notes)
    s = reencode(src, tmp_path / "k", "bf16", include=("*position_ids",))
    assert "config.json: unchanged (no tensor was re-encoded)" in s.notes
