/* The PE dot's register tiles in plain C (every CPU; the compiler may vectorise the column loops,
 * which keeps each element's order: every column is its own sum). Same contract as
 * csrc/dot_kern.h. */
#include "pyprecision.h"

#define DP_MR 4
#define DP_NR 16

#define DP_KERNEL(NAME, T, CANON)                                                                  \
    static void NAME(size_t kc, const void *a_, size_t lda, const void *bp_, void *c_,            \
                     size_t ldc, int mr, int nr, int flags) {                                      \
        const T *a = a_, *bp = bp_;                                                                \
        T *c = c_;                                                                                 \
        const T *ar[DP_MR];                                                                        \
        T acc[DP_MR][DP_NR];                                                                       \
        for (int r = 0; r < DP_MR; r++) {                                                          \
            ar[r] = a + (size_t)(r < mr ? r : 0) * lda;                                            \
            for (int j = 0; j < DP_NR; j++)                                                        \
                acc[r][j] = ((flags & PP_DOT_FIRST) || r >= mr || j >= nr) ? (T)0                  \
                                                                           : c[(size_t)r * ldc + j]; \
        }                                                                                          \
        for (size_t kk = 0; kk < kc; kk++) {                                                       \
            const T *b = bp + kk * DP_NR;                                                          \
            for (int r = 0; r < DP_MR; r++) {                                                      \
                const T x = ar[r][kk];                                                             \
                for (int j = 0; j < DP_NR; j++) {                                                  \
                    const T prod = x * b[j];                                                       \
                    acc[r][j] = acc[r][j] + prod;                                                  \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < mr && r < DP_MR; r++)                                                  \
            for (int j = 0; j < nr && j < DP_NR; j++) {                                            \
                const T v = acc[r][j];                                                             \
                c[(size_t)r * ldc + j] = ((flags & PP_DOT_LAST) && v != v) ? CANON : v;           \
            }                                                                                      \
    }

DP_KERNEL(dot_f32_portable, float, pp_bits_to_f32(0x7fc00000u))
DP_KERNEL(dot_f64_portable, double, pp_bits_to_f64(UINT64_C(0x7ff8000000000000)))

const pp_dot_set pp_dot_portable = {
    {DP_MR, DP_NR, dot_f32_portable},
    {DP_MR, DP_NR, dot_f64_portable},
    {0, 0, NULL}, /* no fused tile: a software fmaf would be slower than the multiply and add */
};
