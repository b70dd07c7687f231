"""``rng-bit-generator`` with the Philox algorithm (``rng_philox``, and ``rng_default``, which
XLA:CPU expands to Philox), bit for bit as XLA's RngBitGeneratorExpander and ``prng.cc`` define it.

State ``u64[2]`` = (key, counter) with the 128-bit counter (state[1], key) (XLA reverses a
two-element state); ``u64[3]`` = (key, counter low, counter high). Philox-4x32-10 runs on
counter + 0, 1, ... ceil(n/4)-1 (n 32-bit words); the four output words of each block are
interleaved, sliced to n and reshaped; 64-bit outputs pair (word0, word1) and (word2, word3) as
(low, high). The new state is the key and the counter advanced by the number of blocks.
``rng_three_fry`` is not evaluated (one error naming it). Checked against XLA: module
``rng_bit_generator`` in tests/data/hlo-eval.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyprecision.errors import EmulationError
from pyprecision.hlo import PrimitiveType

P = PrimitiveType
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def philox4x32(x: list[np.ndarray], key: tuple[int, int]) -> list[np.ndarray]:
    """Ten Philox-4x32 rounds on four uint64 arrays holding 32-bit words."""
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0 = x[0] * np.uint64(0xD2511F53)
        p1 = x[2] * np.uint64(0xCD9E8D57)
        x = [((p1 >> _S32) ^ x[1] ^ k0) & _M32, p1 & _M32,
             ((p0 >> _S32) ^ x[3] ^ k1) & _M32, p0 & _M32]
        k0 = (k0 + np.uint64(0x9E3779B9)) & _M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & _M32
    return x


def _words(key: int, lo: int, hi: int, n: int) -> tuple[np.ndarray, int, int]:
    """n Philox 32-bit words (interleaved) and the advanced 128-bit counter (lo, hi)."""
    blocks = (n + 3) // 4
    c = np.uint64(lo) + np.arange(blocks, dtype=np.uint64)
    with np.errstate(over="ignore"):
        high = np.uint64(hi) + (c < np.uint64(lo)).astype(np.uint64)
    x = [c & _M32, c >> _S32, high & _M32, high >> _S32]
    out = philox4x32(x, (key & 0xFFFFFFFF, key >> 32))
    words = np.stack(out, axis=1).reshape(-1)[:n]
    total = lo + blocks
    return words, total & (2**64 - 1), (hi + (total >> 64)) & (2**64 - 1)


def rng_bit_generator(inst: Any, args: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """rng-bit-generator(state), algorithm=rng_default|rng_philox."""
    (state,) = args
    algorithm = (inst.attr("algorithm") or "rng_default").lower()
    if algorithm not in ("rng_default", "rng_philox"):
        raise EmulationError(f"{inst.name}: rng-bit-generator algorithm={algorithm} is not "
                             "supported (rng_philox and rng_default are)")
    st = np.asarray(state).astype(np.uint64).reshape(-1)
    out_shape = inst.shape.tuple_shapes[1]
    t = out_shape.element_type
    if st.size not in (2, 3) or t not in (P.U32, P.S32, P.U64, P.S64):
        raise EmulationError(f"{inst.name}: rng-bit-generator needs a u64[2] or u64[3] state and "
                             "a u32/s32/u64/s64 result")
    key = int(st[0])
    lo, hi = (int(st[1]), key) if st.size == 2 else (int(st[1]), int(st[2]))
    n = int(np.prod(out_shape.dimensions, dtype=np.int64))
    wide = t in (P.U64, P.S64)
    words, lo2, hi2 = _words(key, lo, hi, 2 * n if wide else n)
    if wide:
        w = words.reshape(-1, 4) if words.size % 4 == 0 else np.pad(words, (0, (-words.size) % 4)
                                                                   ).reshape(-1, 4)
        pairs = np.stack([w[:, 0] | (w[:, 1] << _S32), w[:, 2] | (w[:, 3] << _S32)], axis=1)
        bits = pairs.reshape(-1)[:n]
        values = bits.astype(np.uint64)
    else:
        values = words.astype(np.uint32)
    dt = {P.U32: np.uint32, P.S32: np.int32, P.U64: np.uint64, P.S64: np.int64}[t]
    new_state = np.array([key, lo2] if st.size == 2 else [key, lo2, hi2], dtype=np.uint64)
    return (new_state.astype(state.dtype),
            values.view(np.dtype(dt)).reshape(tuple(out_shape.dimensions)))
