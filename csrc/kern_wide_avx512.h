/* float32 -> fp32r / bf16 by integer rounding, AVX-512, plain or streaming stores; bf16 rne by
 * vcvtneps2bf16 where the CPU has AVX512_BF16, guarded. Included by kern_avx512.c only (after
 * PF512). The AVX2 set's kern_wide_avx2.h, in masks: see there for the arithmetic and why it is
 * exact (rounding at bit S = 13 for fp32r, 16 for bf16, of every finite magnitude's bits, the
 * specials selected last: overflow, then inf, then NaN inputs, each with the sign where the
 * policy keeps it).
 *
 * With stream set the output goes to memory with streaming stores, 64 bytes each; the elements
 * before dst's first 64-byte boundary and after the last whole step through the scalar loop
 * (wide1, kern_wide_avx2.h's, repeated here because each set's header is its own unit). */
#define WIDE5_FN static inline __attribute__((always_inline))

typedef struct {
    __m512i absm, inf, keep, half, one, tie, maxc, ovfv, dovf, infv, dinf, nanv, dnan;
} wide5_consts;

/* 16 results in 32-bit lanes (bf16: the code in the low half). PLAIN: overflow gives inf with its
 * sign, which every overflowing sum already is: only NaN inputs are selected. */
WIDE5_FN __m512i wide16(const wide5_consts *k, __m512i u, const int rnd, const int S,
                        const int PLAIN) {
    const __m512i a = _mm512_and_si512(u, k->absm);
    __m512i sg = _mm512_andnot_si512(k->absm, u);
    __m512i r;
    if (rnd == PP_RNE)
        r = _mm512_add_epi32(_mm512_add_epi32(a, k->half),
                             _mm512_and_si512(_mm512_srli_epi32(a, S), k->one));
    else if (rnd == PP_RNA)
        r = _mm512_add_epi32(a, k->tie);
    else
        r = a;
    if (S == 16) {
        r = _mm512_srli_epi32(r, 16);
        sg = _mm512_srli_epi32(sg, 16);
    } else {
        r = _mm512_and_si512(r, k->keep);
    }
    __m512i v = _mm512_or_si512(r, sg);
    /* A | (B & C): the special code with the sign where the policy keeps it */
    if (!PLAIN) {
        /* r of a finite a is below 2^31; a NaN's may wrap, but NaNs are replaced below */
        v = _mm512_mask_mov_epi32(v, _mm512_cmpgt_epu32_mask(r, k->maxc),
                                  _mm512_ternarylogic_epi32(k->ovfv, sg, k->dovf, 0xF8));
        v = _mm512_mask_mov_epi32(v, _mm512_cmpeq_epi32_mask(a, k->inf),
                                  _mm512_ternarylogic_epi32(k->infv, sg, k->dinf, 0xF8));
    }
    return _mm512_mask_mov_epi32(v, _mm512_cmpgt_epu32_mask(a, k->inf),
                                 _mm512_ternarylogic_epi32(k->nanv, sg, k->dnan, 0xF8));
}

/* The same arithmetic, one element. */
WIDE5_FN uint32_t wide5_1(const pp_params *pr, uint32_t u, const int rnd, const int S) {
    const uint32_t a = u & 0x7fffffffu, sg0 = u & 0x80000000u;
    const uint32_t sg = S == 16 ? sg0 >> 16 : sg0;
    const uint32_t h = 1u << (S - 1);
    uint32_t r = rnd == PP_RNE ? a + (h - 1u) + ((a >> S) & 1u) : rnd == PP_RNA ? a + h : a;
    r = S == 16 ? r >> 16 : r & ~((1u << S) - 1u);
    const uint32_t maxc = S == 16 ? pr->maxc : pr->maxc << S;
    uint32_t v = r > maxc && a <= 0x7f800000u ? pr->ovf[0] | (sg & pr->dovf) : r | sg;
    v = a == 0x7f800000u ? pr->inf[0] | (sg & pr->dinf) : v;
    return a > 0x7f800000u ? pr->nan[0] | (sg & pr->dnan) : v;
}

/* bf16 rne of 16 elements by vcvtneps2bf16: exact where no lane is a NaN or a subnormal (the
 * instruction treats subnormal inputs as zero and quiets NaNs its own way; it rounds every other
 * float32 to nearest even, carrying into the exponent and past max to inf with the sign, and a
 * normal float32 never rounds to a bf16 subnormal: both have float32's exponent range), with
 * PLAIN specials only (overflow and inf give inf with the sign: the instruction's). One
 * vfpclassps per vector finds the lanes it cannot do; such a vector takes wide16. Intel SDM,
 * VCVTNEPS2BF16: no exceptions, MXCSR not consulted (DAZ, FTZ and RC do not apply). */
WIDE5_FN void wide5_loop(const pp_params *pr, const uint32_t *src, size_t n, void *dst_,
                         const int stream, const int rnd, const int S, const int PLAIN) {
    wide5_consts k;
    k.absm = _mm512_set1_epi32(0x7fffffff);
    k.inf = _mm512_set1_epi32(0x7f800000);
    k.keep = _mm512_set1_epi32((int)~((1u << S) - 1u));
    k.half = _mm512_set1_epi32((int)((1u << (S - 1)) - 1u));
    k.one = _mm512_set1_epi32(1);
    k.tie = _mm512_set1_epi32((int)(1u << (S - 1)));
    k.maxc = _mm512_set1_epi32((int)(S == 16 ? pr->maxc : pr->maxc << S));
    k.ovfv = _mm512_set1_epi32((int)pr->ovf[0]);
    k.dovf = _mm512_set1_epi32((int)pr->dovf);
    k.infv = _mm512_set1_epi32((int)pr->inf[0]);
    k.dinf = _mm512_set1_epi32((int)pr->dinf);
    k.nanv = _mm512_set1_epi32((int)pr->nan[0]);
    k.dnan = _mm512_set1_epi32((int)pr->dnan);
    const size_t ob = S == 16 ? 2 : 4;
    uint16_t *d16 = (uint16_t *)dst_;
    uint32_t *d32 = (uint32_t *)dst_;
    /* element order of two packed vectors' 64-bit quarters */
    const __m512i ord = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    size_t i = 0;
    if (stream) { /* to dst's first 64-byte boundary (dst is aligned to its element size) */
        size_t head = (size_t)(-(uintptr_t)dst_ & 63u) / ob;
        if (head > n) head = n;
        for (; i < head; i++) {
            if (S == 16) d16[i] = (uint16_t)wide5_1(pr, src[i], rnd, S);
            else d32[i] = wide5_1(pr, src[i], rnd, S);
        }
    }
    for (; i + 32 <= n; i += 32) {
        PF512(src + i, 2);
        const __m512i u0 = _mm512_loadu_si512((const void *)(src + i));
        const __m512i u1 = _mm512_loadu_si512((const void *)(src + i + 16));
        __m512i h0, h1;
        if (S == 16) {
            /* codes <= 0xffff: the unsigned saturating pack is exact; then the quarters into
             * element order */
            const __m512i h = _mm512_permutexvar_epi64(
                ord, _mm512_packus_epi32(wide16(&k, u0, rnd, S, PLAIN), wide16(&k, u1, rnd, S, PLAIN)));
            if (stream) _mm512_stream_si512((void *)(d16 + i), h);
            else _mm512_storeu_si512((void *)(d16 + i), h);
            continue;
        }
        h0 = wide16(&k, u0, rnd, S, PLAIN);
        h1 = wide16(&k, u1, rnd, S, PLAIN);
        if (stream) {
            _mm512_stream_si512((void *)(d32 + i), h0);
            _mm512_stream_si512((void *)(d32 + i + 16), h1);
        } else {
            _mm512_storeu_si512((void *)(d32 + i), h0);
            _mm512_storeu_si512((void *)(d32 + i + 16), h1);
        }
    }
    for (; i < n; i++) {
        if (S == 16) d16[i] = (uint16_t)wide5_1(pr, src[i], rnd, S);
        else d32[i] = wide5_1(pr, src[i], rnd, S);
    }
}

/* bf16 rne by vcvtneps2bf16 (AVX512_BF16), 32 elements per step, specials as with PLAIN: exact
 * where no lane is a NaN or a subnormal. The instruction treats subnormal inputs as zero and
 * quiets NaNs its own way; it rounds every other float32 to nearest even, a carry moving into the
 * exponent and past max to inf with the sign (a normal float32 never rounds to a bf16 subnormal:
 * both have float32's exponent range); it raises no exception and does not consult MXCSR (DAZ,
 * FTZ and RC do not apply; Intel SDM, VCVTNEPS2BF16). One vfpclassps per vector finds the lanes
 * it cannot do; such a vector takes wide16. Its own function: the only one compiled for
 * AVX512_BF16, called only where the CPU has it (pp_isa_avx512_bf16). */
#define PP_BF16_GUARD 0xA1 /* vfpclassps: QNaN 0x01 | denormal 0x20 | SNaN 0x80 */
#ifndef PP_CVTNEPS_SI256
#define PP_CVTNEPS_SI256(f) ((__m256i)_mm512_cvtneps_pbh(f))
#endif
#ifndef PP_TARGET_BF16
#define PP_TARGET_BF16                                                                             \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,f16c,bmi,bmi2,popcnt")))
#endif
PP_TARGET_BF16 WIDE5_FN __m256i bf16hw16(const wide5_consts *k, __m512i u) {
    if (_mm512_fpclass_ps_mask(_mm512_castsi512_ps(u), PP_BF16_GUARD))
        return _mm512_cvtepi32_epi16(wide16(k, u, PP_RNE, 16, 1));
    return PP_CVTNEPS_SI256(_mm512_castsi512_ps(u));
}

PP_TARGET_BF16 static void bf16hw_loop(const pp_params *pr, const uint32_t *src, size_t n,
                                       uint16_t *dst, const int stream) {
    wide5_consts k;
    k.absm = _mm512_set1_epi32(0x7fffffff);
    k.inf = _mm512_set1_epi32(0x7f800000);
    k.half = _mm512_set1_epi32(0x7fff);
    k.one = _mm512_set1_epi32(1);
    k.nanv = _mm512_set1_epi32((int)pr->nan[0]);
    k.dnan = _mm512_set1_epi32((int)pr->dnan);
    size_t i = 0;
    if (stream) { /* to dst's first 64-byte boundary */
        size_t head = (size_t)(-(uintptr_t)dst & 63u) / 2;
        if (head > n) head = n;
        for (; i < head; i++) dst[i] = (uint16_t)wide5_1(pr, src[i], PP_RNE, 16);
    }
    for (; i + 32 <= n; i += 32) {
        PF512(src + i, 2);
        const __m256i h0 = bf16hw16(&k, _mm512_loadu_si512((const void *)(src + i)));
        const __m256i h1 = bf16hw16(&k, _mm512_loadu_si512((const void *)(src + i + 16)));
        const __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
        if (stream) _mm512_stream_si512((void *)(dst + i), h);
        else _mm512_storeu_si512((void *)(dst + i), h);
    }
    for (; i < n; i++) dst[i] = (uint16_t)wide5_1(pr, src[i], PP_RNE, 16);
}


#define WIDE5_LOOP_(R, S, PL)                                                                      \
    do {                                                                                           \
        if (stream) wide5_loop(pr, src, n, dst, 1, R, S, PL);                                      \
        else wide5_loop(pr, src, n, dst, 0, R, S, PL);                                             \
    } while (0)
#define WIDE5_ROUNDINGS_(S, PL)                                                                    \
    do {                                                                                           \
        if (pr->rounding == PP_RNE && S == 16 && PL && pp_isa_avx512_bf16())                       \
            bf16hw_loop(pr, src, n, (uint16_t *)dst, stream);                                      \
        else if (pr->rounding == PP_RNE) WIDE5_LOOP_(PP_RNE, S, PL);                               \
        else if (pr->rounding == PP_RNA) WIDE5_LOOP_(PP_RNA, S, PL);                               \
        else WIDE5_LOOP_(PP_RTZ, S, PL);                                                           \
    } while (0)
#define WIDE5_ROUNDINGS(S)                                                                         \
    do {                                                                                           \
        const uint32_t infc_ = S == 16 ? 0x7f80u : 0x7f800000u;                                    \
        const uint32_t sgm_ = S == 16 ? 0x8000u : 0x80000000u;                                     \
        if (pr->ovf[0] == infc_ && pr->inf[0] == infc_ && pr->dovf == sgm_ && pr->dinf == sgm_)    \
            WIDE5_ROUNDINGS_(S, 1);                                                                \
        else WIDE5_ROUNDINGS_(S, 0);                                                               \
    } while (0)

/* Returns n when it encoded the n elements (fp32r or bf16 under rne, rtz or rna), 0 otherwise
 * (then nothing was written). */
static size_t wide_avx512(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                          int out_bytes, const int stream) {
    if (pr->rounding != PP_RNE && pr->rounding != PP_RNA && pr->rounding != PP_RTZ) return 0;
    if (pr->emin != -126 || pr->bias != 127) return 0;
    if ((uintptr_t)dst % (unsigned)out_bytes) return 0; /* not aligned to its elements */
    if (out_bytes == 4 && pr->shift == 13 && pr->p == 10 && pr->sign_pos == 31) WIDE5_ROUNDINGS(13);
    else if (out_bytes == 2 && pr->shift == 0 && pr->p == 7 && pr->sign_pos == 15) WIDE5_ROUNDINGS(16);
    else return 0;
    return n;
}
