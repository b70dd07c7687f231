"""Write a real Hugging Face model folder with transformers' own save_pretrained (tests/data/hf/).

    /path/to/venv-with-transformers/bin/python scripts/gen_hf_folder.py

A tiny BERT (random weights, seed 0): hidden 64, 2 layers, 2 heads, a 120-word WordPiece vocabulary,
saved with ``save_pretrained(max_shard_size="150KB")`` so that the weights are sharded with an index,
and its fast tokenizer saved beside it; nothing is hand-written. ``reference.json`` records the
versions and the model's output on one sentence, for scripts/check_hf_folder.py.
transformers and torch are only the tools that made the data; no test imports them.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from transformers import BertConfig, BertModel, BertTokenizerFast

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "hf" / "tiny-bert"
WORDS = ["the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "it", "at", "from", "his", "an", "were", "are", "which", "this", "be", "has", "or", "had", "first", "one", "their", "its", "new", "after", "but", "who", "not", "they", "have", "her", "she", "two", "been", "other", "when", "there", "all", "during", "into", "school", "time", "may", "years", "more", "most", "only", "over", "city", "some", "world", "would", "where", "later", "up", "such", "used", "many", "can", "state", "about", "national", "out", "known", "university", "united", "then", "made"]
SENTENCE = "the first school was made in the city"


def main() -> int:
    torch.manual_seed(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    vocab += [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    vocab = vocab[:120] + [f"w{i}" for i in range(max(0, 120 - len(vocab)))]
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=128, max_position_embeddings=32)
    model = BertModel(cfg).eval()
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    model.save_pretrained(OUT, max_shard_size="150KB")
    tok.save_pretrained(OUT)
    enc = tok(SENTENCE, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state[0].numpy().astype(np.float64)
        pooled = model(**enc).pooler_output[0].numpy().astype(np.float64)
    ref = {
        "made_by": "scripts/gen_hf_folder.py",
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "sentence": SENTENCE,
        "input_ids": enc["input_ids"][0].tolist(),
        "last_hidden_state_abs_sum": float(np.abs(hidden).sum()),
        "pooler_output": [float(v) for v in pooled],
    }
    (OUT.parent / "reference.json").write_text(json.dumps(ref, indent=2) + "\n")
    print("\n".join(sorted(p.name for p in OUT.iterdir())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
