/* Stochastic rounding of float32 and float64 bits to 8-, 16- and 32-bit codes with AVX2, the words generated in
 * registers (SplitMix64, sm_mix256 in kern_avx2.c) or loaded from the caller's random_bits.
 * Included by kern_avx2.c only. The same computation as kern_sr_avx512.h (read its comment), with
 * integers only (no floating-point instruction: nothing MXCSR says can matter) and without masks:
 *
 *   normal results   code = (a + rebias + 2^s0 - 1 - (R >> (32 - s0))) >> s0: up iff R < thr =
 *                    a << (32 - s0) (the s0 dropped bits d, left-aligned) iff R >> (32 - s0) < d
 *                    (thr is a multiple of 2^(32 - s0)) iff d + 2^s0 - 1 - (R >> (32 - s0))
 *                    carries into bit s0; the rebias is a multiple of 2^s0, so the carry is the
 *                    round-up and nothing else (the sum is below 2^32 for every lane that keeps it)
 *   subnormal ones   m = fraction | hidden bit, sf = s0 + emin - E = C - eb (C = s0 + emin + 127):
 *                    K = m >> sf, thr = (m << (32 - sf)) | (m >> (sf - 32)) with vpsllvd / vpsrlvd,
 *                    which give 0 for counts >= 32, so exactly one of the two is m's part: the
 *                    low sf bits of m left-aligned (sf <= 32; K is the rest), or floor(m 2^(32 - sf))
 *                    (sf > 32, K = 0 as m < 2^24). A float32 subnormal (eb = 0) is taken with the
 *                    hidden bit and eb = 0, so sf = C >= 126 for every format with this path: K = 0
 *                    and thr = 0, which its exact value (< 2^-126) also gives. Only for groups of 8
 *                    that have such a lane; there code = K + 1 - (R >= thr) (R >= thr is
 *                    max_u32(R, thr) == R, all ones = -1 where it holds), as for float64 sources.
 *
 * float64 sources (sr8d): 8 elements from two vectors of 4, split by vshufps into their high and low
 * 32-bit halves (hi, lo: a shuffle, no arithmetic, nothing MXCSR says applies), lanes in the order
 * e0 e1 e4 e5 | e2 e3 e6 e7, which the words are generated in (the generator's state lanes
 * permuted the same way) or permuted to (given words), and which the packs undo. With
 * ah = hi & 0x7fffffff and s0 = 52 - p (42..50 for the formats here; >= 32 is required):
 *
 *   normal results   code = (ah >> (s0 - 32)) + ((bias - 1023) << p) + 1 - (R >= thr),
 *                    thr = (ah << (64 - s0)) | (lo >> (s0 - 32)): bits [s0 - 32, s0) of a, the
 *                    top 32 of the s0 dropped bits (pp_round_exact's rem >> (s - 32)); the
 *                    rebias and 2^s0 are multiples of 2^s0, so the 64-bit sum is the 32-bit one
 *   subnormal ones   sf = C - eb (C = emin - p + 1075, eb the 11-bit exponent field), sf > s0, so
 *                    with mh = the 21 high bits of m (hidden bit set), m = mh:lo:
 *                    K   = mh >> (sf - 32)
 *                    thr = low 32 bits of floor(m 2^(32 - sf)) = (mh << (64 - sf)) |
 *                          (lo >> (sf - 32)) | (mh >> (sf - 64)), vpsllvd / vpsrlvd giving 0 for
 *                          counts >= 32 (negative ones included): for sf <= 64 the first two are
 *                          m >> (sf - 32) and the third is 0 (or mh again at sf = 64), beyond it
 *                          only the third is left (0 once sf >= 96)
 *                    A float64 subnormal (eb = 0) is taken with the hidden bit and eb = 0: sf = C
 *                    >= 96 (required; >= 929 for every format), so K = 0 and thr = 0, which its
 *                    exact value (< 2^-1022: s >= 96 in pp_round_exact) gives too. Values far
 *                    below the format's range: K = 0, thr = 0 the same way.
 *   specials         ah | min(lo, 1) against 0x7ff00000: above it NaN, equal inf (the high half of
 *                    inf is even, so only lo = 0 makes it equal); then the float32 tail.
 *
 * Whole groups of 32 (8-bit codes), 16 (16-bit) or 8 (32-bit) only; the driver does the rest with
 * the lanes of kern_body.h. */

typedef struct {
    __m256i absm, one, rebias1, minnorm, inf, maxc, ovfc, ovf0, inf0, nan0, dovf, dinf, dnan, sbit;
    __m256i frac, hid, subc, subc32; /* float64 sources: subc = C - 32, subc32 = C - 64 */
} sr2_consts;

/* Shifts by the format's counts, immediates: the loop is compiled for one format (s0 = S0, the
 * storage shift SH, the sign shift SG; sr_avx2 picks the instance). */
#define SR2_SRL(x, IMM) _mm256_srli_epi32((x), (IMM))
#define SR2_SLL(x, IMM) _mm256_slli_epi32((x), (IMM))

/* mint (the policy, a constant of each loop): 0 the specials selected one by one; 1 overflow and
 * inf give max or the code after it (min(code, ovfc)), NaN its own code; 3 the same and NaN keeps
 * its sign too; 7 the same and the NaN code is the overflow code (fp8e4m3fn without saturation),
 * so a NaN needs no select at all: its code + 1 is far above ovfc.
 * PP_SR2_LATESIGN (default 1): when every result keeps its sign (mint >= 3) the 8- and 16-bit
 * loops set the sign bits after packing, from the inputs packed with signed saturation (which
 * keeps bit 31 as the top bit): one pack, and, or per packed vector instead of a shift, and, or
 * per 8 codes. */
#ifndef PP_SR2_LATESIGN
#define PP_SR2_LATESIGN 1
#endif
#define SR2_LATE(mint, ob) (PP_SR2_LATESIGN && (mint) >= 3 && (ob) != 4)

/* code + 1 - (R >= thr): the rounded code (R >= thr is max_u32(R, thr) == R: -1). */
static inline __attribute__((always_inline)) __m256i sr2_down(__m256i code1, __m256i thr,
                                                              __m256i r) {
    return _mm256_add_epi32(code1, _mm256_cmpeq_epi32(_mm256_max_epu32(r, thr), r));
}

/* The common tail: the rounded code of each lane in, the complete code out (a: the magnitude
 * compared with k->inf for the specials, u: the sign in bit 31); late: without the sign (the
 * caller sets it, SR2_LATE). */
static inline __attribute__((always_inline)) __m256i sr2_tail(const sr2_consts *k, __m256i code,
                                                              __m256i a, __m256i u, const int mint,
                                                              const int wide, const int SH,
                                                              const int SG, const int late) {
    const __m256i kn = _mm256_cmpgt_epi32(a, k->inf);
    __m256i dm = k->sbit;
    if (!(mint & 2)) dm = _mm256_blendv_epi8(dm, k->dnan, kn); /* mint & 2: NaN signed */
    if (mint) {
        code = _mm256_min_epu32(code, k->ovfc); /* max, or the code after it (inf / NaN) */
        if (wide) code = SR2_SLL(code, SH);
        if (mint != 7) code = _mm256_blendv_epi8(code, k->nan0, kn);
        if (late) return code;
    } else {
        const __m256i ko = _mm256_cmpgt_epi32(code, k->maxc); /* codes below 2^31 */
        const __m256i ki = _mm256_cmpeq_epi32(a, k->inf);
        if (wide) code = SR2_SLL(code, SH);
        code = _mm256_blendv_epi8(code, k->ovf0, ko);
        code = _mm256_blendv_epi8(code, k->inf0, ki);
        code = _mm256_blendv_epi8(code, k->nan0, kn);
        dm = _mm256_blendv_epi8(dm, k->dovf, _mm256_andnot_si256(kn, ko));
        dm = _mm256_blendv_epi8(dm, k->dinf, ki);
    }
    const __m256i sg = SR2_SRL(u, SG);
    return _mm256_or_si256(code, _mm256_and_si256(sg, dm));
}

static inline __attribute__((always_inline)) __m256i sr8(const sr2_consts *k, __m256i u, __m256i r,
                                                         const int sub, const int mint,
                                                         const int wide, const int S0,
                                                         const int SH, const int SG,
                                                         const int late) {
    const __m256i a = _mm256_and_si256(u, k->absm);
    /* k->rebias1 = rebias + 2^s0 - 1 */
    __m256i code = SR2_SRL(_mm256_sub_epi32(_mm256_add_epi32(a, k->rebias1), SR2_SRL(r, 32 - S0)), S0);
    if (sub) {
        const __m256i ks = _mm256_cmpgt_epi32(k->minnorm, a); /* both below 2^31 */
        if (!_mm256_testz_si256(ks, ks)) {
            const __m256i eb = _mm256_srli_epi32(a, 23);
            const __m256i m = _mm256_or_si256(_mm256_and_si256(a, k->frac), k->hid);
            const __m256i sf = _mm256_sub_epi32(k->subc, eb);
            const __m256i k1 = _mm256_add_epi32(_mm256_srlv_epi32(m, sf), k->one);
            const __m256i t = _mm256_or_si256(_mm256_sllv_epi32(m, _mm256_sub_epi32(eb, k->subc32)),
                                              _mm256_srlv_epi32(m, _mm256_sub_epi32(k->subc32, eb)));
            code = _mm256_blendv_epi8(code, sr2_down(k1, t, r), ks);
        }
    }
    return sr2_tail(k, code, a, u, mint, wide, SH, SG, late);
}

/* 8 float64 elements (their high and low halves, lanes e0 e1 e4 e5 | e2 e3 e6 e7) with their
 * words in the same order: the codes in that order. S0 = 52 - p (32..52). */
static inline __attribute__((always_inline)) __m256i sr8d(const sr2_consts *k, __m256i hi,
                                                          __m256i lo, __m256i r, const int mint,
                                                          const int wide, const int S0,
                                                          const int SH, const int SG,
                                                          const int late) {
    const __m256i ah = _mm256_and_si256(hi, k->absm);
    __m256i code = _mm256_add_epi32(SR2_SRL(ah, S0 - 32), k->rebias1); /* code + 1 */
    __m256i thr = _mm256_or_si256(SR2_SLL(ah, 64 - S0), SR2_SRL(lo, S0 - 32));
    const __m256i ks = _mm256_cmpgt_epi32(k->minnorm, ah); /* both below 2^31 */
    if (!_mm256_testz_si256(ks, ks)) {
        const __m256i eb = _mm256_srli_epi32(ah, 20);
        const __m256i mh = _mm256_or_si256(_mm256_and_si256(ah, k->frac), k->hid);
        const __m256i x = _mm256_sub_epi32(k->subc, eb);   /* sf - 32 */
        const __m256i y = _mm256_sub_epi32(k->subc32, eb); /* sf - 64 */
        const __m256i k1 = _mm256_add_epi32(_mm256_srlv_epi32(mh, x), k->one);
        const __m256i t = _mm256_or_si256(
            _mm256_or_si256(_mm256_sllv_epi32(mh, _mm256_sub_epi32(eb, k->subc32)),
                            _mm256_srlv_epi32(lo, x)),
            _mm256_srlv_epi32(mh, y));
        code = _mm256_blendv_epi8(code, k1, ks);
        thr = _mm256_blendv_epi8(thr, t, ks);
    }
    const __m256i as = _mm256_or_si256(ah, _mm256_min_epu32(lo, k->one)); /* for the specials */
    return sr2_tail(k, sr2_down(code, thr, r), as, hi, mint, wide, SH, SG, late);
}

/* The words of the next 8 elements: the generator's (GEN, state advanced) or the caller's. GEN is
 * a constant of the loop: no test of rnd per group. */
static inline __attribute__((always_inline)) __m256i sr_words8(const uint32_t *rnd, size_t i,
                                                               __m256i *st, const int gen) {
    if (!gen) return _mm256_loadu_si256((const __m256i *)(const void *)(rnd + i));
    const __m256i z = sm_mix256(*st);
    *st = _mm256_add_epi64(*st, _mm256_set1_epi64x((long long)(4 * PP_SM_GAMMA)));
    return z;
}

/* Software prefetch of the input (and of the given words) PP_PREFETCH_AVX2 bytes ahead, LINES
 * cache lines of each: the 64 bytes of input one step reads per line (never faults). */
#if PP_PREFETCH_AVX2 > 0
#define SR2_PREFETCH(s, r, LINES)                                                                  \
    do {                                                                                           \
        for (int l_ = 0; l_ < (LINES); l_++) {                                                     \
            _mm_prefetch((const char *)(s) + PP_PREFETCH_AVX2 + 64 * l_, _MM_HINT_T0);             \
            if (!gen) _mm_prefetch((const char *)(r) + PP_PREFETCH_AVX2 + 64 * l_, _MM_HINT_T0);   \
        }                                                                                          \
    } while (0)
#else
#define SR2_PREFETCH(s, r, LINES) ((void)0)
#endif

/* The loop's compile-time case: the format's shifts, generator or given words, tail, subnormals. */
#define SR2_ARGS const int sub, const int mint, const int gen, const int S0, const int SH, const int SG
#define SR2_PASS sub, mint, gen, S0, SH, SG

static inline __attribute__((always_inline)) __m256i sr_group8(const sr2_consts *k,
                                                               const uint32_t *src, size_t i,
                                                               const uint32_t *rnd, __m256i *st,
                                                               const int wide, __m256i *uo,
                                                               const int late, SR2_ARGS) {
    const __m256i r = sr_words8(rnd, i, st, gen);
    *uo = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
    return sr8(k, *uo, r, sub, mint, wide, S0, SH, SG, late);
}

static inline __attribute__((always_inline)) size_t sr2_loop(const sr2_consts *k,
                                                             const uint32_t *src, size_t n,
                                                             const uint32_t *rnd, __m256i st,
                                                             void *dst, const int ob, SR2_ARGS) {
    size_t i = 0;
    __m256i u0, u1, u2, u3;
    if (ob == 1) {
        const int late = SR2_LATE(mint, 1);
        const __m256i ord = _mm256_set_epi32(7, 3, 6, 2, 5, 1, 4, 0);
        const __m256i s80 = _mm256_set1_epi8((char)0x80);
        for (; i + 32 <= n; i += 32) {
            SR2_PREFETCH(src + i, rnd + i, 2);
            /* codes <= 0xff (<= 0x7f when late): the saturating packs keep them */
            const __m256i c0 = sr_group8(k, src, i, rnd, &st, 0, &u0, late, SR2_PASS);
            const __m256i c1 = sr_group8(k, src, i + 8, rnd, &st, 0, &u1, late, SR2_PASS);
            const __m256i w01 = _mm256_packus_epi32(c0, c1);
            const __m256i c2 = sr_group8(k, src, i + 16, rnd, &st, 0, &u2, late, SR2_PASS);
            const __m256i c3 = sr_group8(k, src, i + 24, rnd, &st, 0, &u3, late, SR2_PASS);
            const __m256i w23 = _mm256_packus_epi32(c2, c3);
            __m256i b = _mm256_packus_epi16(w01, w23);
            if (late) {
                const __m256i sg = _mm256_packs_epi16(_mm256_packs_epi32(u0, u1), _mm256_packs_epi32(u2, u3));
                b = _mm256_or_si256(b, _mm256_and_si256(sg, s80));
            }
            b = _mm256_permutevar8x32_epi32(b, ord);
            _mm256_storeu_si256((__m256i *)(void *)((uint8_t *)dst + i), b);
        }
    } else if (ob == 2) {
        const int late = SR2_LATE(mint, 2);
        const __m256i s8000 = _mm256_set1_epi16((short)0x8000);
        for (; i + 16 <= n; i += 16) {
            SR2_PREFETCH(src + i, rnd + i, 1);
            const __m256i c0 = sr_group8(k, src, i, rnd, &st, 0, &u0, late, SR2_PASS);
            const __m256i c1 = sr_group8(k, src, i + 8, rnd, &st, 0, &u1, late, SR2_PASS);
            __m256i w = _mm256_packus_epi32(c0, c1);
            if (late) w = _mm256_or_si256(w, _mm256_and_si256(_mm256_packs_epi32(u0, u1), s8000));
            w = _mm256_permute4x64_epi64(w, 0xD8);
            _mm256_storeu_si256((__m256i *)(void *)((uint16_t *)dst + i), w);
        }
    } else {
        for (; i + 8 <= n; i += 8) {
            if (!(i & 8)) SR2_PREFETCH(src + i, rnd + i, 1);
            _mm256_storeu_si256((__m256i *)(void *)((uint32_t *)dst + i),
                                sr_group8(k, src, i, rnd, &st, 1, &u0, 0, SR2_PASS));
        }
    }
    return i;
}

/* One format's loops: each (generator or given words) x tail x subnormal path. */
static inline __attribute__((always_inline)) size_t sr2_format(const sr2_consts *k,
                                                               const uint32_t *src, size_t n,
                                                               const uint32_t *rnd, __m256i st,
                                                               void *dst, const int ob,
                                                               const int sub, const int mint,
                                                               const int S0, const int SH,
                                                               const int SG) {
#define SR2_T(G, M, SUB) sr2_loop(k, src, n, rnd, st, dst, ob, SUB, M, G, S0, SH, SG)
#define SR2_M(G, SUB)                                                                              \
    (mint == 7 ? SR2_T(G, 7, SUB) : mint == 3 ? SR2_T(G, 3, SUB) : mint ? SR2_T(G, 1, SUB) : SR2_T(G, 0, SUB))
#define SR2_S(G) (sub ? SR2_M(G, 1) : SR2_M(G, 0))
    return rnd ? SR2_S(0) : SR2_S(1);
#undef SR2_S
#undef SR2_M
#undef SR2_T
}

#include "kern_sr64_avx2.h"

/* float32 and float64 sources. Returns how many leading elements it did: whole groups, or 0 when
 * the case is not this one. */
static size_t sr_avx2(const pp_params *pr, int f64, const void *src, size_t n, const uint32_t *rnd,
                      uint64_t seed, uint64_t first, void *dst, int out_bytes, int stream) {
    if (stream) return 0; /* no streaming form in this set */
    if (pr->rounding != PP_STOCHASTIC || (!rnd && (first & 1u)) || pr->p < 1 || pr->p > 22)
        return 0;
    if (out_bytes != 1 && out_bytes != 2 && out_bytes != 4) return 0;
    const int sub = pr->has_sub != 0;
    const uint32_t s0 = 23u - (uint32_t)pr->p, shift = (uint32_t)pr->shift;
    const int subc = (int)s0 + pr->emin + 127;
    /* the argument above: an eb = 0 lane must shift everything out (sf = C >= 56) */
    if (!f64 && sub && subc < 56) return 0;
    const uint32_t ovfc = pr->ovf[0] >> shift;
    int mint = (ovfc == pr->maxc || ovfc == pr->maxc + 1u) && (ovfc << shift) == pr->ovf[0] &&
               pr->inf[0] == pr->ovf[0] && pr->dovf == pr->sign_bit && pr->dinf == pr->sign_bit;
    if (mint && pr->dnan == pr->sign_bit) mint = 3; /* and NaN keeps the sign too */
    if (mint == 3 && pr->nan[0] == pr->ovf[0]) mint = 7; /* and NaN is the overflow code */
    if (pr->maxc + 1u >= 0x80000000u) return 0; /* signed compares of codes */
    sr2_consts k;
    k.absm = _mm256_set1_epi32(0x7fffffff);
    k.one = _mm256_set1_epi32(1);
    k.rebias1 = _mm256_set1_epi32((int)(((uint32_t)(pr->bias - 127) << 23) + (1u << s0) - 1u));
    k.minnorm = _mm256_set1_epi32((int)((uint32_t)(pr->emin + 127) << 23));
    k.inf = _mm256_set1_epi32(0x7f800000);
    k.maxc = _mm256_set1_epi32((int)pr->maxc);
    k.ovfc = _mm256_set1_epi32((int)ovfc);
    k.ovf0 = _mm256_set1_epi32((int)pr->ovf[0]);
    k.inf0 = _mm256_set1_epi32((int)pr->inf[0]);
    k.nan0 = _mm256_set1_epi32((int)pr->nan[0]);
    k.dovf = _mm256_set1_epi32((int)pr->dovf);
    k.dinf = _mm256_set1_epi32((int)pr->dinf);
    k.dnan = _mm256_set1_epi32((int)pr->dnan);
    k.sbit = _mm256_set1_epi32((int)pr->sign_bit);
    k.frac = _mm256_set1_epi32(0x7fffff);
    k.hid = _mm256_set1_epi32(0x800000);
    k.subc = _mm256_set1_epi32(subc);
    k.subc32 = _mm256_set1_epi32(subc - 32);
    if (f64) return sr_avx2_f64(pr, (const uint64_t *)src, n, rnd, seed, first, dst, out_bytes, mint, &k);
    __m256i st = _mm256_setzero_si256();
    if (!rnd) {
        const uint64_t b = seed + (first >> 1) * PP_SM_GAMMA, g = PP_SM_GAMMA;
        st = _mm256_set_epi64x((long long)(b + 4 * g), (long long)(b + 3 * g), (long long)(b + 2 * g),
                               (long long)(b + g));
    }
    const uint32_t *s = (const uint32_t *)src;
    const int sg = 31 - pr->sign_pos;
    /* the formats' own shifts as immediates: fp8e4 / fp8e4m3fn (s0 20), fp8e5 (21), bf16 (16),
     * fp16 (13), fp32r (13, storage shift 13); any other format: 0, the lanes */
    size_t done = 0;
    if (out_bytes == 1 && sg == 24 && s0 == 20) done = sr2_format(&k, s, n, rnd, st, dst, 1, sub, mint, 20, 0, 24);
    else if (out_bytes == 1 && sg == 24 && s0 == 21) done = sr2_format(&k, s, n, rnd, st, dst, 1, sub, mint, 21, 0, 24);
    else if (out_bytes == 2 && sg == 16 && s0 == 16) done = sr2_format(&k, s, n, rnd, st, dst, 2, sub, mint, 16, 0, 16);
    else if (out_bytes == 2 && sg == 16 && s0 == 13) done = sr2_format(&k, s, n, rnd, st, dst, 2, sub, mint, 13, 0, 16);
    else if (out_bytes == 4 && sg == 0 && s0 == 13 && shift == 13) done = sr2_format(&k, s, n, rnd, st, dst, 4, sub, mint, 13, 13, 0);
    return done;
}
