/* The fast float32 -> format kernels. Included once per instruction set by kern_*.c with KSUF
 * defined; the compiler vectorizes the loops for that set. The arithmetic is pp_round_exact's
 * specialized to a float32 source (24-bit significand, 32-bit lanes) and made branch-free:
 *
 *   m, E   significand with hidden bit and unbiased exponent (a float32 subnormal has E = -126)
 *   sf     bits of m below the result's quantum: 23 - p, plus (emin - E) for subnormal results
 *   K      m >> sf rounded: the kept multiple of the quantum (rem = the dropped bits)
 *   code   (max(E + bias - 1, 0) << p) + K: a carry out of the mantissa moves to the exponent
 *
 * The shift is clamped to 31 (C forbids 32): from sf >= 25 on, K = 0 and rem = m < half, which
 * is what the unclamped arithmetic gives. Stochastic rounding needs floor(rem * 2^(32 - sf)) from
 * the unclamped sf, computed separately. Specials are selected last.
 */
#define PP_CAT_(a, b) a##b
#define PP_CAT(a, b) PP_CAT_(a, b)

static inline __attribute__((always_inline)) uint32_t PP_CAT(enc_lane_, KSUF)(
    uint32_t u, uint32_t r, const int mode, const pp_params *pr) {
    const int32_t p = pr->p;
    const uint32_t sign = u >> 31;
    const uint32_t a = u & 0x7fffffffu;
    const uint32_t eb = a >> 23;
    const uint32_t frac = a & 0x7fffffu;
    const uint32_t m = frac | (eb ? 0x800000u : 0u);
    const int32_t E = (int32_t)(eb ? eb : 1u) - 127;
    const int32_t d = pr->emin - E;
    const int32_t sf = 23 - p + (d > 0 ? d : 0);
    const uint32_t s = (uint32_t)(sf < 31 ? sf : 31);
    const uint32_t half = 1u << (s - 1u);
    uint32_t K;
    if (mode == PP_RNE) {
        /* m + (half - 1) + lsb carries into the kept bits iff rem > half, or rem == half and
         * the kept lsb is odd (cannot overflow: m < 2^24, half <= 2^30). */
        K = (m + (half - 1u) + ((m >> s) & 1u)) >> s;
    } else if (mode == PP_RNA) {
        K = (m + half) >> s;
    } else if (mode == PP_RTZ) {
        K = m >> s;
    } else {
        const uint32_t rem = m & ((1u << s) - 1u);
        const int32_t t = sf - 32;
        const uint32_t thr = sf <= 32 ? rem << (uint32_t)(32 - sf) : m >> (uint32_t)(t < 31 ? t : 31);
        K = (m >> s) + (uint32_t)(r < thr);
    }
    const int32_t ef = E + pr->bias - 1;
    const uint32_t code = ((uint32_t)(ef > 0 ? ef : 0) << p) + K;
    const uint32_t neg = 0u - sign; /* all ones for a negative input */
    uint32_t res = (code << pr->shift) | (pr->sign_bit & neg);
    const uint32_t ovf = (pr->ovf[0] & ~neg) | (pr->ovf[1] & neg);
    const uint32_t nan = (pr->nan[0] & ~neg) | (pr->nan[1] & neg);
    const uint32_t inf = (pr->inf[0] & ~neg) | (pr->inf[1] & neg);
    res = code > pr->maxc ? ovf : res;
    const uint32_t special = frac ? nan : inf;
    return eb == 0xffu ? special : res;
}

#define PP_DEFINE_ENC(NAME, OUT_T)                                                                 \
    static void PP_CAT(NAME, KSUF)(const pp_params *pr, const uint32_t *restrict src, size_t n,    \
                                   const uint32_t *restrict rnd, void *dst_) {                     \
        OUT_T *restrict dst = (OUT_T *)dst_;                                                       \
        const pp_params prl = *pr;                                                                 \
        switch (prl.rounding) {                                                                    \
        case PP_RNE:                                                                               \
            for (size_t i = 0; i < n; i++)                                                         \
                dst[i] = (OUT_T)PP_CAT(enc_lane_, KSUF)(src[i], 0u, PP_RNE, &prl);                 \
            break;                                                                                 \
        case PP_RTZ:                                                                               \
            for (size_t i = 0; i < n; i++)                                                         \
                dst[i] = (OUT_T)PP_CAT(enc_lane_, KSUF)(src[i], 0u, PP_RTZ, &prl);                 \
            break;                                                                                 \
        case PP_RNA:                                                                               \
            for (size_t i = 0; i < n; i++)                                                         \
                dst[i] = (OUT_T)PP_CAT(enc_lane_, KSUF)(src[i], 0u, PP_RNA, &prl);                 \
            break;                                                                                 \
        default:                                                                                   \
            for (size_t i = 0; i < n; i++)                                                         \
                dst[i] = (OUT_T)PP_CAT(enc_lane_, KSUF)(src[i], rnd[i], PP_STOCHASTIC, &prl);      \
            break;                                                                                 \
        }                                                                                          \
    }

PP_DEFINE_ENC(enc8_, uint8_t)
PP_DEFINE_ENC(enc16_, uint16_t)
PP_DEFINE_ENC(enc32_, uint32_t)

const pp_kernel_set PP_CAT(pp_kernels_, KSUF) = {
    PP_CAT(enc8_, KSUF), PP_CAT(enc16_, KSUF), PP_CAT(enc32_, KSUF)};
