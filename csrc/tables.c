/* The reference decoder (CAST_SEMANTICS.md §6) and the decode tables built from it: the 8-bit
 * formats' 256-entry tables and fp16's 65536-entry table. A leaf: it needs only the format table,
 * and the kernels (widening narrow sources, decoding fp8) and both drivers read it. */
#include "pyprecision.h"

#include <pthread.h>

/* The reference decoder. A NaN code becomes the float32 quiet NaN with its sign, except bf16,
 * whose bits are kept (its code is the top half of a float32). fp32r ignores the 13 low bits. */
float pp_decode_one(int format, uint32_t code) {
    const pp_format_info *f = &pp_formats[format];
    if (format == PP_FMT_BF16) return pp_bits_to_f32(code << 16);
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
    /* The float32 bits, built with integers only: no floating-point operation, so neither the
     * rounding mode nor FTZ/DAZ can touch a value (fp32r subnormals are float32 subnormals). */
    uint32_t bits;
    if (ef) {
        bits = ((ef - (uint32_t)f->bias + 127u) << 23) | (man << (23 - p));
    } else if (!man) {
        bits = 0;
    } else {
        const int k = 31 - __builtin_clz(man); /* the leading bit: value = man * 2^(1-bias-p) */
        const int e = k + 1 - f->bias - p + 127; /* biased float32 exponent */
        bits = e >= 1 ? ((uint32_t)e << 23) | ((man << (23 - k)) & 0x7fffffu)
                      : man << (150 - f->bias - p);
    }
    return pp_bits_to_f32(bits | (sign << 31));
}

#define PP_NFP8 (PP_FMT_FP8E5 - PP_FMT_FP8E4 + 1)
static float tab8[PP_NFP8][256];
static float tab16[65536];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (int f = PP_FMT_FP8E4; f <= PP_FMT_FP8E5; f++)
        for (uint32_t c = 0; c < 256; c++) tab8[f - PP_FMT_FP8E4][c] = pp_decode_one(f, c);
    for (uint32_t c = 0; c < 65536; c++) tab16[c] = pp_decode_one(PP_FMT_FP16, c);
}

const float *pp_decode_table(int format) {
    pthread_once(&tables_once, build_tables);
    if (format == PP_FMT_FP16) return tab16;
    if (pp_format_is_fp8(format)) return tab8[format - PP_FMT_FP8E4];
    return NULL;
}
