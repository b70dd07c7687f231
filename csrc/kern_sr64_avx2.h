/* Stochastic rounding of float64 sources to 8-, 16- and 32-bit codes with AVX2: the loops and
 * the entry of kern_sr_avx2.h's float64 path (read that file's comment; sr8d is there). Included
 * by kern_sr_avx2.h only. */

/* float64 sources: 8 elements from element i, split into halves, words in the lanes' order. */
static inline __attribute__((always_inline)) __m256i sr_group8d(const sr2_consts *k,
                                                                const uint64_t *src, size_t i,
                                                                const uint32_t *rnd, __m256i *st,
                                                                const int wide, const int mint,
                                                                const int gen, const int S0,
                                                                const int SH, const int SG,
                                                                __m256i *ho, const int late) {
    /* given words: e0..e7 -> e0 e1 e4 e5 | e2 e3 e6 e7 (64-bit pairs 0 2 1 3); generated ones
     * come in that order (the state's lanes are) */
    __m256i r = sr_words8(rnd, i, st, gen);
    if (!gen) r = _mm256_permute4x64_epi64(r, 0xD8);
    const __m256 u0 = _mm256_loadu_ps((const float *)(const void *)(src + i));
    const __m256 u1 = _mm256_loadu_ps((const float *)(const void *)(src + i + 4));
    const __m256i hi = _mm256_castps_si256(_mm256_shuffle_ps(u0, u1, 0xDD));
    const __m256i lo = _mm256_castps_si256(_mm256_shuffle_ps(u0, u1, 0x88));
    *ho = hi;
    return sr8d(k, hi, lo, r, mint, wide, S0, SH, SG, late);
}

/* Prefetch for float64 sources: LS lines of input, LR of given words, PP_PREFETCH_AVX2 ahead. */
#if PP_PREFETCH_AVX2 > 0
#define SR2D_PREFETCH(s, r, LS, LR)                                                                \
    do {                                                                                           \
        for (int l_ = 0; l_ < (LS); l_++)                                                          \
            _mm_prefetch((const char *)(s) + PP_PREFETCH_AVX2 + 64 * l_, _MM_HINT_T0);             \
        for (int l_ = 0; l_ < (LR) && !gen; l_++)                                                  \
            _mm_prefetch((const char *)(r) + PP_PREFETCH_AVX2 + 64 * l_, _MM_HINT_T0);             \
    } while (0)
#else
#define SR2D_PREFETCH(s, r, LS, LR) ((void)0)
#endif

static inline __attribute__((always_inline)) size_t sr2d_loop(const sr2_consts *k,
                                                              const uint64_t *src, size_t n,
                                                              const uint32_t *rnd, __m256i st,
                                                              void *dst, const int ob,
                                                              const int mint, const int gen,
                                                              const int S0, const int SH,
                                                              const int SG) {
    /* the packs' pairs of 16-bit codes back to element order (e0 e1 e4 e5 ... -> e0 e1 e2 e3) */
    const __m256i ord = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t i = 0;
    __m256i h0, h1;
#define SR2D_G(I, W, H, L) sr_group8d(k, src, (I), rnd, &st, (W), mint, gen, S0, SH, SG, (H), (L))
    if (ob == 1) {
        for (; i + 32 <= n; i += 32) {
            SR2D_PREFETCH(src + i, rnd + i, 4, 2);
            const __m256i c0 = SR2D_G(i, 0, &h0, 0), c1 = SR2D_G(i + 8, 0, &h1, 0);
            const __m256i w01 = _mm256_permutevar8x32_epi32(_mm256_packus_epi32(c0, c1), ord);
            const __m256i c2 = SR2D_G(i + 16, 0, &h0, 0), c3 = SR2D_G(i + 24, 0, &h1, 0);
            const __m256i w23 = _mm256_permutevar8x32_epi32(_mm256_packus_epi32(c2, c3), ord);
            /* e0-7 e16-23 | e8-15 e24-31 -> element order */
            const __m256i b = _mm256_permute4x64_epi64(_mm256_packus_epi16(w01, w23), 0xD8);
            _mm256_storeu_si256((__m256i *)(void *)((uint8_t *)dst + i), b);
        }
    } else if (ob == 2) {
        const int late = SR2_LATE(mint, 2);
        const __m256i s8000 = _mm256_set1_epi16((short)0x8000);
        for (; i + 16 <= n; i += 16) {
            SR2D_PREFETCH(src + i, rnd + i, 2, 1);
            const __m256i c0 = SR2D_G(i, 0, &h0, late), c1 = SR2D_G(i + 8, 0, &h1, late);
            __m256i w = _mm256_packus_epi32(c0, c1);
            if (late) w = _mm256_or_si256(w, _mm256_and_si256(_mm256_packs_epi32(h0, h1), s8000));
            w = _mm256_permutevar8x32_epi32(w, ord);
            _mm256_storeu_si256((__m256i *)(void *)((uint16_t *)dst + i), w);
        }
    } else {
        for (; i + 8 <= n; i += 8) {
            SR2D_PREFETCH(src + i, rnd + i, 1, !(i & 8));
            const __m256i c = _mm256_permute4x64_epi64(SR2D_G(i, 1, &h0, 0), 0xD8);
            _mm256_storeu_si256((__m256i *)(void *)((uint32_t *)dst + i), c);
        }
    }
#undef SR2D_G
    return i;
}

static inline __attribute__((always_inline)) size_t sr2d_format(const sr2_consts *k,
                                                                const uint64_t *src, size_t n,
                                                                const uint32_t *rnd, __m256i st,
                                                                void *dst, const int ob,
                                                                const int mint, const int S0,
                                                                const int SH, const int SG) {
#define SR2D_T(G, M) sr2d_loop(k, src, n, rnd, st, dst, ob, M, G, S0, SH, SG)
#define SR2D_M(G)                                                                                  \
    (mint == 7 ? SR2D_T(G, 7) : mint == 3 ? SR2D_T(G, 3) : mint ? SR2D_T(G, 1) : SR2D_T(G, 0))
    return rnd ? SR2D_M(0) : SR2D_M(1);
#undef SR2D_M
#undef SR2D_T
}

/* float64 sources: the consts' float64 meanings (sr8d), then one format's loops. */
static size_t sr_avx2_f64(const pp_params *pr, const uint64_t *src, size_t n,
                          const uint32_t *rnd, uint64_t seed, uint64_t first, void *dst,
                          int out_bytes, int mint, sr2_consts *k) {
    const int p = pr->p, s0 = 52 - p, sg = 31 - pr->sign_pos;
    const uint32_t shift = (uint32_t)pr->shift;
    const int C = pr->emin - p + 1075;
    if (s0 < 32 || C < 96) return 0; /* the arguments of sr8d */
    k->rebias1 = _mm256_set1_epi32((int)(((uint32_t)(pr->bias - 1023) << p) + 1u));
    k->minnorm = _mm256_set1_epi32((int)((uint32_t)(pr->emin + 1023) << 20));
    k->inf = _mm256_set1_epi32(0x7ff00000);
    k->frac = _mm256_set1_epi32(0xfffff);
    k->hid = _mm256_set1_epi32(0x100000);
    k->subc = _mm256_set1_epi32(C - 32);
    k->subc32 = _mm256_set1_epi32(C - 64);
    __m256i st = _mm256_setzero_si256();
    if (!rnd) {
        /* pair states j+1, j+3, j+2, j+4: words e0 e1 e4 e5 | e2 e3 e6 e7 */
        const uint64_t b = seed + (first >> 1) * PP_SM_GAMMA, g = PP_SM_GAMMA;
        st = _mm256_set_epi64x((long long)(b + 4 * g), (long long)(b + 2 * g), (long long)(b + 3 * g),
                               (long long)(b + g));
    }
    /* the formats as for float32 sources, s0 + 29 */
    if (out_bytes == 1 && sg == 24 && s0 == 49) return sr2d_format(k, src, n, rnd, st, dst, 1, mint, 49, 0, 24);
    if (out_bytes == 1 && sg == 24 && s0 == 50) return sr2d_format(k, src, n, rnd, st, dst, 1, mint, 50, 0, 24);
    if (out_bytes == 2 && sg == 16 && s0 == 45) return sr2d_format(k, src, n, rnd, st, dst, 2, mint, 45, 0, 16);
    if (out_bytes == 2 && sg == 16 && s0 == 42) return sr2d_format(k, src, n, rnd, st, dst, 2, mint, 42, 0, 16);
    if (out_bytes == 4 && sg == 0 && s0 == 42 && shift == 13) return sr2d_format(k, src, n, rnd, st, dst, 4, mint, 42, 13, 0);
    return 0;
}
