/* The counter-based generator of stochastic rounding (CAST_SEMANTICS.md §2; decision K4): the
 * SplitMix64 sequence of Steele, Lea & Flood ("Fast splittable pseudorandom number generators",
 * OOPSLA 2014) with the seed as its starting state, z_j = mix64(seed + (j + 1) * 0x9E3779B97F4A7C15).
 * Element i of a call draws the low 32 bits of z_(i/2) when i is even and the high 32 bits when i is
 * odd, so the words depend on (seed, i) only, never on threads, chunking or the instruction set.
 * This is the definition, one element at a time; the kernel sets' sr_words and the fused stochastic
 * kernels give the same words. */
#include "pyprecision.h"

void pp_sr_words_ref(uint64_t seed, uint64_t first, size_t n, uint32_t *out) {
    for (size_t i = 0; i < n; i++) {
        const uint64_t e = first + i;
        const uint64_t z = pp_splitmix64(seed, e >> 1);
        out[i] = (uint32_t)(e & 1u ? z >> 32 : z);
    }
}
