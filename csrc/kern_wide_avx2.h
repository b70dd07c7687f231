/* float32 -> fp32r / bf16 by integer rounding, AVX2, plain or streaming stores. Included by
 * kern_avx2.c only (after its prefetch distance). */

/* float32 -> fp32r or bf16, rne / rtz / rna. Both share float32's exponent range, and their
 * subnormal quanta (2^-136, 2^-133) are bit S of a float32 subnormal's bits as they are of a
 * normal's (S = 13 for fp32r, 16 for bf16), so every finite magnitude a rounds at bit S of its
 * bits, a carry moving into the exponent (past max it gives 0x7f800000, which the overflow test
 * sees): rne a + (2^(S-1) - 1) + lsb, rna a + 2^(S-1), rtz a, then the bits below S dropped
 * (fp32r keeps its code in place, bf16 shifts it down by 16). The specials are selected last as
 * in kern_body.h's lane (overflow, then inf, then NaN inputs), each with the sign where the policy
 * keeps it (the dX masks: the sign at bit 31 for fp32r, 15 for bf16). Integer operations only.
 *
 * With stream set, the output goes to memory with streaming stores (no read for ownership: a
 * quarter of the traffic of a bf16 call, a third of an fp32r one); the elements before the first
 * 32-byte boundary of dst and after the last whole step through the scalar loop (pp_wide1,
 * kern_shared.h, the same arithmetic one element at a time). */
typedef struct {
    __m256i absm, inf, keep, half, one, tie, maxc, ovf0, dovf, inf0, dinf, nan0, dnan;
} wide_consts;

/* 8 results in 32-bit lanes (bf16: the 16-bit code in the low half). PLAIN: overflow gives inf
 * with its sign (no saturation), so every overflowing sum and inf itself already are that code
 * (a finite a rounds to at most 0x7f800000 + the dropped bits): only NaN inputs are selected.
 * PLAIN == PP_FINITE (kern_shared.h): the caller's inputs are finite and round to no special
 * code, under any policy: nothing is selected (only absm, keep, half, one and tie are read). */
PP_KFN __m256i wide8(const wide_consts *k, __m256i u, const int rnd, const int S,
                      const int PLAIN) {
    const __m256i a = _mm256_and_si256(u, k->absm);
    __m256i sg = _mm256_andnot_si256(k->absm, u);
    __m256i r;
    if (rnd == PP_RNE)
        r = _mm256_add_epi32(_mm256_add_epi32(a, k->half),
                             _mm256_and_si256(_mm256_srli_epi32(a, S), k->one));
    else if (rnd == PP_RNA)
        r = _mm256_add_epi32(a, k->tie);
    else
        r = a;
    /* r <= 0x80000000 + 2^(S-1): a NaN's sum may wrap negative (fp32r) or past max (bf16), but
     * NaNs are replaced below */
    if (S == 16) {
        r = _mm256_srli_epi32(r, 16);
        sg = _mm256_srli_epi32(sg, 16);
    } else {
        r = _mm256_and_si256(r, k->keep);
    }
    __m256i v = _mm256_or_si256(r, sg);
    if (PLAIN == PP_FINITE) return v; /* finite inputs: nothing to select */
    if (!PLAIN) {
        v = _mm256_blendv_epi8(v, _mm256_or_si256(k->ovf0, _mm256_and_si256(sg, k->dovf)),
                               _mm256_cmpgt_epi32(r, k->maxc));
        v = _mm256_blendv_epi8(v, _mm256_or_si256(k->inf0, _mm256_and_si256(sg, k->dinf)),
                               _mm256_cmpeq_epi32(a, k->inf));
    }
    return _mm256_blendv_epi8(v, _mm256_or_si256(k->nan0, _mm256_and_si256(sg, k->dnan)),
                              _mm256_cmpgt_epi32(a, k->inf));
}

PP_KFN void wide_loop(const pp_params *pr, const uint32_t *src, size_t n, void *dst_,
                       const int stream, const int rnd, const int S, const int PLAIN) {
    wide_consts k;
    k.absm = _mm256_set1_epi32(0x7fffffff);
    k.inf = _mm256_set1_epi32(0x7f800000);
    k.keep = _mm256_set1_epi32((int)~((1u << S) - 1u));
    k.half = _mm256_set1_epi32((int)((1u << (S - 1)) - 1u));
    k.one = _mm256_set1_epi32(1);
    k.tie = _mm256_set1_epi32((int)(1u << (S - 1)));
    k.maxc = _mm256_set1_epi32((int)(S == 16 ? pr->maxc : pr->maxc << S));
    k.ovf0 = _mm256_set1_epi32((int)pr->ovf[0]);
    k.dovf = _mm256_set1_epi32((int)pr->dovf);
    k.inf0 = _mm256_set1_epi32((int)pr->inf[0]);
    k.dinf = _mm256_set1_epi32((int)pr->dinf);
    k.nan0 = _mm256_set1_epi32((int)pr->nan[0]);
    k.dnan = _mm256_set1_epi32((int)pr->dnan);
    uint16_t *d16 = (uint16_t *)dst_;
    uint32_t *d32 = (uint32_t *)dst_;
    size_t i = 0;
    if (stream) { /* to dst's first 32-byte boundary (dst is aligned to its element size) */
        i = pp_head_to(dst_, n, S == 16 ? 2 : 4, 32);
        pp_wide_scalar(pr, src, 0, i, dst_, rnd, S);
    }
    for (; i + 16 <= n; i += 16) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)(src + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m256i v0 = wide8(&k, _mm256_loadu_si256((const __m256i *)(const void *)(src + i)), rnd, S, PLAIN);
        const __m256i v1 = wide8(&k, _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 8)), rnd, S, PLAIN);
        if (S == 16) {
            /* codes <= 0xffff: the unsigned saturating pack is exact; then the 64-bit quarters
             * into element order */
            const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(v0, v1), 0xd8);
            if (stream) _mm256_stream_si256((__m256i *)(void *)(d16 + i), h);
            else _mm256_storeu_si256((__m256i *)(void *)(d16 + i), h);
        } else if (stream) {
            _mm256_stream_si256((__m256i *)(void *)(d32 + i), v0);
            _mm256_stream_si256((__m256i *)(void *)(d32 + i + 8), v1);
        } else {
            _mm256_storeu_si256((__m256i *)(void *)(d32 + i), v0);
            _mm256_storeu_si256((__m256i *)(void *)(d32 + i + 8), v1);
        }
    }
    pp_wide_scalar(pr, src, i, n, dst_, rnd, S);
}

/* wide_avx2(pr, src, n, dst, out_bytes, stream): n when it encoded the n elements (fp32r or bf16
 * under rne, rtz or rna), 0 otherwise (then nothing was written); kern_shared.h. */
PP_WIDE_ENTRY(wide_avx2, wide_loop, PP_WIDE_NO_HW)
