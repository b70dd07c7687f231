"""Write real Hugging Face folders of torch (.bin) weights with transformers 4's own save_pretrained
(tests/data/hf/tiny-bert-bin/ and tiny-bert-bin1/).

    PYTHONPATH=<transformers 4.x, tokenizers, huggingface_hub < 1> /path/to/python scripts/gen_hf_bin_folders.py

The model of scripts/gen_hf_folder.py (a tiny BERT, seed 0, the same config), saved the way
checkpoints were before safetensors became the default: ``save_pretrained(safe_serialization=False)``
— sharded (``max_shard_size="150KB"``: ``pytorch_model-0000k-of-00003.bin`` and
``pytorch_model.bin.index.json``) into tiny-bert-bin/, and as one ``pytorch_model.bin`` into
tiny-bert-bin1/. transformers 5 no longer writes .bin files, hence version 4 here. Its weights
are checked equal, tensor for tensor, to tiny-bert/'s (the safetensors folder); the tests rely on
that. transformers and torch are only the tools that made the data; no test imports transformers.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file
from transformers import BertConfig, BertModel

HF = Path(__file__).resolve().parent.parent / "tests" / "data" / "hf"


def main() -> int:
    if int(transformers.__version__.split(".")[0]) >= 5:
        print(f"transformers {transformers.__version__} writes no .bin files; use a 4.x", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=120, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=32)
    model = BertModel(cfg).eval()
    want = {}
    for f in sorted((HF / "tiny-bert").glob("*.safetensors")):
        want.update(load_file(f))
    got = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    if set(got) != set(want) or not all(np.array_equal(got[k], want[k]) for k in want):
        print("the weights differ from tiny-bert/'s; not written", file=sys.stderr)
        return 1
    for name, shard in (("tiny-bert-bin", "150KB"), ("tiny-bert-bin1", "5GB")):
        out = HF / name
        out.mkdir(exist_ok=True)
        for old in out.iterdir():
            old.unlink()
        model.save_pretrained(out, max_shard_size=shard, safe_serialization=False)
        print(name, sorted(p.name for p in out.iterdir()))
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
