/* The fast kernels. Included once per instruction set by kern_*.c with KSUF defined (and, where
 * the set has them, PP_VBYTES / PP_STREAM / PP_SFENCE for streaming stores); the compiler
 * vectorizes the loops for that set. No floating-point arithmetic that could round: every float
 * operation below is exact (small integers to float, products by powers of two with normal
 * results), so neither MXCSR's rounding mode nor FTZ/DAZ can change a result.
 *
 * The encoders are pp_round_exact specialized to one source width and made branch-free:
 *
 *   m, E   significand with hidden bit and unbiased exponent (a subnormal source has E = emin_src)
 *   sf     bits of m below the result's quantum: (source p) - p, plus (emin - E) for subnormals
 *   K      m >> sf rounded: the kept multiple of the quantum (rem = the dropped bits)
 *   code   (max(E + bias - 1, 0) << p) + K: a carry out of the mantissa moves to the exponent
 *
 * The shift is clamped to lane width - 1 (C forbids the full width): from there on K = 0 and
 * rem = m < half, which is what the unclamped arithmetic gives. Stochastic rounding needs
 * floor(rem * 2^(32 - sf)) from the unclamped sf, computed separately. Specials are selected last.
 */
#define PP_CAT_(a, b) a##b
#define PP_CAT(a, b) PP_CAT_(a, b)
#define PP_K(name) PP_CAT(name, KSUF)
#define PP_INLINE static inline __attribute__((always_inline))

/* ---- encoders: one lane, two paths ----
 *
 * Normal results (|x| >= the format's min normal): the source bits a = |x| with the exponent
 * rebiased to the format, shifted right by s0 = (source p) - p, with the rounding increment added
 * first so that a carry moves into the exponent (and past max, where the overflow test sees it).
 * Subnormal results (and zero): m * 2^E rounded at the format's fixed quantum 2^(emin - p), by a
 * variable shift sh = s0 + (emin - E); or, for rne with the default floating-point environment,
 * by adding D = 2^(emin - p + source p), whose ulp is that quantum, in hardware (exact: the FPU
 * rounds to nearest even; DAZ can only zero inputs whose result is 0 anyway; the sum is normal).
 * Overflow, infinities and NaNs are selected last, from complete results that carry the sign
 * where the policy keeps it (pp_params ovf/inf/nan).
 */

#define PP_LANE(NAME, UT, ST, SRC_P, SRC_BIAS, EXP_SH, ABS, INF, FRAC, HID, ONE, FT, FBITS, TOBITS)           \
    PP_INLINE uint32_t PP_K(NAME)(UT u, uint32_t r, const int mode, const int has_sub,             \
                                  const int magic, const int simple, const int wide,               \
                                  const pp_params *pr) {                                           \
        const UT p = (UT)pr->p;                                                                    \
        const UT s0 = SRC_P - p;                                                                   \
        const UT a = u & ABS;                                                                      \
        const UT rebias = (UT)(ST)(pr->bias - SRC_BIAS) << SRC_P; /* mod 2^width */\
        const UT half0 = (UT)ONE << (s0 - 1);                                                      \
        UT code;                                                                                   \
        if (mode == PP_RNE) code = (a + rebias + (half0 - 1) + ((a >> s0) & 1)) >> s0;             \
        else if (mode == PP_RNA) code = (a + rebias + half0) >> s0;                                \
        else if (mode == PP_RTZ) code = (a + rebias) >> s0;                                        \
        else {                                                                                     \
            const UT sl = s0 <= 32 ? 32 - s0 : 0, sr = s0 > 32 ? s0 - 32 : 0;                      \
            const UT thr = ((a & ((half0 << 1) - 1)) << sl) >> sr;                                 \
            code = ((a + rebias) >> s0) + (UT)((UT)r < thr);                                       \
        }                                                                                          \
        if (has_sub) {                                                                             \
            const UT eb = a >> SRC_P;                                                              \
            const UT minnorm = (UT)(pr->emin + SRC_BIAS) << SRC_P;                            \
            UT sub;                                                                                \
            if (mode == PP_RNE && magic) {                                                         \
                const UT dbits =                                                                   \
                    (UT)(pr->emin - pr->p + SRC_P + SRC_BIAS) << SRC_P;                           \
                sub = TOBITS(FBITS(a) + FBITS(dbits)) - dbits;                                     \
            } else {                                                                               \
                const UT m = (a & FRAC) | (eb ? HID : 0);                                          \
                /* sf > s0 on the lanes this path is for; clamped so that the others (whose   \
                 * result is dropped) shift by valid amounts too */                          \
                const ST sf0 = (ST)s0 + (ST)pr->emin + SRC_BIAS - (ST)(eb ? eb : 1);       \
                const ST sf = sf0 > (ST)s0 ? sf0 : (ST)s0 + 1;                             \
                const UT sh = (UT)(sf < EXP_SH - 1 ? sf : EXP_SH - 1);                             \
                /* t: the kept bits and the rounding bit; sticky: anything below it (no    \
                 * variable shift of a constant: not vectorized in 64-bit lanes) */          \
                const UT t = m >> (sh - 1);                                                    \
                const UT K = t >> 1;                                                           \
                if (mode == PP_RNE) {                                                              \
                    const UT sticky = (UT)((t << (sh - 1)) != m);                                  \
                    sub = K + (t & 1 & (sticky | K));                                              \
                } else if (mode == PP_RNA) {                                                       \
                    sub = K + (t & 1);                                                             \
                } else if (mode == PP_RTZ) {                                                       \
                    sub = K;                                                                       \
                } else {                                                                           \
                    const UT rem = m - (K << sh);                                                  \
                    const ST tt = sf - 32;                                                         \
                    const UT thr = sf <= 32 ? rem << (UT)(32 - sf)                                 \
                                            : rem >> (UT)(tt < EXP_SH - 1 ? tt : EXP_SH - 1);      \
                    sub = K + (UT)((UT)r < thr);                                                   \
                }                                                                                  \
            }                                                                                      \
            const UT is_sub = (UT)0 - (UT)(a < minnorm);                                           \
            code = (code & ~is_sub) | (sub & is_sub);                                              \
        }                                                                                          \
        const uint32_t sg = (uint32_t)(u >> (EXP_SH - 1)) << (pr->sign_pos);                       \
        const uint32_t mag = wide ? (uint32_t)code << pr->shift : (uint32_t)code;                  \
        if (simple) {                                                                              \
            /* every special keeps the sign; 1: inf gives the overflow result (pr->simple) */      \
            uint32_t v = code > (UT)pr->maxc ? pr->ovf[0] : mag;                                   \
            if (simple == 2) v = a == INF ? pr->inf[0] : v;                                        \
            v = a > INF ? pr->nan[0] : v;                                                          \
            return v | sg;                                                                         \
        }                                                                                          \
        uint32_t res = mag | sg;                                                                   \
        res = code > (UT)pr->maxc ? pr->ovf[0] | (sg & pr->dovf) : res;                            \
        const uint32_t special = a == INF ? pr->inf[0] | (sg & pr->dinf)                           \
                                          : pr->nan[0] | (sg & pr->dnan);                          \
        return a >= INF ? special : res;                                                           \
    }

PP_LANE(lane32_, uint32_t, int32_t, 23, 127, 32, 0x7fffffffu, 0x7f800000u, 0x7fffffu, 0x800000u, 1u,
        float, pp_bits_to_f32, pp_f32_to_bits)
PP_LANE(lane64_, uint64_t, int64_t, 52, 1023, 64, UINT64_C(0x7fffffffffffffff),
        UINT64_C(0x7ff0000000000000), UINT64_C(0xfffffffffffff), UINT64_C(0x10000000000000),
        UINT64_C(1), double, pp_bits_to_f64, pp_f64_to_bits)

/* One loop per (source width, output width, rounding, subnormal path, magic, simple specials):
 * all constants, so each loop is branch-free and carries only the work its case needs.
 *
 * Software prefetch: with PP_PREFETCH_LANES > 0 (bytes ahead; the set defines it, 0 or undefined:
 * none) the loop runs in steps of 128 bytes of input, each step prefetching the two cache lines
 * that far ahead (T0) and then converting its elements in an inner loop of constant length that
 * the compiler vectorizes and unrolls; the rest of the elements after the last whole step. Only
 * the order of loads changes, never a result (docs/decisions/speed.md S15). */
#define PP_LOOP_BODY(LANE, OUT_T, MODE, SUB, MAGIC, SIMPLE, I)                                     \
    dst[I] = (OUT_T)PP_K(LANE)(src[I], (MODE) == PP_STOCHASTIC ? rnd[I] : 0u, MODE, SUB, MAGIC,    \
                               SIMPLE, sizeof(OUT_T) == 4, &prl)
#if defined(PP_PREFETCH_LANES) && PP_PREFETCH_LANES > 0
#ifndef PP_PREFETCH_STEP
#define PP_PREFETCH_STEP 256 /* bytes of input per step: one prefetch per cache line */
#endif
#define PP_LOOP(LANE, IN_T, OUT_T, MODE, SUB, MAGIC, SIMPLE)                                       \
    do {                                                                                           \
        enum { step_ = PP_PREFETCH_STEP / sizeof(IN_T) };                                          \
        size_t i0 = 0;                                                                             \
        for (; i0 + step_ <= n; i0 += step_) {                                                     \
            for (int l_ = 0; l_ < PP_PREFETCH_STEP / 64; l_++)                                     \
                __builtin_prefetch((const char *)(src + i0) + PP_PREFETCH_LANES + 64 * l_, 0, 3);  \
            for (size_t i = i0; i < i0 + step_; i++)                                               \
                PP_LOOP_BODY(LANE, OUT_T, MODE, SUB, MAGIC, SIMPLE, i);                            \
        }                                                                                          \
        for (size_t i = i0; i < n; i++) PP_LOOP_BODY(LANE, OUT_T, MODE, SUB, MAGIC, SIMPLE, i);    \
    } while (0)
#else
#define PP_LOOP(LANE, IN_T, OUT_T, MODE, SUB, MAGIC, SIMPLE)                                       \
    for (size_t i = 0; i < n; i++) PP_LOOP_BODY(LANE, OUT_T, MODE, SUB, MAGIC, SIMPLE, i)
#endif

#define PP_LOOPS(LANE, IN_T, OUT_T, MODE, SUB, MAGIC)                                              \
    do {                                                                                           \
        if (prl.simple == 1) PP_LOOP(LANE, IN_T, OUT_T, MODE, SUB, MAGIC, 1);                      \
        else if (prl.simple == 2) PP_LOOP(LANE, IN_T, OUT_T, MODE, SUB, MAGIC, 2);                 \
        else PP_LOOP(LANE, IN_T, OUT_T, MODE, SUB, MAGIC, 0);                                      \
    } while (0)

#define PP_DEFINE_ENC(NAME, IN_T, LANE, OUT_T)                                                     \
    static void PP_K(NAME)(const pp_params *pr, const void *src_, size_t n,                        \
                           const uint32_t *restrict rnd, void *dst_) {                             \
        const IN_T *restrict src = (const IN_T *)src_;                                             \
        OUT_T *restrict dst = (OUT_T *)dst_;                                                       \
        const pp_params prl = *pr;                                                                 \
        const int sub = prl.has_sub;                                                               \
        switch (prl.rounding) {                                                                    \
        case PP_RNE:                                                                               \
            if (!sub) PP_LOOPS(LANE, IN_T, OUT_T, PP_RNE, 0, 0);                                   \
            else if (prl.fp_default) PP_LOOPS(LANE, IN_T, OUT_T, PP_RNE, 1, 1);                    \
            else PP_LOOPS(LANE, IN_T, OUT_T, PP_RNE, 1, 0);                                        \
            break;                                                                                 \
        case PP_RTZ:                                                                               \
            if (!sub) PP_LOOPS(LANE, IN_T, OUT_T, PP_RTZ, 0, 0);                                   \
            else PP_LOOPS(LANE, IN_T, OUT_T, PP_RTZ, 1, 0);                                        \
            break;                                                                                 \
        case PP_RNA:                                                                               \
            if (!sub) PP_LOOPS(LANE, IN_T, OUT_T, PP_RNA, 0, 0);                                   \
            else PP_LOOPS(LANE, IN_T, OUT_T, PP_RNA, 1, 0);                                        \
            break;                                                                                 \
        default:                                                                                   \
            if (!sub) PP_LOOPS(LANE, IN_T, OUT_T, PP_STOCHASTIC, 0, 0);                            \
            else PP_LOOPS(LANE, IN_T, OUT_T, PP_STOCHASTIC, 1, 0);                                 \
            break;                                                                                 \
        }                                                                                          \
    }

PP_DEFINE_ENC(enc8i_, uint32_t, lane32_, uint8_t)
PP_DEFINE_ENC(enc16i_, uint32_t, lane32_, uint16_t)

/* float32 -> 8-bit codes: the set's hand-written kernel where it has one for the case (AVX-512,
 * and AVX2 with FMA: the fp8 formats under rne, rtz and rna; it returns how many it did). */
static void PP_K(enc8_)(const pp_params *pr, const void *src, size_t n, const uint32_t *rnd,
                        void *dst) {
    size_t done = 0;
#ifdef PP_RNE_FAST
    done = PP_RNE_FAST(pr, (const uint32_t *)src, n, dst, 1);
#endif
    PP_K(enc8i_)(pr, (const uint32_t *)src + done, n - done, rnd ? rnd + done : rnd,
                 (uint8_t *)dst + done);
}

/* float32 -> 16-bit codes. Where the set has F16C and the call allows it (pr->hw_fp16: fp16, rne,
 * rtz or rna, no saturation, ml_dtypes NaNs, this thread's MXCSR exactly the default), the
 * hardware converts: with the rounding given in the instruction (nearest even or toward zero; rna:
 * |x| + ulp/2 truncated first, kern_avx512.c f16c16_avx512), FTZ and DAZ off, it rounds every
 * non-NaN input exactly as the reference; NaNs are first made the quiet NaN with their sign,
 * which converts to the policy's 0x7e00 | sign. Otherwise the integer kernel. */
static void PP_K(enc16_)(const pp_params *pr, const void *src, size_t n, const uint32_t *rnd,
                         void *dst) {
#ifdef PP_F16C
    if (pr->hw_fp16) {
        PP_F16C(pr, (const uint32_t *)src, n, (uint16_t *)dst);
        return;
    }
#endif
    size_t done = 0;
#ifdef PP_RNE_FAST
    done = PP_RNE_FAST(pr, (const uint32_t *)src, n, dst, 2);
#endif
    PP_K(enc16i_)(pr, (const uint32_t *)src + done, n - done, rnd ? rnd + done : rnd,
                  (uint16_t *)dst + done);
}
PP_DEFINE_ENC(enc32i_, uint32_t, lane32_, uint32_t)

/* float32 -> 32-bit codes (fp32r): the set's dedicated kernel where it has one for the case (AVX2
 * and AVX-512: rne, rtz and rna; it returns how many it did), else the lanes. */
static void PP_K(enc32_)(const pp_params *pr, const void *src, size_t n, const uint32_t *rnd,
                         void *dst) {
    size_t done = 0;
#ifdef PP_FP32R_FAST
    done = PP_FP32R_FAST(pr, (const uint32_t *)src, n, (uint32_t *)dst);
#endif
    PP_K(enc32i_)(pr, (const uint32_t *)src + done, n - done, rnd ? rnd + done : rnd,
                  (uint32_t *)dst + done);
}
PP_DEFINE_ENC(enc64to8_, uint64_t, lane64_, uint8_t)
PP_DEFINE_ENC(enc64to16_, uint64_t, lane64_, uint16_t)
PP_DEFINE_ENC(enc64to32_, uint64_t, lane64_, uint32_t)

#include "kern_aux.h"

#ifndef PP_ENC_STREAM
static int PP_K(enc_stream_)(const pp_params *pr, const uint32_t *src, size_t n, void *dst,
                             int out_bytes) {
    (void)pr, (void)src, (void)n, (void)dst, (void)out_bytes;
    return 0; /* no direct streaming encoder in this set */
}
#define PP_ENC_STREAM PP_K(enc_stream_)
#endif

#ifndef PP_DECODE_STREAM
static int PP_K(decode_stream_)(int format, const void *bits, size_t n, uint32_t *out) {
    (void)format, (void)bits, (void)n, (void)out;
    return 0; /* no direct streaming decoder in this set */
}
#define PP_DECODE_STREAM PP_K(decode_stream_)
#endif

#ifndef PP_SR_FUSED
static size_t PP_K(sr_fused_)(const pp_params *pr, int f64, const void *src, size_t n,
                              const uint32_t *rnd, uint64_t seed, uint64_t first, void *dst,
                              int out_bytes, int stream) {
    (void)pr, (void)f64, (void)src, (void)n, (void)rnd, (void)seed, (void)first, (void)dst;
    (void)out_bytes, (void)stream;
    return 0; /* no fused stochastic kernel in this set: the lanes above, words from a buffer */
}
#define PP_SR_FUSED PP_K(sr_fused_)
#endif

#ifndef PP_NARROW64
static int PP_K(narrow64_)(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                           void *dst, int out_bytes, int stream) {
    (void)pr, (void)src, (void)n, (void)buf, (void)dst, (void)out_bytes, (void)stream;
    return 0; /* no round-to-odd narrowing in this set: float64 sources take the 64-bit lanes */
}
#define PP_NARROW64 PP_K(narrow64_)
#endif

#ifndef PP_NARROW_I32
static int PP_K(narrow_i32_)(const pp_params *pr, const void *src, size_t n, uint32_t *buf,
                             void *dst, int out_bytes, int stream) {
    (void)pr, (void)src, (void)n, (void)buf, (void)dst, (void)out_bytes, (void)stream;
    return 0; /* no int32 narrowing in this set: int32 sources take the 64-bit lanes */
}
#define PP_NARROW_I32 PP_K(narrow_i32_)
#endif

const pp_kernel_set PP_K(pp_kernels_) = {
    {PP_K(enc8_), PP_K(enc16_), PP_K(enc32_)},
    {PP_K(enc64to8_), PP_K(enc64to16_), PP_K(enc64to32_)},
    PP_K(widen32_),
    PP_K(widen64_),
    PP_K(sr_words_),
    PP_K(decode_),
    PP_DECODE_STREAM,
    PP_ENC_STREAM,
    PP_K(stream_),
    PP_K(sfence_),
    PP_SR_FUSED,
    PP_NARROW64,
    PP_NARROW_I32,
};
