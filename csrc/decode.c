/* Decode: format codes -> float32, exact (CAST_SEMANTICS.md §6). */
#include "pyprecision.h"

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
    const pp_kernel_set *ks; /* NULL: the reference decoder */
    int stream;
} decode_job;

#define PP_DBLOCK 2048

static void decode_range(void *ctx, size_t begin, size_t end) {
    const decode_job *j = ctx;
    float *restrict out = j->dst;
    const int bytes = pp_formats[j->format].bits / 8;
    if (!j->ks) {
        for (size_t i = begin; i < end; i++) {
            uint32_t c = bytes == 1 ? ((const uint8_t *)j->bits)[i]
                         : bytes == 2 ? ((const uint16_t *)j->bits)[i]
                                      : ((const uint32_t *)j->bits)[i];
            out[i] = pp_decode_one(j->format, c);
        }
        return;
    }
    if (j->stream && j->ks->decode_stream(j->format, (const char *)j->bits + begin * (size_t)bytes,
                                          end - begin, (uint32_t *)(out + begin))) {
        j->ks->sfence();
        return;
    }
    _Alignas(64) uint32_t obuf[PP_DBLOCK];
    for (size_t b = begin; b < end; b += PP_DBLOCK) {
        const size_t n = end - b < PP_DBLOCK ? end - b : PP_DBLOCK;
        const char *in = (const char *)j->bits + b * (size_t)bytes;
        if (j->stream) {
            j->ks->decode(j->format, in, n, obuf);
            j->ks->stream(out + b, obuf, n * sizeof(float));
        } else {
            j->ks->decode(j->format, in, n, (uint32_t *)(out + b));
        }
    }
    if (j->stream) j->ks->sfence();
}

int pp_decode(const void *bits, size_t n, int format, float *dst, int threads, int isa) {
    if (format < 0 || format >= PP_NFORMATS) return PP_EINVAL;
    if (n && (!bits || !dst)) return PP_EINVAL;
    if (isa == PP_ISA_AUTO) isa = pp_isa_auto();
    if (isa < PP_ISA_REFERENCE || isa > PP_ISA_AVX512) return PP_EINVAL;
    if (!pp_isa_supported(isa)) return PP_EUNSUPPORTED;
    if (n == 0) return PP_OK;
    decode_job j = {bits, format, dst, pp_kernels_for(isa), 0};
    j.stream = j.ks != NULL && pp_use_streaming(n * (size_t)(pp_formats[format].bits / 8 + 4));
    return pp_parallel_for(n, (size_t)1 << 17, threads, decode_range, &j);
}
