/* The PE dot as it was before issue 27 (csrc/intops.c dot_rows at commit 86fe9bc), kept here only
 * as the benchmark's "old path" for 2-D dots: the scalar loop the compiler auto-vectorises for
 * the baseline x86-64 (SSE2), 8 rows x 256 columns of accumulators in L1. bench/bench_dot.py
 * builds it with the core's flags (-O3 -ffp-contract=off, no -march) and splits rows over threads. */
#include <stddef.h>

#define DOT_TILE_ROWS 8
#define DOT_TILE_COLS 256
void old_dot_rows(const float *fa, const float *fb, float *out, size_t k, size_t n,
                  size_t begin, size_t end) {
    for (size_t i0 = begin; i0 < end; i0 += DOT_TILE_ROWS) {
        const size_t i1 = end - i0 > DOT_TILE_ROWS ? i0 + DOT_TILE_ROWS : end;
        for (size_t c0 = 0; c0 < n; c0 += DOT_TILE_COLS) {
            const size_t c1 = n - c0 > DOT_TILE_COLS ? c0 + DOT_TILE_COLS : n;
            for (size_t i = i0; i < i1; i++)
                for (size_t c = c0; c < c1; c++) out[i * n + c] = 0.0f;
            for (size_t kk = 0; kk < k; kk++) {
                const float *restrict brow = fb + kk * n;
                for (size_t i = i0; i < i1; i++) {
                    const float a = fa[i * k + kk];
                    float *restrict acc = out + i * n;
                    for (size_t c = c0; c < c1; c++) {
                        const float prod = a * brow[c];
                        acc[c] = acc[c] + prod;
                    }
                }
            }
        }
    }
}
