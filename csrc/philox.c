/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the
 * counter-based generator of stochastic rounding. Element i of a call uses word (i mod 4) of the
 * block with counter (i div 4, 0) under key = seed, so the words depend on (seed, i) only, never
 * on threads or chunking. */
#include "pyprecision.h"


static inline void philox_block(uint32_t k0, uint32_t k1, uint64_t block, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = 0, c3 = 0;
    for (int r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)PP_PHILOX_M0 * c0;
        const uint64_t p1 = (uint64_t)PP_PHILOX_M1 * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PP_PHILOX_W0;
        k1 += PP_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void pp_philox4x32(uint64_t seed, uint64_t block, uint32_t out[4]) {
    philox_block((uint32_t)seed, (uint32_t)(seed >> 32), block, out);
}

void pp_philox_fill(uint64_t seed, uint64_t first, size_t n, uint32_t *out) {
    const uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    size_t i = 0;
    uint32_t w[4];
    /* head: up to the next block boundary */
    while (i < n && ((first + i) & 3u)) {
        philox_block(k0, k1, (first + i) >> 2, w);
        out[i] = w[(first + i) & 3u];
        i++;
    }
    /* whole blocks */
    for (; i + 4 <= n; i += 4) philox_block(k0, k1, (first + i) >> 2, out + i);
    /* tail */
    if (i < n) {
        philox_block(k0, k1, (first + i) >> 2, w);
        for (size_t t = 0; i < n; i++, t++) out[i] = w[t];
    }
}
