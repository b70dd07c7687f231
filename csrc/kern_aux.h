/* The fast kernels, part 2: widening of other sources, the stochastic-rounding words, decode,
 * streaming copy. Included
 * by kern_body.h (same instruction-set context, same PP_K naming); see its header comment. */

/* ---- widening of other sources, exactly ---- */

/* float16 bits -> float32 bits. A subnormal m * 2^-24 is (float)m times a power of two: exact,
 * normal. NaN payloads are kept (the encoders only ask whether the fraction is nonzero). */
PP_INLINE uint32_t PP_K(f16_to_f32_)(uint32_t h) {
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t a = h & 0x7fffu;
    const uint32_t normal = (a << 13) + (UINT32_C(112) << 23);
    const uint32_t special = (a << 13) | 0x7f800000u;
    const uint32_t sub = pp_f32_to_bits((float)(int32_t)(a & 0x3ffu) * 0x1p-24f);
    /* selections by masks: a float operation under a condition would not be if-converted */
    const uint32_t is_sub = 0u - (uint32_t)(a < 0x400u);
    const uint32_t is_special = 0u - (uint32_t)(a >= 0x7c00u);
    uint32_t v = (normal & ~is_sub) | (sub & is_sub);
    v = (v & ~is_special) | (special & is_special);
    return v | sign;
}

/* Source elements [0, n) of type t (a narrow float or an integer of at most 16 bits) as exact
 * float32 bits. */
static void PP_K(widen32_)(int t, const void *src, size_t n, uint32_t *restrict out) {
    switch (t) {
    case PP_T_BF16: {
        const uint16_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = (uint32_t)s[i] << 16;
        break;
    }
    case PP_T_F16: {
        const uint16_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = PP_K(f16_to_f32_)(s[i]);
        break;
    }
    case PP_T_FP8E4:
    case PP_T_FP8E4M3FN:
    case PP_T_FP8E5: {
        const uint8_t *restrict s = src;
        const uint32_t *restrict tab = (const uint32_t *)pp_decode_table(pp_format_of_type(t));
        for (size_t i = 0; i < n; i++) out[i] = tab[s[i]];
        break;
    }
    case PP_T_I8: {
        const int8_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = pp_f32_to_bits((float)s[i]);
        break;
    }
    case PP_T_U8: {
        const uint8_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = pp_f32_to_bits((float)(int32_t)s[i]);
        break;
    }
    case PP_T_I16: {
        const int16_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = pp_f32_to_bits((float)s[i]);
        break;
    }
    default: { /* PP_T_U16 */
        const uint16_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = pp_f32_to_bits((float)(int32_t)s[i]);
        break;
    }
    }
}

/* 32- and 64-bit integers as float64 bits. Exact for |v| <= 2^53 (every 32-bit integer); returns
 * nonzero when some element is larger, and the caller converts those with the reference. */
static int PP_K(widen64_)(int t, const void *src, size_t n, uint64_t *restrict out) {
    uint64_t big = 0;
    switch (t) {
    case PP_T_I32: {
        const int32_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = pp_f64_to_bits((double)s[i]);
        break;
    }
    case PP_T_U32: {
        const uint32_t *restrict s = src;
        for (size_t i = 0; i < n; i++) out[i] = pp_f64_to_bits((double)(int64_t)s[i]);
        break;
    }
    case PP_T_I64: {
        const int64_t *restrict s = src;
        for (size_t i = 0; i < n; i++) {
            const uint64_t v = (uint64_t)s[i];
            big |= (uint64_t)((v + PP_2P53) > 2 * PP_2P53);
            /* two exact halves: hi is a multiple of 2^32 below 2^53 in magnitude when not big */
            const int64_t hi = (int64_t)(v & UINT64_C(0xffffffff00000000));
            out[i] = pp_f64_to_bits((double)(int32_t)(hi >> 32) * 0x1p32 + (double)(uint32_t)v);
        }
        break;
    }
    default: { /* PP_T_U64 */
        const uint64_t *restrict s = src;
        for (size_t i = 0; i < n; i++) {
            const uint64_t v = s[i];
            big |= (uint64_t)(v > PP_2P53);
            out[i] = pp_f64_to_bits((double)(int32_t)(uint32_t)(v >> 32) * 0x1p32 +
                                    (double)(uint32_t)v);
        }
        break;
    }
    }
    return big != 0;
}

/* ---- the stochastic-rounding words (srwords.c is the definition) ---- */

/* Words for element indices [first, first + n), as pp_sr_words_ref: one SplitMix64 output per
 * pair of elements (low half to the even index). An odd first index takes the high half of its
 * pair alone; then whole pairs, with the set's vector generator where it has one (kern_avx2.c /
 * kern_avx512.c: PP_SRW_VEC writes PP_SRW_WORDS words from pair index j on). */
static void PP_K(sr_words_)(uint64_t seed, uint64_t first, size_t n, uint32_t *restrict out) {
    size_t i = 0;
    if (n && (first & 1u)) {
        out[0] = (uint32_t)(pp_splitmix64(seed, first >> 1) >> 32);
        i = 1;
    }
    uint64_t j = (first + i) >> 1;
#ifdef PP_SRW_VEC
    for (; i + PP_SRW_WORDS <= n; i += PP_SRW_WORDS, j += PP_SRW_WORDS / 2)
        PP_SRW_VEC(seed, j, out + i);
#endif
    for (; i + 2 <= n; i += 2, j++) {
        const uint64_t z = pp_splitmix64(seed, j);
        out[i] = (uint32_t)z;
        out[i + 1] = (uint32_t)(z >> 32);
    }
    if (i < n) out[i] = (uint32_t)pp_splitmix64(seed, j);
}

/* ---- decode (pp_decode_one is the definition) ---- */

/* 8-bit codes of an fp8 format and fp16 codes: the same arithmetic as f16_to_f32 with the
 * format's constants; subnormals are (float)man times a power of two (exact, normal). */
PP_INLINE uint32_t PP_K(dec_small_)(uint32_t c, uint32_t sbit, uint32_t p, uint32_t bias_adj,
                                    uint32_t infm, uint32_t infv, float scale) {
    const uint32_t sign = (c & sbit) << (sbit == 0x80u ? 24 : 16);
    const uint32_t mag = c & (sbit - 1u);
    const uint32_t normal = (mag << (23 - p)) + (bias_adj << 23);
    const uint32_t sub = pp_f32_to_bits((float)(int32_t)(mag & ((1u << p) - 1u)) * scale);
    /* selections by masks: a float operation under a condition would not be if-converted */
    const uint32_t is_sub = 0u - (uint32_t)((mag >> p) == 0u);
    const uint32_t is_inf = 0u - (uint32_t)(mag == infm);
    const uint32_t is_nan = 0u - (uint32_t)(mag > infm);
    uint32_t v = (normal & ~is_sub) | (sub & is_sub);
    v = (v & ~is_inf) | (infv & is_inf);
    v = (v & ~is_nan) | (0x7fc00000u & is_nan);
    return v | sign;
}

static void PP_K(decode_)(int format, const void *bits, size_t n, uint32_t *restrict out) {
#ifdef PP_DECODE8
    if (pp_format_is_fp8(format)) {
        PP_DECODE8(format, bits, n, out); /* the set's own 8-bit decoder */
        return;
    }
#endif
    switch (format) {
    case PP_FMT_BF16: {
        const uint16_t *restrict in = bits;
        for (size_t i = 0; i < n; i++) out[i] = (uint32_t)in[i] << 16;
        break;
    }
    case PP_FMT_FP16: {
#ifdef PP_DECODE16
        if (PP_DECODE16(bits, n, out)) break; /* the set's conversion instruction, where exact */
#endif
        const uint16_t *restrict in = bits;
        for (size_t i = 0; i < n; i++)
            out[i] = PP_K(dec_small_)(in[i], 0x8000u, 10, 112, 0x7c00u, 0x7f800000u, 0x1p-24f);
        break;
    }
    case PP_FMT_FP32R: {
        const uint32_t *restrict in = bits;
        for (size_t i = 0; i < n; i++) {
            const uint32_t u = in[i] & 0xffffe000u;
            const uint32_t a = u & 0x7fffffffu;
            out[i] = a > 0x7f800000u ? (0x7fc00000u | (u & 0x80000000u)) : u;
        }
        break;
    }
    case PP_FMT_FP8E4: {
        const uint8_t *restrict in = bits;
        for (size_t i = 0; i < n; i++)
            out[i] = PP_K(dec_small_)(in[i], 0x80u, 3, 120, 0x78u, 0x7f800000u, 0x1p-9f);
        break;
    }
    case PP_FMT_FP8E4M3FN: {
        const uint8_t *restrict in = bits;
        for (size_t i = 0; i < n; i++)
            out[i] = PP_K(dec_small_)(in[i], 0x80u, 3, 120, 0x7fu, 0x7fc00000u, 0x1p-9f);
        break;
    }
    default: { /* PP_FMT_FP8E5 */
        const uint8_t *restrict in = bits;
        for (size_t i = 0; i < n; i++)
            out[i] = PP_K(dec_small_)(in[i], 0x80u, 2, 112, 0x7cu, 0x7f800000u, 0x1p-16f);
        break;
    }
    }
}

/* ---- streaming (non-temporal) copy of a finished block to its destination ---- */

static void PP_K(stream_)(void *dst_, const void *src_, size_t bytes) {
#ifdef PP_VBYTES
    char *dst = dst_;
    const char *src = src_;
    size_t head = (size_t)(-(uintptr_t)dst & (PP_VBYTES - 1));
    if (head > bytes) head = bytes;
    memcpy(dst, src, head);
    size_t i = head;
    for (; i + PP_VBYTES <= bytes; i += PP_VBYTES) PP_STREAM(dst + i, src + i);
    memcpy(dst + i, src + i, bytes - i);
#else
    memcpy(dst_, src_, bytes);
#endif
}

static void PP_K(sfence_)(void) {
#ifdef PP_VBYTES
    PP_SFENCE();
#endif
}

