"""Hugging Face folders of torch weights (``pytorch_model.bin``, or shards with
``pytorch_model.bin.index.json``) re-encoded to safetensors under transformers' names.

tests/data/hf/tiny-bert-bin and tiny-bert-bin1 were written by transformers 4.46's own
``save_pretrained(safe_serialization=False)`` (scripts/gen_hf_bin_folders.py), of the very weights
of tiny-bert/ (the safetensors folder transformers 5 wrote; the script checks they are equal). So
the expectation of every test here is independent of the reader under test: tiny-bert's tensors
read with the safetensors package and cast by ml_dtypes, and tiny-bert's own index.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("torch", reason="reading torch.save files needs torch (pyprecision[torch])")
safetensors = pytest.importorskip("safetensors", reason="the safetensors package cross-checks our files")
import safetensors.numpy as stnp  # noqa: E402 (reads the float32 originals)
from test_reencode_folder import transformers_index_check  # noqa: E402

from pyprecision.errors import DumpError  # noqa: E402
from pyprecision.reencode import reencode  # noqa: E402
from pyprecision.tools.cli import main  # noqa: E402

HF = Path(__file__).resolve().parent.parent / "data" / "hf"
SHARDED, ONE, SAFE = HF / "tiny-bert-bin", HF / "tiny-bert-bin1", HF / "tiny-bert"
ML = {"bf16": ml_dtypes.bfloat16, "fp8e4m3fn": ml_dtypes.float8_e4m3fn}


def _original() -> dict[str, np.ndarray]:
    w: dict[str, np.ndarray] = {}
    for f in sorted(SAFE.glob("*.safetensors")):
        w.update(stnp.load_file(str(f)))
    return w


def _read(folder: Path) -> dict[str, tuple[str, list[int], bytes]]:
    """name -> (dtype, shape, bytes) of every tensor in the folder's .safetensors files, read from
    the format's own layout (8-byte header length, JSON header, data): safetensors' numpy API has
    no fp8, and our reader is what is under test."""
    w = {}
    for f in sorted(folder.glob("*.safetensors")):
        raw = f.read_bytes()
        n = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8 : 8 + n])
        header.pop("__metadata__", None)
        for k, v in header.items():
            a, b = v["data_offsets"]
            w[k] = (v["dtype"], v["shape"], raw[8 + n + a : 8 + n + b])
    return w


def _assert_cast_of_original(got: dict[str, tuple[str, list[int], bytes]], fmt: str) -> None:
    orig = _original()
    assert set(got) == set(orig) and len(orig) == 39
    tag = {"bf16": "BF16", "fp8e4m3fn": "F8_E4M3"}[fmt]
    for k, a in orig.items():
        floating = a.dtype == np.float32
        want = a.astype(ML[fmt]) if floating else a  # position_ids (int64) stay
        assert got[k] == (tag if floating else "I64", list(a.shape), want.tobytes()), k


@pytest.mark.parametrize(("fmt", "dtype"), [("bf16", "bfloat16"), ("fp8e4m3fn", "float32")])
def test_sharded_bin_folder_becomes_transformers_sharded_safetensors(tmp_path: Path, fmt: str,
                                                                     dtype: str) -> None:
    out = tmp_path / "o"
    s = reencode(SHARDED, out, fmt)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in SAFE.iterdir()
                                                         if not p.name.startswith("tokenizer"))
    assert s.skipped == []
    _assert_cast_of_original(_read(out), fmt)
    # the same shards, under the names transformers 5 gave the same model
    wmap = transformers_index_check(out)
    assert wmap == json.loads((SAFE / "model.safetensors.index.json").read_text())["weight_map"]
    cfg, orig = (json.loads((d / "config.json").read_text()) for d in (out, SHARDED))
    assert orig["torch_dtype"] == "float32" and cfg == {**orig, "torch_dtype": dtype}
    meta = json.loads((out / "model.safetensors.index.json").read_text())["metadata"]
    assert json.loads(meta["pyprecision.reencode"])["source"] == "pytorch_model.bin.index.json"


def test_the_torch_index_named_itself_and_at_the_command_line(tmp_path: Path) -> None:
    index = SHARDED / "pytorch_model.bin.index.json"
    assert main(["reencode", str(index), "-o", str(tmp_path / "o"), "--to", "bf16", "-q"]) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors", "model.safetensors.index.json"]
    _assert_cast_of_original(_read(tmp_path / "o"), "bf16")


def test_one_file_pytorch_model_bin_folder(tmp_path: Path) -> None:
    out = tmp_path / "o"
    reencode(ONE, out, "bf16")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]
    _assert_cast_of_original(_read(out), "bf16")


def test_both_formats_in_one_folder_reads_the_safetensors_and_says_what_it_skipped(
        tmp_path: Path) -> None:
    src = tmp_path / "both"
    shutil.copytree(SAFE, src)
    for f in SHARDED.glob("pytorch_model*"):
        shutil.copy(f, src / f.name)
    s = reencode(src, tmp_path / "o", "bf16")
    skipped = dict(s.skipped)
    assert skipped.pop("pytorch_model.bin.index.json") == "the index of weights in another format"
    assert set(skipped) == {f"pytorch_model-0000{k}-of-00003.bin" for k in (1, 2, 3)}
    assert not any((tmp_path / "o").glob("pytorch_model*"))
    _assert_cast_of_original(_read(tmp_path / "o"), "bf16")


def _copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(SHARDED, src)
    return src


def test_a_shard_that_is_not_a_torch_file_is_refused_by_name(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    (src / "pytorch_model-00002-of-00003.bin").write_bytes(b"\x00" * 4096)  # a raw dump's bytes
    with pytest.raises(DumpError, match=r"pytorch_model.bin.index.json: shard 'pytorch_model-00002-"
                                        r"of-00003.bin' is not a torch.save file \(or is truncated\)"):
        reencode(src, tmp_path / "o", "bf16")
    assert not (tmp_path / "o").exists()


def test_a_missing_shard_and_a_truncated_one(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    (src / "pytorch_model-00003-of-00003.bin").unlink()
    with pytest.raises(DumpError, match=r"missing shard 'pytorch_model-00003-of-00003.bin'"):
        reencode(src, tmp_path / "o", "bf16")
    data = (SHARDED / "pytorch_model-00003-of-00003.bin").read_bytes()
    (src / "pytorch_model-00003-of-00003.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(DumpError, match=r"shard .pytorch_model-00003-of-00003.bin. is not a "
                                        r"torch.save file \(or is truncated\)"):
        reencode(src, tmp_path / "o", "bf16")
    assert not (tmp_path / "o").exists()


def test_an_index_that_misplaces_a_tensor(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    p = src / "pytorch_model.bin.index.json"
    index = json.loads(p.read_text())
    index["weight_map"]["pooler.dense.bias"] = "pytorch_model-00001-of-00003.bin"
    p.write_text(json.dumps(index))
    with pytest.raises(DumpError, match=r"weight_map puts 'pooler.dense.bias' in "
                                        r"pytorch_model-00001-of-00003.bin, which lacks it"):
        reencode(src, tmp_path / "o", "bf16")
    p.write_text("{not json")
    with pytest.raises(DumpError, match=r"not a valid torch shard index \(malformed JSON"):
        reencode(src, tmp_path / "o", "bf16")


def test_several_torch_indexes_must_be_named(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    shutil.copy(src / "pytorch_model.bin.index.json", src / "other.bin.index.json")
    with pytest.raises(DumpError, match=r"several torch shard indexes"):
        reencode(src, tmp_path / "o", "bf16")
