/* Decoders of the AVX2 set: fp8 codes in vectors, fp8 and bf16 straight to the destination
 * with streaming stores. Included by kern_avx2.c only (after its prefetch distance). */

/* fp8 codes -> float32 bits: kern_aux.h's dec_small_ in vectors of 8 (the same arithmetic and
 * selections: normal by shift and rebias, subnormal as (float)man times a power of two, exact
 * and normal, so neither rounding mode nor FTZ / DAZ can change it; then inf, NaN, the sign).
 * 32 codes per step; with stream set, the elements before out's first 32-byte boundary and after
 * the last whole step by pp_decode_one, the rest with streaming stores. */
typedef struct {
    __m256i m7f, s80, bias, nmin, infm, infv, qnan, mmask;
    __m256 scale;
} dec8_consts;

static inline __attribute__((always_inline)) __m256i dec8x(const dec8_consts *k, __m128i b8,
                                                           const int P) {
    const __m256i c = _mm256_cvtepu8_epi32(b8);
    const __m256i mag = _mm256_and_si256(c, k->m7f);
    const __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(mag, 23 - P), k->bias);
    const __m256i sub = _mm256_castps_si256(
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(mag, k->mmask)), k->scale));
    __m256i v = _mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(k->nmin, mag));
    v = _mm256_blendv_epi8(v, k->infv, _mm256_cmpeq_epi32(mag, k->infm));
    v = _mm256_blendv_epi8(v, k->qnan, _mm256_cmpgt_epi32(mag, k->infm));
    return _mm256_or_si256(v, _mm256_slli_epi32(_mm256_and_si256(c, k->s80), 24));
}

static inline __attribute__((always_inline)) void dec8_loop(const dec8_consts *k, int format,
                                                            const uint8_t *in, size_t n,
                                                            uint32_t *out, const int stream,
                                                            const int P) {
    size_t i = 0;
    if (stream)
        for (; i < n && ((uintptr_t)(out + i) & 31u); i++)
            out[i] = pp_f32_to_bits(pp_decode_one(format, in[i]));
    for (; i + 32 <= n; i += 32) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)(in + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        const __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(in + i + 16));
        const __m256i d0 = dec8x(k, lo, P), d1 = dec8x(k, _mm_srli_si128(lo, 8), P);
        const __m256i d2 = dec8x(k, hi, P), d3 = dec8x(k, _mm_srli_si128(hi, 8), P);
        __m256i *o = (__m256i *)(void *)(out + i);
        if (stream) {
            _mm256_stream_si256(o, d0);
            _mm256_stream_si256(o + 1, d1);
            _mm256_stream_si256(o + 2, d2);
            _mm256_stream_si256(o + 3, d3);
        } else {
            _mm256_storeu_si256(o, d0);
            _mm256_storeu_si256(o + 1, d1);
            _mm256_storeu_si256(o + 2, d2);
            _mm256_storeu_si256(o + 3, d3);
        }
    }
    for (; i < n; i++) out[i] = pp_f32_to_bits(pp_decode_one(format, in[i]));
}

/* dec_small_'s constants per format (kern_aux.h decode_). */
static void dec8_avx2_any(int format, const uint8_t *in, size_t n, uint32_t *out, const int stream) {
    const int p = format == PP_FMT_FP8E5 ? 2 : 3;
    const uint32_t bias_adj = p == 2 ? 112u : 120u;
    const uint32_t infm = format == PP_FMT_FP8E4 ? 0x78u : format == PP_FMT_FP8E4M3FN ? 0x7fu : 0x7cu;
    const uint32_t infv = format == PP_FMT_FP8E4M3FN ? 0x7fc00000u : 0x7f800000u;
    dec8_consts k;
    k.m7f = _mm256_set1_epi32(0x7f);
    k.s80 = _mm256_set1_epi32(0x80);
    k.bias = _mm256_set1_epi32((int)(bias_adj << 23));
    k.nmin = _mm256_set1_epi32(1 << p);
    k.infm = _mm256_set1_epi32((int)infm);
    k.infv = _mm256_set1_epi32((int)infv);
    k.qnan = _mm256_set1_epi32(0x7fc00000);
    k.mmask = _mm256_set1_epi32((1 << p) - 1);
    k.scale = _mm256_set1_ps(p == 2 ? 0x1p-16f : 0x1p-9f);
    if (p == 2) {
        if (stream) dec8_loop(&k, format, in, n, out, 1, 2);
        else dec8_loop(&k, format, in, n, out, 0, 2);
    } else {
        if (stream) dec8_loop(&k, format, in, n, out, 1, 3);
        else dec8_loop(&k, format, in, n, out, 0, 3);
    }
}

static void decode8_avx2(int format, const void *in, size_t n, uint32_t *out) {
    dec8_avx2_any(format, (const uint8_t *)in, n, out, 0);
}
#define PP_DECODE8 decode8_avx2

/* bf16 codes -> float32 bits (the code in the high half), streaming stores from out's first
 * 32-byte boundary on. */
static void dec_bf16_stream_avx2(const uint16_t *in, size_t n, uint32_t *out) {
    size_t i = 0;
    for (; i < n && ((uintptr_t)(out + i) & 31u); i++) out[i] = (uint32_t)in[i] << 16;
    for (; i + 16 <= n; i += 16) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)(in + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(in + i + 8));
        __m256i *o = (__m256i *)(void *)(out + i);
        _mm256_stream_si256(o, _mm256_slli_epi32(_mm256_cvtepu16_epi32(a), 16));
        _mm256_stream_si256(o + 1, _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
    }
    for (; i < n; i++) out[i] = (uint32_t)in[i] << 16;
}

/* The same straight to the destination with streaming stores (the caller issues the sfence);
 * the fp8 formats and bf16 (0 otherwise: the block buffer). */
static int decode_stream_avx2(int format, const void *in, size_t n, uint32_t *out) {
    if ((uintptr_t)out & 3u) return 0;
    if (format == PP_FMT_BF16) {
        if ((uintptr_t)in & 1u) return 0;
        dec_bf16_stream_avx2((const uint16_t *)in, n, out);
        return 1;
    }
    if (!pp_format_is_fp8(format)) return 0;
    dec8_avx2_any(format, (const uint8_t *)in, n, out, 1);
    return 1;
}
#define PP_DECODE_STREAM decode_stream_avx2
