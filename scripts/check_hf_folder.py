"""Load a re-encoded model folder with transformers, as its user would (issue 14's evidence).

    pyprecision reencode tests/data/hf/tiny-bert -o /tmp/tiny-bert-bf16 --to bf16
    /path/to/venv-with-transformers/bin/python scripts/check_hf_folder.py /tmp/tiny-bert-bf16 bf16
    (the same with fp8e4m3fn / fp8e5: their weights load upcast to the config's float32)

Checks that ``AutoModel.from_pretrained(OUT)`` and ``AutoTokenizer.from_pretrained(OUT)`` load with
no missing or unexpected weights, that every parameter has the dtype the config names and equals
torch's own cast of the original weight (``.to()`` rounds to nearest even, as pyprecision's rne does;
fp8: the round trip through torch's fp8 dtype, upcast), and that the model runs on the reference
sentence close to the float32 model. Exit 1 on any failure.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer

ORIG = Path(__file__).resolve().parent.parent / "tests" / "data" / "hf" / "tiny-bert"


STORED = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8e4m3fn": torch.float8_e4m3fn,
          "fp8e5": torch.float8_e5m2}


def main(out: str, fmt: str) -> int:
    ref = json.loads((ORIG.parent / "reference.json").read_text())
    cfg = json.loads((Path(out) / "config.json").read_text())
    dtype = cfg.get("dtype", cfg.get("torch_dtype"))  # transformers 5 / 4 spellings
    want = getattr(torch, dtype)
    model, info = AutoModel.from_pretrained(out, output_loading_info=True, dtype="auto")
    orig = AutoModel.from_pretrained(ORIG, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(out)
    bad = [k for k in ("missing_keys", "unexpected_keys", "mismatched_keys") if info.get(k)]
    ids = tok(ref["sentence"], return_tensors="pt")
    if ids["input_ids"][0].tolist() != ref["input_ids"]:
        bad.append("tokenizer ids differ")
    o = dict(orig.named_parameters())
    n = 0
    for name, p in model.named_parameters():
        n += 1
        if p.dtype != want:
            bad.append(f"{name}: {p.dtype}, config says {want}")
        elif not torch.equal(p.detach(), o[name].detach().to(STORED[fmt]).to(want)):
            bad.append(f"{name}: differs from torch's own cast")
    with torch.no_grad():
        pooled = model(**ids).pooler_output[0].float()
    want_pooled = torch.tensor(ref["pooler_output"], dtype=torch.float32)
    err = float((pooled - want_pooled).abs().max())
    print(f"loaded {n} parameters as {want}; tokenizer ids {ids['input_ids'][0].tolist()}")
    print(f"pooler output vs the float32 original: max |diff| {err:.2e} (|output| <= 1)")
    if not err < 0.1:
        bad.append(f"the {want} model's output is {err} away from the float32 model's")
    for b in bad:
        print("FAIL", b)
    print("ok" if not bad else f"{len(bad)} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
