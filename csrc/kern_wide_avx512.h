/* float32 -> fp32r / bf16 by integer rounding, AVX-512, plain or streaming stores; bf16 rne by
 * vcvtneps2bf16 where the CPU has AVX512_BF16, guarded. Included by kern_avx512.c only (after
 * PF512). The AVX2 set's kern_wide_avx2.h, in masks: see there for the arithmetic and why it is
 * exact (rounding at bit S = 13 for fp32r, 16 for bf16, of every finite magnitude's bits, the
 * specials selected last: overflow, then inf, then NaN inputs, each with the sign where the
 * policy keeps it).
 *
 * With stream set the output goes to memory with streaming stores, 64 bytes each; the elements
 * before dst's first 64-byte boundary and after the last whole step through the scalar loop
 * (pp_wide1, kern_shared.h). */
typedef struct {
    __m512i absm, inf, keep, half, one, tie, maxc, ovfv, dovf, infv, dinf, nanv, dnan;
} wide5_consts;

/* 16 results in 32-bit lanes (bf16: the code in the low half). PLAIN: overflow gives inf with its
 * sign, which every overflowing sum already is: only NaN inputs are selected. PLAIN == PP_FINITE
 * (kern_shared.h): finite inputs that round to no special code, nothing selected (only absm,
 * keep, half, one and tie are read). */
PP_KFN __m512i wide16(const wide5_consts *k, __m512i u, const int rnd, const int S,
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
    if (PLAIN == PP_FINITE) return v; /* finite inputs: nothing to select */
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

PP_KFN void wide5_loop(const pp_params *pr, const uint32_t *src, size_t n, void *dst_,
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
    uint16_t *d16 = (uint16_t *)dst_;
    uint32_t *d32 = (uint32_t *)dst_;
    /* element order of two packed vectors' 64-bit quarters */
    const __m512i ord = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    size_t i = 0;
    if (stream) { /* to dst's first 64-byte boundary (dst is aligned to its element size) */
        i = pp_head_to(dst_, n, S == 16 ? 2 : 4, 64);
        pp_wide_scalar(pr, src, 0, i, dst_, rnd, S);
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
    pp_wide_scalar(pr, src, i, n, dst_, rnd, S);
}

/* bf16 rne by vcvtneps2bf16 (AVX512_BF16), 32 elements per step, specials as with PLAIN: exact
 * where no lane is a NaN or a subnormal. The instruction treats subnormal inputs as zero and
 * quiets NaNs its own way; it rounds every other float32 to nearest even, a carry moving into the
 * exponent and past max to inf with the sign (a normal float32 never rounds to a bf16 subnormal:
 * both have float32's exponent range); it raises no exception and does not consult MXCSR (DAZ,
 * FTZ and RC do not apply; Intel SDM, VCVTNEPS2BF16). Two integer compares per vector find the
 * lanes it cannot do (0 < |u| < 2^-126, or |u| above inf's bits); such a vector takes wide16.
 * Integer, not vfpclassps: on the real hardware (AMD Zen 5, issue 28) a caller's MXCSR.DAZ made
 * vfpclassps miss subnormal lanes, which then converted to zero (speed.md S22); the emulated
 * vfpclassps had not consulted DAZ. Its own function: the only one compiled for AVX512_BF16,
 * called only where the CPU has it (pp_isa_avx512_bf16). */
#ifndef PP_CVTNEPS_SI256
#define PP_CVTNEPS_SI256(f) ((__m256i)_mm512_cvtneps_pbh(f))
#endif
#ifndef PP_TARGET_BF16
#define PP_TARGET_BF16                                                                             \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,f16c,bmi,bmi2,popcnt")))
#endif
PP_TARGET_BF16 PP_KFN __m256i bf16hw16(const wide5_consts *k, __m512i u) {
    const __m512i a = _mm512_and_si512(u, k->absm);
    const __mmask16 sub = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, k->one), _mm512_set1_epi32(0x7fffff));
    if (sub | _mm512_cmpgt_epu32_mask(a, k->inf))
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
        i = pp_head_to(dst, n, 2, 64);
        pp_wide_scalar(pr, src, 0, i, dst, PP_RNE, 16);
    }
    for (; i + 32 <= n; i += 32) {
        PF512(src + i, 2);
        const __m256i h0 = bf16hw16(&k, _mm512_loadu_si512((const void *)(src + i)));
        const __m256i h1 = bf16hw16(&k, _mm512_loadu_si512((const void *)(src + i + 16)));
        const __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
        if (stream) _mm512_stream_si512((void *)(dst + i), h);
        else _mm512_storeu_si512((void *)(dst + i), h);
    }
    pp_wide_scalar(pr, src, i, n, dst, PP_RNE, 16);
}

/* bf16 rne with PLAIN specials by vcvtneps2bf16 where the CPU has it (the guard in bf16hw16 reads
 * bits, so the caller's MXCSR.DAZ cannot let a subnormal lane through). */
#define WIDE5_HW(S, PL) (S == 16 && PL && pp_isa_avx512_bf16())
#define WIDE5_HW_CALL() bf16hw_loop(pr, src, n, (uint16_t *)dst, stream)

/* wide_avx512(pr, src, n, dst, out_bytes, stream): n when it encoded the n elements (fp32r or bf16
 * under rne, rtz or rna), 0 otherwise (then nothing was written); kern_shared.h. */
PP_WIDE_ENTRY(wide_avx512, wide5_loop, WIDE5_HW)
