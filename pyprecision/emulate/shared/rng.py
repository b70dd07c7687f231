"""``rng-bit-generator``: Philox (``rng_philox``, and ``rng_default``, which XLA:CPU expands to
Philox) and ThreeFry (``rng_three_fry``), bit for bit as XLA's RngBitGeneratorExpander and
``prng.cc`` define them.

State ``u64[2]`` = (key, counter) with the 128-bit counter (state[1], key) (XLA reverses a
two-element state); ``u64[3]`` = (key, counter low, counter high). Philox-4x32-10 runs on
counter + 0, 1, ... ceil(n/4)-1 (n 32-bit words); the four output words of each block are
interleaved, sliced to n and reshaped; 64-bit outputs pair (word0, word1) and (word2, word3) as
(low, high). The new state is the key and the counter advanced by the number of blocks.

ThreeFry-2x32 (20 rounds) runs on the 64-bit counter state[1] + the row-major index. 64-bit
outputs take one block each (word0 low, word1 high). 32-bit outputs split the shape in halves
(XLA's SplitShapeIntoHalves: the first even dimension, else the largest; a scalar becomes [1]):
the blocks cover the half shape and the two words of a block land in the two halves, joined
along that dimension; the counter advances by the blocks used. Checked against XLA: module
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


def _rotl(v: np.ndarray, d: int) -> np.ndarray:
    return ((v << np.uint64(d)) | (v >> np.uint64(32 - d))) & _M32


def threefry2x32(x0: np.ndarray, x1: np.ndarray, key: tuple[int, int]) -> list[np.ndarray]:
    """Threefry-2x32 with 20 rounds (key injection every 4 rounds) on uint64-held words."""
    ks = [np.uint64(key[0]), np.uint64(key[1])]
    ks.append(np.uint64(0x1BD11BDA) ^ ks[0] ^ ks[1])
    rotations = (13, 15, 26, 6, 17, 29, 16, 24)
    x = [(x0 + ks[0]) & _M32, (x1 + ks[1]) & _M32]
    for i in range(5):
        for r in rotations[(i % 2) * 4:(i % 2) * 4 + 4]:
            x[0] = (x[0] + x[1]) & _M32
            x[1] = _rotl(x[1], r) ^ x[0]
        x[0] = (x[0] + ks[(i + 1) % 3]) & _M32
        x[1] = (x[1] + ks[(i + 2) % 3] + np.uint64(i + 1)) & _M32
    return x


def _threefry(key: int, counter: int, dims: tuple[int, ...], wide: bool) -> tuple[np.ndarray, int]:
    """ThreeFry bits of shape ``dims`` (uint64 words) and the advanced counter."""
    k = (key & 0xFFFFFFFF, key >> 32)
    if wide or not dims:
        half: list[int] = list(dims) if wide else [1]
    else:
        evens = [i for i, d in enumerate(dims) if d % 2 == 0]
        split = evens[0] if evens else max(range(len(dims)), key=lambda i: (dims[i], -i))
        half = [d for i, d in enumerate(dims) if i != split]
        half[split:split] = [-(-dims[split] // 2), 1]
    n = int(np.prod(half, dtype=np.int64))
    with np.errstate(over="ignore"):
        c = np.uint64(counter) + np.arange(n, dtype=np.uint64)
    a, b = threefry2x32(c & _M32, c >> _S32, k)
    new_counter = (counter + n) & (2**64 - 1)
    if wide:
        return (a | (b << _S32)).reshape(dims), new_counter
    if not dims:
        return a.reshape(()), new_counter
    joined = np.concatenate([a.reshape(half), b.reshape(half)], axis=split + 1)
    even = list(dims)
    even[split] += even[split] % 2
    return joined.reshape(even)[tuple(slice(0, d) for d in dims)], new_counter


def rng_bit_generator(inst: Any, args: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """rng-bit-generator(state), algorithm=rng_default|rng_philox|rng_three_fry."""
    (state,) = args
    algorithm = (inst.attr("algorithm") or "rng_default").lower()
    if algorithm not in ("rng_default", "rng_philox", "rng_three_fry"):
        raise EmulationError(f"{inst.name}: rng-bit-generator algorithm={algorithm} is not "
                             "supported (rng_philox, rng_default and rng_three_fry are)")
    st = np.asarray(state).astype(np.uint64).reshape(-1)
    out_shape = inst.shape.tuple_shapes[1]
    t = out_shape.element_type
    if st.size not in (2, 3) or t not in (P.U32, P.S32, P.U64, P.S64):
        raise EmulationError(f"{inst.name}: rng-bit-generator needs a u64[2] or u64[3] state and "
                             "a u32/s32/u64/s64 result")
    key = int(st[0])
    wide = t in (P.U64, P.S64)
    dt = {P.U32: np.uint32, P.S32: np.int32, P.U64: np.uint64, P.S64: np.int64}[t]
    dims = tuple(out_shape.dimensions)
    if algorithm == "rng_three_fry":
        if st.size != 2:
            raise EmulationError(f"{inst.name}: rng_three_fry needs a u64[2] state")
        tf_bits, counter = _threefry(key, int(st[1]), dims, wide)
        store = np.uint64 if wide else np.uint32
        return (np.array([key, counter], np.uint64).astype(state.dtype),
                tf_bits.astype(store).view(np.dtype(dt)).reshape(dims))
    lo, hi = (int(st[1]), key) if st.size == 2 else (int(st[1]), int(st[2]))
    n = int(np.prod(out_shape.dimensions, dtype=np.int64))
    words, lo2, hi2 = _words(key, lo, hi, 2 * n if wide else n)
    if wide:
        w = words.reshape(-1, 4) if words.size % 4 == 0 else np.pad(words, (0, (-words.size) % 4)
                                                                   ).reshape(-1, 4)
        pairs = np.stack([w[:, 0] | (w[:, 1] << _S32), w[:, 2] | (w[:, 3] << _S32)], axis=1)
        bits = pairs.reshape(-1)[:n]
        values = bits.astype(np.uint64)
    else:
        values = words.astype(np.uint32)
    new_state = np.array([key, lo2] if st.size == 2 else [key, lo2, hi2], dtype=np.uint64)
    return (new_state.astype(state.dtype),
            values.view(np.dtype(dt)).reshape(tuple(out_shape.dimensions)))
