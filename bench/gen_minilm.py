"""Write a MiniLM-L2-shaped encoder (all-MiniLM-L2: vocabulary 30522, hidden 384, 12 heads, ffn 1536,
2 post-LN layers, tanh gelu) as unoptimized HLO text, with seeded random weights and inputs (batch
2, sequence 16) for ``bench/bench_tune.py``: the shapes of the real model, not its weights (nothing
comes from a model hub). Needs JAX (``python bench/gen_minilm.py --out /tmp/minilm``).

Files: ``minilm_l2.hlo.txt``; ``minilm_l2.npz`` (``in<i>``: token ids s32[2,16], attention mask
f32[2,16], then the weights) and ``minilm_l2_heldout.npz`` (other ids and mask, the same weights).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from lower_models import MatMul, encoder_layer, encoder_weights, layer_norm, normal  # noqa: E402

VOCAB, HIDDEN, HEADS, FFN, LAYERS, BATCH, SEQ = 30522, 384, 12, 1536, 2, 2, 16


def minilm(ids, mask, word, pos, ln_g, ln_b, *w):
    """Embeddings (word lookup + positions, LayerNorm), then the encoder layers."""
    x = layer_norm(jnp.take(word, ids, axis=0) + pos[None], ln_g, ln_b)
    add = (1.0 - mask) * np.float32(-1e4)  # BERT's additive attention mask
    for i in range(LAYERS):
        x = encoder_layer(MatMul(False), x, list(w[16 * i:16 * i + 16]), HEADS, add)
    return x


def inputs(r: np.random.RandomState) -> list[np.ndarray]:
    ids = r.randint(0, VOCAB, size=(BATCH, SEQ)).astype(np.int32)
    mask = np.ones((BATCH, SEQ), np.float32)
    mask[1, 11:] = 0.0  # the second sequence is padded
    return [ids, mask]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    r = np.random.RandomState(2026)
    weights = [normal(r, VOCAB, HIDDEN, scale=0.05), normal(r, SEQ, HIDDEN, scale=0.05),
               1.0 + normal(r, HIDDEN, scale=0.1), normal(r, HIDDEN, scale=0.1)]
    weights += [a for _ in range(LAYERS) for a in encoder_weights(r, HIDDEN, FFN)]
    args = inputs(r) + weights
    text = jax.jit(minilm).lower(*args).as_text(dialect="hlo")
    (out / "minilm_l2.hlo.txt").write_text(text)
    np.savez(out / "minilm_l2.npz", **{f"in{i}": a for i, a in enumerate(args)})
    held = inputs(np.random.RandomState(7)) + weights
    np.savez(out / "minilm_l2_heldout.npz", **{f"in{i}": a for i, a in enumerate(held)})
    print(f"{out}: {text.count(chr(10))} lines of HLO, {len(args)} parameters")


if __name__ == "__main__":
    main()
