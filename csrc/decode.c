/* Decode: format codes -> float32, exact (CAST_SEMANTICS.md §6). */
#include "pyprecision.h"

#include <math.h>
#include <pthread.h>

/* The reference decoder. A NaN code becomes the float32 quiet NaN with its sign, except bf16,
 * whose bits are kept (its code is the top half of a float32). fp32r ignores the 13 low bits. */
float pp_decode_one(int format, uint32_t code) {
    const pp_format_info *f = &pp_formats[format];
    if (format == 0) return pp_bits_to_f32(code << 16);
    const uint32_t sign_bit = 1u << (f->bits - 1);
    const uint32_t sign = (code & sign_bit) ? 1u : 0u;
    const uint32_t mag = (code & (sign_bit - 1u)) >> f->storage_shift;
    const int p = f->mantissa_bits;
    const uint32_t ef = mag >> p;
    const uint32_t man = mag & ((1u << p) - 1u);
    const uint32_t eall = (1u << f->exponent_bits) - 1u;
    int is_nan, is_inf;
    if (f->has_inf) {
        is_inf = ef == eall && man == 0;
        is_nan = ef == eall && man != 0;
    } else { /* e4m3fn: only the all-ones code is NaN */
        is_inf = 0;
        is_nan = mag == ((1u << (f->exponent_bits + p)) - 1u);
    }
    if (is_nan) return pp_bits_to_f32(0x7fc00000u | (sign << 31));
    if (is_inf) return pp_bits_to_f32(0x7f800000u | (sign << 31));
    double v = ef ? ldexp((double)((1u << p) + man), (int)ef - f->bias - p)
                  : ldexp((double)man, 1 - f->bias - p);
    float r = (float)v; /* exact: every code of these formats is a float32 */
    return sign ? -r : r;
}

static float tab8[3][256];
static float tab16[65536];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (int f = 3; f < 6; f++)
        for (uint32_t c = 0; c < 256; c++) tab8[f - 3][c] = pp_decode_one(f, c);
    for (uint32_t c = 0; c < 65536; c++) tab16[c] = pp_decode_one(1, c);
}

const float *pp_decode_table(int format) {
    pthread_once(&tables_once, build_tables);
    if (format == 1) return tab16;
    if (format >= 3 && format < 6) return tab8[format - 3];
    return NULL;
}

typedef struct {
    const void *bits;
    int format;
    float *dst;
    int reference;
} decode_job;

static void decode_range(void *ctx, size_t begin, size_t end) {
    const decode_job *j = ctx;
    float *restrict out = j->dst;
    if (j->reference) {
        const int bytes = pp_formats[j->format].bits / 8;
        for (size_t i = begin; i < end; i++) {
            uint32_t c = bytes == 1 ? ((const uint8_t *)j->bits)[i]
                         : bytes == 2 ? ((const uint16_t *)j->bits)[i]
                                      : ((const uint32_t *)j->bits)[i];
            out[i] = pp_decode_one(j->format, c);
        }
        return;
    }
    switch (j->format) {
    case 0: { /* bf16: the code is the top half of the float32 */
        const uint16_t *restrict in = j->bits;
        uint32_t *restrict o = (uint32_t *)out;
        for (size_t i = begin; i < end; i++) o[i] = (uint32_t)in[i] << 16;
        break;
    }
    case 2: { /* fp32r: drop the 13 low bits, quiet NaNs */
        const uint32_t *restrict in = j->bits;
        uint32_t *restrict o = (uint32_t *)out;
        for (size_t i = begin; i < end; i++) {
            const uint32_t u = in[i] & 0xffffe000u;
            const int nan = (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu);
            o[i] = nan ? (0x7fc00000u | (u & 0x80000000u)) : u;
        }
        break;
    }
    case 1: {
        const uint16_t *restrict in = j->bits;
        const float *restrict t = tab16;
        for (size_t i = begin; i < end; i++) out[i] = t[in[i]];
        break;
    }
    default: {
        const uint8_t *restrict in = j->bits;
        const float *restrict t = tab8[j->format - 3];
        for (size_t i = begin; i < end; i++) out[i] = t[in[i]];
    }
    }
}

int pp_decode(const void *bits, size_t n, int format, float *dst, int threads, int isa) {
    if (format < 0 || format >= PP_NFORMATS) return PP_EINVAL;
    if (n && (!bits || !dst)) return PP_EINVAL;
    if (isa == PP_ISA_AUTO) isa = pp_isa_auto();
    if (isa < PP_ISA_REFERENCE || isa > PP_ISA_AVX512) return PP_EINVAL;
    if (!pp_isa_supported(isa)) return PP_EUNSUPPORTED;
    if (n == 0) return PP_OK;
    pp_decode_table(1);
    decode_job j = {bits, format, dst, isa == PP_ISA_REFERENCE};
    return pp_parallel_for(n, (size_t)1 << 17, threads, decode_range, &j);
}
