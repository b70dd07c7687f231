"""The JAX models of ``scripts/gen_lower_models.py`` (imported by it; needs JAX, so never by tests).

Every model is written once against a :class:`MatMul` policy: ``MatMul(False)`` is the model as a
user writes it (plain ``dot_general`` / ``conv_general_dilated`` at default precision), and
``MatMul(True)`` is the "matmul operands in bf16" reference: every matmul and convolution operand
rounded to bf16 (``x.astype(bf16).astype(f32)``) and accumulated in f32
(``preferred_element_type=f32``); everything else unchanged.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

F32 = jnp.float32
BF16 = jnp.bfloat16


class MatMul:
    """How the model's matmuls and convolutions compute (plain, or bf16 operands + f32 sums)."""

    def __init__(self, bf16_operands: bool):
        self.bf16_operands = bf16_operands

    def _operands(self, a: Any, b: Any) -> tuple[Any, Any, dict[str, Any]]:
        if not self.bf16_operands:
            return a, b, {}
        return (a.astype(BF16).astype(F32), b.astype(BF16).astype(F32),
                {"preferred_element_type": F32})

    def einsum(self, spec: str, a: Any, b: Any) -> Any:
        """``jnp.einsum(spec, a, b)`` (a dot_general, with transposes where JAX needs them)."""
        a, b, kw = self._operands(a, b)
        return jnp.einsum(spec, a, b, **kw)

    def conv(self, x: Any, w: Any) -> Any:
        """NHWC x HWIO -> NHWC, stride 1, SAME padding."""
        x, w, kw = self._operands(x, w)
        return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"), **kw)


@dataclass
class Model:
    """One model: ``build(mm)`` returns the function; ``make_args(rng)`` its inputs."""

    name: str
    build: Callable[[MatMul], Callable[..., Any]]
    make_args: Callable[[np.random.RandomState], list[np.ndarray]]
    desc: str
    ref_bf16mm: bool = True       # also store the bf16-matmul-operand reference outputs
    excess: bool = False          # also store XLA:CPU's outputs with excess precision on
    text_only: bool = False       # HLO text only (no inputs/outputs): the benchmark module
    notes: dict[str, Any] = field(default_factory=dict)


MODELS: list[Model] = []


def model(make_args: Callable[[np.random.RandomState], list[np.ndarray]], desc: str,
          into: list[Model] | None = None,
          **kw: Any) -> Callable[[Callable[[MatMul], Callable[..., Any]]], Any]:
    """Register ``build`` under its name (the XLA module becomes ``jit_<name>``) in ``into``
    (default: this module's MODELS; the scripts that extend the manifest keep their own)."""
    registry = MODELS if into is None else into
    def deco(build: Callable[[MatMul], Callable[..., Any]]) -> Any:
        name = build.__name__

        def named(mm: MatMul) -> Callable[..., Any]:
            fn = build(mm)
            fn.__name__ = fn.__qualname__ = name
            return fn
        registry.append(Model(name, named, make_args, desc, **kw))
        return build
    return deco


def normal(r: np.random.RandomState, *shape: int, scale: float = 1.0) -> np.ndarray:
    """Gaussian f32 values (drawn in f64, rounded once)."""
    return (r.randn(*shape) * scale).astype(np.float32)


def dense(r: np.random.RandomState, n_in: int, n_out: int) -> list[np.ndarray]:
    """A weight [n_in, n_out] scaled by 1/sqrt(n_in) and a small bias [n_out]."""
    return [normal(r, n_in, n_out, scale=n_in ** -0.5), normal(r, n_out, scale=0.1)]


# ---- transformer encoder block -------------------------------------------------------------

def layer_norm(x: Any, g: Any, b: Any, eps: float = 1e-5) -> Any:
    """LayerNorm over the last axis: mean, biased variance, rsqrt."""
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * g + b


def attention(mm: MatMul, q: Any, k: Any, v: Any, mask: Any) -> Any:
    """softmax(q k^T / sqrt(dh) + mask) v over [b, s, h, dh] operands (all heads in one dot)."""
    scores = mm.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores + mask[:, None, None, :]
    probs = jax.nn.softmax(scores, axis=-1)           # exp(s - max(s)) / sum
    return mm.einsum("bhqk,bkhd->bqhd", probs, v)


def per_head_attention(mm: MatMul, q: Any, k: Any, v: Any, mask: Any) -> Any:
    """The same attention computed head by head (one dot pair per head), concatenated."""
    outs = [attention(mm, q[:, :, i:i + 1], k[:, :, i:i + 1], v[:, :, i:i + 1], mask)
            for i in range(q.shape[2])]
    return jnp.concatenate(outs, axis=2)


def encoder_layer(mm: MatMul, x: Any, w: list[Any], heads: int, mask: Any = None,
                  split_heads: bool = False) -> Any:
    """Post-LN encoder layer (BERT order): x = LN(x + MHA(x)); x = LN(x + FFN(x))."""
    wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2 = w
    bsz, seq, d = x.shape
    dh = d // heads

    def proj(wt: Any, bias: Any) -> Any:
        return (mm.einsum("bsd,de->bse", x, wt) + bias).reshape(bsz, seq, heads, dh)

    attend = per_head_attention if split_heads else attention
    ctx = attend(mm, proj(wq, bq), proj(wk, bk), proj(wv, bv), mask).reshape(bsz, seq, d)
    x = layer_norm(x + mm.einsum("bsd,de->bse", ctx, wo) + bo, g1, b1)
    hidden = jax.nn.gelu(mm.einsum("bsd,df->bsf", x, w1) + c1, approximate=True)
    return layer_norm(x + mm.einsum("bsf,fd->bsd", hidden, w2) + c2, g2, b2)


def encoder_weights(r: np.random.RandomState, d: int, ffn: int) -> list[np.ndarray]:
    """wq bq wk bk wv bv wo bo ln1_g ln1_b w1 b1 w2 b2 ln2_g ln2_b."""
    attn = [a for _ in range(4) for a in dense(r, d, d)]
    ln1 = [1.0 + normal(r, d, scale=0.1), normal(r, d, scale=0.1)]
    ln2 = [1.0 + normal(r, d, scale=0.1), normal(r, d, scale=0.1)]
    return attn + ln1 + dense(r, d, ffn) + dense(r, ffn, d) + ln2


@model(lambda r: [normal(r, 2, 8, 32)] + encoder_weights(r, 32, 64),
       "transformer encoder block: 4-head self-attention (softmax with max subtraction), "
       "post-LN layernorm, tanh-form gelu, residuals; batch 2, seq 8, d_model 32, ffn 64; "
       "weights as parameters", notes={"gelu": "tanh"})
def encoder_block(mm: MatMul) -> Callable[..., Any]:
    def f(x: Any, *w: Any) -> Any:
        return encoder_layer(mm, x, list(w), heads=4)
    return f


def _bert_args(r: np.random.RandomState) -> list[np.ndarray]:
    mask = np.zeros((1, 128), np.float32)
    mask[:, 100:] = np.float32(-1e9)  # the last 28 tokens are padding
    return [normal(r, 1, 128, 768), mask] + [a for _ in range(12)
                                             for a in encoder_weights(r, 768, 3072)]


def _bert(mm: MatMul, split_heads: bool) -> Callable[..., Any]:
    def f(x: Any, mask: Any, *w: Any) -> Any:
        for i in range(12):
            x = encoder_layer(mm, x, list(w[16 * i:16 * i + 16]), 12, mask, split_heads)
        return x
    return f


@model(_bert_args,
       "BERT-base-sized encoder: 12 post-LN layers, hidden 768, 12 heads (one dot pair for all "
       "heads), ffn 3072, tanh gelu, additive attention mask, seq 128, batch 1, weights as "
       "parameters (HLO text only, for the benchmark)",
       ref_bf16mm=False, text_only=True, notes={"gelu": "tanh"})
def bert_base(mm: MatMul) -> Callable[..., Any]:
    return _bert(mm, split_heads=False)


@model(_bert_args,
       "bert_base with attention computed head by head (12 dot pairs per layer, concatenated): "
       "the same math in a larger module (HLO text only, for the benchmark's size scaling)",
       ref_bf16mm=False, text_only=True, notes={"gelu": "tanh"})
def bert_base_per_head(mm: MatMul) -> Callable[..., Any]:
    return _bert(mm, split_heads=True)


# ---- CNN -------------------------------------------------------------------------------------

@model(lambda r: [normal(r, 2, 8, 8, 3), normal(r, 3, 3, 3, 8, scale=27 ** -0.5),
                  normal(r, 8, scale=0.1), normal(r, 3, 3, 8, 16, scale=72 ** -0.5),
                  normal(r, 16, scale=0.1)] + dense(r, 4 * 4 * 16, 10),
       "small CNN: NHWC conv 3x3 (3->8, SAME) + relu, 2x2/2 max-pool (reduce-window), conv 3x3 "
       "(8->16, SAME) + relu, flatten, dense head to 10; weights as parameters")
def cnn(mm: MatMul) -> Callable[..., Any]:
    def f(x: Any, k1: Any, c1: Any, k2: Any, c2: Any, wd: Any, bd: Any) -> Any:
        h = jax.nn.relu(mm.conv(x, k1) + c1)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(mm.conv(h, k2) + c2)
        return mm.einsum("bk,kn->bn", h.reshape(h.shape[0], -1), wd) + bd
    return f


# ---- MLP: weights as constants and as parameters ---------------------------------------------

def _mlp_weights() -> list[np.ndarray]:
    r = np.random.RandomState(1601)  # shared by mlp_const, mlp_param and bf16_mlp
    return dense(r, 16, 32) + dense(r, 32, 32) + dense(r, 32, 8)


def _mlp_input() -> np.ndarray:
    return normal(np.random.RandomState(1602), 4, 16)


def mlp(mm: MatMul, x: Any, w: list[Any]) -> Any:
    """16 -> 32 (tanh) -> 32 (relu) -> 8."""
    w1, b1, w2, b2, w3, b3 = w
    h = jnp.tanh(mm.einsum("bi,io->bo", x, w1) + b1)
    h = jax.nn.relu(mm.einsum("bi,io->bo", h, w2) + b2)
    return mm.einsum("bi,io->bo", h, w3) + b3


@model(lambda r: [_mlp_input()],
       "3-layer MLP 16->32->32->8 (tanh, relu), weights closed over: HLO constants")
def mlp_const(mm: MatMul) -> Callable[..., Any]:
    weights = [jnp.asarray(a) for a in _mlp_weights()]

    def f(x: Any) -> Any:
        return mlp(mm, x, weights)
    return f


@model(lambda r: [_mlp_input()] + _mlp_weights(),
       "the same MLP, the same weight values, weights as parameters")
def mlp_param(mm: MatMul) -> Callable[..., Any]:
    def f(x: Any, *w: Any) -> Any:
        return mlp(mm, x, list(w))
    return f


@model(lambda r: [a.astype(ml_dtypes.bfloat16) for a in [_mlp_input()] + _mlp_weights()],
       "the MLP in bf16: bf16 parameters and activations, bf16 dots; out<i> with "
       "--xla_allow_excess_precision=false, excess_out<i> with XLA's default (true)",
       ref_bf16mm=False, excess=True)
def bf16_mlp(mm: MatMul) -> Callable[..., Any]:
    def f(x: Any, *w: Any) -> Any:
        return mlp(mm, x, list(w))
    return f


# ---- control flow ----------------------------------------------------------------------------

@model(lambda r: [normal(r, 6, 2, 4)] + dense(r, 4, 8)[:1] + dense(r, 8, 8),
       "Elman RNN over 6 steps with lax.scan (a while loop): h = tanh(x_t Wx + h Wh + b); "
       "returns the final state and every step's state")
def scan_rnn(mm: MatMul) -> Callable[..., Any]:
    def f(xs: Any, wx: Any, wh: Any, b: Any) -> Any:
        def step(h: Any, x: Any) -> tuple[Any, Any]:
            h = jnp.tanh(mm.einsum("bi,io->bo", x, wx) + mm.einsum("bi,io->bo", h, wh) + b)
            return h, h
        return lax.scan(step, jnp.zeros((xs.shape[1], wh.shape[0]), F32), xs)
    return f


@model(lambda r: [normal(r, 4, 16)] + dense(r, 16, 8)[:1] + dense(r, 16, 8)[:1],
       "lax.cond on sum(x) > 0: tanh(x W1) or relu(x W2); applied to x and to -x so one run "
       "takes both branches")
def cond_model(mm: MatMul) -> Callable[..., Any]:
    def f(x: Any, w1: Any, w2: Any) -> Any:
        def g(v: Any) -> Any:
            return lax.cond(jnp.sum(v) > 0,
                            lambda u: jnp.tanh(mm.einsum("bi,io->bo", u, w1)),
                            lambda u: jax.nn.relu(mm.einsum("bi,io->bo", u, w2)), v)
        return g(x), g(-x)
    return f


# ---- int8 ------------------------------------------------------------------------------------

@model(lambda r: [normal(r, 4, 16, scale=2.0), r.randint(-127, 128, (16, 8)).astype(np.int8),
                  np.float32(0.05), np.abs(normal(r, 8, scale=0.01)) + np.float32(1e-3),
                  normal(r, 8, scale=0.1)],
       "int8 linear: x quantized to s8 (round, clamp to +-127), s8 x s8 -> s32 dot "
       "(preferred_element_type=s32), rescaled to f32 by x_scale * w_scale[n] + bias",
       ref_bf16mm=False)
def int8_matmul(mm: MatMul) -> Callable[..., Any]:
    def f(x: Any, wq: Any, x_scale: Any, w_scale: Any, bias: Any) -> Any:
        xq = jnp.clip(jnp.round(x / x_scale), -127, 127).astype(jnp.int8)
        acc = lax.dot_general(xq, wq, (((1,), (0,)), ((), ())),
                              preferred_element_type=jnp.int32)
        return acc.astype(F32) * (x_scale * w_scale) + bias, acc
    return f
