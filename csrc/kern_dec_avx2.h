/* Decoders of the AVX2 set: fp8 codes in vectors, fp8 and bf16 straight to the destination
 * with streaming stores. Included by kern_avx2.c only (after its prefetch distance). */

/* fp8 codes -> float32 bits by nibble lookups (vpshufb), 32 codes per step. Every fp8 value's
 * float32 has 16 zero low bits, so a code's result is two bytes: b3 (bits 31-24: the sign and the
 * top seven exponent bits) and b2 (bits 23-16: the exponent's last bit and the significand). For
 * a normal code c = s e..e m..m (hi = c >> 4, lo = c & 15) with P significand bits, the float32
 * exponent is e + 120 (P = 3) or e + 112 (P = 2), so
 *   P = 3: b3 = s << 7 | ((hi & 7) + 60),              b2 = lo << 4;
 *   P = 2: b3 = s << 7 | (((hi & 7) << 1) + 56) | lo >> 3,   b2 = (lo & 7) << 5
 * (60 + (hi & 7) is (e + 120) >> 1, as e >> 1 = hi & 7; with P = 2 the exponent's bit 1 is lo's
 * bit 3 and its bit 0 lo's bit 2; 56 + 2 (hi & 7) is even, so the OR is an addition): lookups TA
 * (by hi), TB and TC (by lo). The irregular magnitudes, below the smallest normal (zero and the
 * subnormals) or above the largest finite (inf, NaN), are 8-16 in number with distinct lo (every
 * one below 16, or 0x70 | lo), so one more lookup by lo gives the bytes to XOR into them: the
 * reference table's own b3 and b2 (pp_decode_table) XOR the normal formula's, the sign kept from
 * TA. Whether a code is irregular: its magnitude outside [lo_min, hi_max], one signed byte compare
 * of (2 c - 2 lo_min - 128) mod 256 (2 c drops the sign). Integer operations only: MXCSR cannot
 * act. The two bytes are interleaved (vpunpck*bw, b2 below b3) and widened into the high halves
 * of the float32 lanes (vpunpck*wd with zero); the input's dwords are first permuted (0 2 4 6 1 3
 * 5 7) so that the in-lane unpacks leave the 32 results in element order. With stream set, the
 * elements before out's first 32-byte boundary and after the last whole step by the table, the
 * rest with streaming stores. */
typedef struct {
    __m256i ta, tb, tc, tx3, tx2, lo4, fix, lim, perm;
} dec8_consts;

static inline __attribute__((always_inline)) void dec8_32(const dec8_consts *k, const uint8_t *in,
                                                          uint32_t *out, const int stream,
                                                          const int P) {
    const __m256i v = _mm256_permutevar8x32_epi32(
        _mm256_loadu_si256((const __m256i *)(const void *)in), k->perm);
    const __m256i lo = _mm256_and_si256(v, k->lo4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), k->lo4);
    __m256i b3 = _mm256_shuffle_epi8(k->ta, hi);
    if (P == 2) b3 = _mm256_or_si256(b3, _mm256_shuffle_epi8(k->tb, lo));
    __m256i b2 = _mm256_shuffle_epi8(k->tc, lo);
    /* regular: all ones (then the lookup index has bit 7 set: vpshufb gives 0), irregular: 0 */
    const __m256i reg = _mm256_cmpgt_epi8(k->lim, _mm256_sub_epi8(_mm256_add_epi8(v, v), k->fix));
    const __m256i xi = _mm256_or_si256(lo, reg);
    b3 = _mm256_xor_si256(b3, _mm256_shuffle_epi8(k->tx3, xi));
    b2 = _mm256_xor_si256(b2, _mm256_shuffle_epi8(k->tx2, xi));
    const __m256i z = _mm256_setzero_si256();
    const __m256i w0 = _mm256_unpacklo_epi8(b2, b3), w1 = _mm256_unpackhi_epi8(b2, b3);
    const __m256i d0 = _mm256_unpacklo_epi16(z, w0), d1 = _mm256_unpackhi_epi16(z, w0);
    const __m256i d2 = _mm256_unpacklo_epi16(z, w1), d3 = _mm256_unpackhi_epi16(z, w1);
    __m256i *o = (__m256i *)(void *)out;
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

static inline __attribute__((always_inline)) void dec8_loop(const dec8_consts *k,
                                                            const float *tab, const uint8_t *in,
                                                            size_t n, uint32_t *out,
                                                            const int stream, const int P) {
    size_t i = 0;
    if (stream)
        for (; i < n && ((uintptr_t)(out + i) & 31u); i++) out[i] = pp_f32_to_bits(tab[in[i]]);
    for (; i + 32 <= n; i += 32) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)(in + i) + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        dec8_32(k, in + i, out + i, stream, P);
    }
    for (; i < n; i++) out[i] = pp_f32_to_bits(tab[in[i]]);
}

/* The lookups of the three formats (see above), built once: the irregular entries from the
 * reference's table. [format - PP_FMT_FP8E4][TA, TB, TC, X3, X2][16] */
static _Alignas(16) uint8_t dec8_luts[3][5][16];
static pthread_once_t dec8_luts_once = PTHREAD_ONCE_INIT;

static void dec8_build_luts(void) {
    for (int format = PP_FMT_FP8E4; format <= PP_FMT_FP8E5; format++) {
        const float *tab = pp_decode_table(format);
        const unsigned p = format == PP_FMT_FP8E5 ? 2u : 3u;
        const unsigned lo_min = p == 2 ? 4u : 8u;
        const unsigned hi_max = format == PP_FMT_FP8E4 ? 0x77u : format == PP_FMT_FP8E4M3FN ? 0x7eu : 0x7bu;
        uint8_t(*t)[16] = dec8_luts[format - PP_FMT_FP8E4];
        for (unsigned h = 0; h < 16; h++) {
            t[0][h] = (uint8_t)(((h & 8u) << 4) | (p == 3 ? (h & 7u) + 60u : ((h & 7u) << 1) + 56u));
            t[1][h] = (uint8_t)(p == 3 ? 0u : h >> 3); /* by lo */
            t[2][h] = (uint8_t)(p == 3 ? (h << 4) & 0xffu : (h & 7u) << 5);
            t[3][h] = t[4][h] = 0;
        }
        for (unsigned mag = 0; mag < 128; mag++) {
            if (mag >= lo_min && mag <= hi_max) continue;
            const unsigned l = mag & 15u, f = pp_f32_to_bits(tab[mag]);
            t[3][l] = (uint8_t)(((unsigned)t[0][mag >> 4] | t[1][l]) ^ (f >> 24));
            t[4][l] = (uint8_t)(t[2][l] ^ ((f >> 16) & 0xffu));
        }
    }
}

static void dec8_avx2_any(int format, const uint8_t *in, size_t n, uint32_t *out, const int stream) {
    pthread_once(&dec8_luts_once, dec8_build_luts);
    const float *tab = pp_decode_table(format);
    const int p = format == PP_FMT_FP8E5 ? 2 : 3;
    const unsigned lo_min = p == 2 ? 4u : 8u; /* the smallest normal magnitude, the largest finite */
    const unsigned hi_max = format == PP_FMT_FP8E4 ? 0x77u : format == PP_FMT_FP8E4M3FN ? 0x7eu : 0x7bu;
    const uint8_t(*t)[16] = (const uint8_t(*)[16])dec8_luts[format - PP_FMT_FP8E4];
#define DEC8_T(t) _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)(const void *)(t)))
    dec8_consts k;
    k.ta = DEC8_T(t[0]);
    k.tb = DEC8_T(t[1]);
    k.tc = DEC8_T(t[2]);
    k.tx3 = DEC8_T(t[3]);
    k.tx2 = DEC8_T(t[4]);
#undef DEC8_T
    k.lo4 = _mm256_set1_epi8(0x0f);
    k.fix = _mm256_set1_epi8((char)(uint8_t)(2u * lo_min + 128u));
    k.lim = _mm256_set1_epi8((char)(2 * (int)(hi_max - lo_min) - 127));
    k.perm = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    if (p == 2) {
        if (stream) dec8_loop(&k, tab, in, n, out, 1, 2);
        else dec8_loop(&k, tab, in, n, out, 0, 2);
    } else {
        if (stream) dec8_loop(&k, tab, in, n, out, 1, 3);
        else dec8_loop(&k, tab, in, n, out, 0, 3);
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

/* 8 fp16 or fp32r codes of in + i -> float32 bits, as the reference decodes them (kern_aux.h
 * decode_): fp32r codes are a float32 whose low 13 bits are ignored, NaNs made the quiet NaN with
 * their sign; fp16 by F16C's conversion (exact for every non-NaN half when DAZ is off and every
 * exception masked: dec16_avx2 has when), NaNs the quiet NaN with their sign. */
static inline __attribute__((always_inline)) __m256i dec_wide8_avx2(const void *in, size_t i,
                                                                    const int format) {
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u), qnan = _mm256_set1_epi32(0x7fc00000);
    if (format == PP_FMT_FP32R) {
        const __m256i u = _mm256_and_si256(
            _mm256_loadu_si256((const __m256i *)(const void *)((const uint32_t *)in + i)),
            _mm256_set1_epi32((int)0xffffe000u));
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_andnot_si256(sign, u),
                                               _mm256_set1_epi32(0x7f800000));
        return _mm256_blendv_epi8(u, _mm256_or_si256(_mm256_and_si256(u, sign), qnan), nan);
    }
    const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)in + i));
    const __m256i nan = _mm256_cmpgt_epi32(
        _mm256_and_si256(_mm256_cvtepu16_epi32(h), _mm256_set1_epi32(0x7fff)), _mm256_set1_epi32(0x7c00));
    const __m256i f = _mm256_castps_si256(_mm256_cvtph_ps(h));
    return _mm256_blendv_epi8(f, _mm256_or_si256(_mm256_and_si256(f, sign), qnan), nan);
}

/* fp16 or fp32r codes straight to the destination: up to its first 32-byte boundary and after the
 * last whole step through the zero-padded vector of 8 (the same instructions) with plain stores,
 * 16 elements per two streaming stores between, the input prefetched PP_PREFETCH_AVX2 ahead. */
static inline __attribute__((always_inline)) void dec_wide_stream_avx2(const void *in, size_t n,
                                                                       uint32_t *out,
                                                                       const int format) {
    const size_t cb = format == PP_FMT_FP32R ? 4 : 2;
    size_t i = pp_head_to(out, n, 4, 32); /* < 8 */
    if (i) {
        _Alignas(32) uint32_t pad[8] = {0}, o[8];
        memcpy(pad, in, i * cb);
        _mm256_store_si256((__m256i *)(void *)o, dec_wide8_avx2(pad, 0, format));
        memcpy(out, o, i * sizeof(uint32_t));
    }
    for (; i + 16 <= n; i += 16) {
#if PP_PREFETCH_AVX2 > 0
        _mm_prefetch((const char *)in + i * cb + PP_PREFETCH_AVX2, _MM_HINT_T0);
#endif
        const __m256i d0 = dec_wide8_avx2(in, i, format), d1 = dec_wide8_avx2(in, i + 8, format);
        _mm256_stream_si256((__m256i *)(void *)(out + i), d0);
        _mm256_stream_si256((__m256i *)(void *)(out + i + 8), d1);
    }
    for (; i < n; i += 8) {
        const size_t m = n - i < 8 ? n - i : 8;
        _Alignas(32) uint32_t pad[8] = {0}, o[8];
        memcpy(pad, (const char *)in + i * cb, m * cb);
        _mm256_store_si256((__m256i *)(void *)o, dec_wide8_avx2(pad, 0, format));
        memcpy(out + i, o, m * sizeof(uint32_t));
    }
}

/* The same straight to the destination with streaming stores (the caller issues the sfence): the
 * fp8 formats, bf16, fp32r, and fp16 where its conversion is exact (dec16_avx2); 0, having
 * written nothing, otherwise (the block buffer). fp16 and fp32r are used only where decode.c's
 * PP_STREAM_DECODE_WIDE threshold says so (speed.md S28). */
static int decode_stream_avx2(int format, const void *in, size_t n, uint32_t *out) {
    if ((uintptr_t)out & 3u) return 0;
    if (pp_format_is_fp8(format)) {
        dec8_avx2_any(format, (const uint8_t *)in, n, out, 1);
        return 1;
    }
    if ((uintptr_t)in & (format == PP_FMT_FP32R ? 3u : 1u)) return 0;
    if (format == PP_FMT_BF16) dec_bf16_stream_avx2((const uint16_t *)in, n, out);
    else if (format == PP_FMT_FP32R) dec_wide_stream_avx2(in, n, out, PP_FMT_FP32R);
    else if (format == PP_FMT_FP16 && (_mm_getcsr() & 0x1fc0u) == 0x1f80u)
        dec_wide_stream_avx2(in, n, out, PP_FMT_FP16);
    else return 0;
    return 1;
}
#define PP_DECODE_STREAM decode_stream_avx2
