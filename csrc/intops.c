/* Float -> integer with XLA semantics, and the F32 route of an integer dot (CAST_SEMANTICS.md §8). */
#include "pyprecision.h"

#include <math.h>
#include <stdlib.h>

static int int_type(int t) { return t >= PP_T_I8 && t <= PP_T_U64; }

/* The exact range of each integer type as doubles: [lo, hi_excl). All are powers of two or zero,
 * so exactly representable. */
static void int_range(int t, double *lo, double *hi_excl) {
    static const int bits[] = {8, 16, 32, 64, 8, 16, 32, 64};
    const int k = t - PP_T_I8;
    const int b = bits[k];
    if (k < 4) {
        *lo = -ldexp(1.0, b - 1);
        *hi_excl = ldexp(1.0, b - 1);
    } else {
        *lo = 0.0;
        *hi_excl = ldexp(1.0, b);
    }
}

typedef struct {
    const void *src;
    int src_type;
    void *dst;
    int dst_type;
    double lo, hi;
} f2i_job;

static void f2i_range(void *ctx, size_t begin, size_t end) {
    const f2i_job *j = ctx;
    for (size_t i = begin; i < end; i++) {
        double x = j->src_type == PP_T_F32 ? (double)((const float *)j->src)[i]
                                           : ((const double *)j->src)[i];
        /* NaN -> 0; truncate; saturate (±inf included); negative -> 0 for unsigned. */
        int sat_hi = 0, sat_lo = 0;
        double t = 0.0;
        if (!isnan(x)) {
            t = trunc(x);
            sat_hi = t >= j->hi;
            sat_lo = t < j->lo;
        }
        switch (j->dst_type) {
        case PP_T_I8: ((int8_t *)j->dst)[i] = sat_hi ? INT8_MAX : sat_lo ? INT8_MIN : (int8_t)t; break;
        case PP_T_I16: ((int16_t *)j->dst)[i] = sat_hi ? INT16_MAX : sat_lo ? INT16_MIN : (int16_t)t; break;
        case PP_T_I32: ((int32_t *)j->dst)[i] = sat_hi ? INT32_MAX : sat_lo ? INT32_MIN : (int32_t)t; break;
        case PP_T_I64: ((int64_t *)j->dst)[i] = sat_hi ? INT64_MAX : sat_lo ? INT64_MIN : (int64_t)t; break;
        case PP_T_U8: ((uint8_t *)j->dst)[i] = sat_hi ? UINT8_MAX : sat_lo ? 0 : (uint8_t)t; break;
        case PP_T_U16: ((uint16_t *)j->dst)[i] = sat_hi ? UINT16_MAX : sat_lo ? 0 : (uint16_t)t; break;
        case PP_T_U32: ((uint32_t *)j->dst)[i] = sat_hi ? UINT32_MAX : sat_lo ? 0 : (uint32_t)t; break;
        default: ((uint64_t *)j->dst)[i] = sat_hi ? UINT64_MAX : sat_lo ? 0 : (uint64_t)t; break;
        }
    }
}

int pp_float_to_int(const void *src, int src_type, size_t n, void *dst, int dst_type, int threads) {
    if (src_type != PP_T_F32 && src_type != PP_T_F64) return PP_EINVAL;
    if (!int_type(dst_type)) return PP_EINVAL;
    if (n && (!src || !dst)) return PP_EINVAL;
    if (n == 0) return PP_OK;
    f2i_job j = {src, src_type, dst, dst_type, 0.0, 0.0};
    int_range(dst_type, &j.lo, &j.hi);
    return pp_parallel_for(n, (size_t)1 << 16, threads, f2i_range, &j);
}

/* int -> float32, rounded once to nearest even (C's conversion in the default rounding mode). */
static float int_to_f32(const void *p, int t, size_t i) {
    switch (t) {
    case PP_T_I8: return (float)((const int8_t *)p)[i];
    case PP_T_I16: return (float)((const int16_t *)p)[i];
    case PP_T_I32: return (float)((const int32_t *)p)[i];
    case PP_T_I64: return (float)((const int64_t *)p)[i];
    case PP_T_U8: return (float)((const uint8_t *)p)[i];
    case PP_T_U16: return (float)((const uint16_t *)p)[i];
    case PP_T_U32: return (float)((const uint32_t *)p)[i];
    default: return (float)((const uint64_t *)p)[i];
    }
}

typedef struct {
    const void *src;
    int type;
    float *dst;
} i2f_job;

static void i2f_range(void *ctx, size_t begin, size_t end) {
    const i2f_job *j = ctx;
    for (size_t i = begin; i < end; i++) j->dst[i] = int_to_f32(j->src, j->type, i);
}

int pp_dot_f32(const float *a, const float *b, size_t m, size_t k, size_t n, float *out,
               int threads) {
    const int64_t zero = 0;
    return pp_dot(PP_T_F32, a, m * k, b, k * n, 1, &zero, &zero, m, k, n, out, threads,
                  PP_ISA_AUTO);
}

/* The integer operands converted to float32 (RNE), then the PE dot (dot.c). */
int pp_int_dot_f32(const void *a, int a_type, const void *b, int b_type, size_t m, size_t k,
                   size_t n, float *out, int threads) {
    if (!int_type(a_type) || !int_type(b_type)) return PP_EINVAL;
    if ((m && k && !a) || (k && n && !b) || (m && n && !out)) return PP_EINVAL;
    if (m == 0 || n == 0) return PP_OK;
    float *fa = malloc((m * k + k * n + 1) * sizeof(float));
    if (!fa) return PP_ENOMEM;
    float *fb = fa + m * k;
    i2f_job ja = {a, a_type, fa}, jb = {b, b_type, fb};
    int st = pp_parallel_for(m * k, (size_t)1 << 16, threads, i2f_range, &ja);
    if (!st) st = pp_parallel_for(k * n, (size_t)1 << 16, threads, i2f_range, &jb);
    if (!st) st = pp_dot_f32(fa, fb, m, k, n, out, threads);
    free(fa);
    return st;
}
