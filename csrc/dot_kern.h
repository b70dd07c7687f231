/* The PE dot's register tile, written once for every vector instruction set (included by
 * dot_avx2.c and dot_avx512.c, once per element type, after they define the vector macros):
 *
 *   DK_T          element type (float or double)       DK_V        vector type
 *   DK_LANES      elements per vector                  DK_NV       vectors per tile row
 *   DK_MR         rows per tile                        DK_NAME     the kernel's name
 *   DK_ZERO()     all +0.0                             DK_SET1(x)  broadcast
 *   DK_LOAD(p)    unaligned load                       DK_MUL/ADD  one rounding each, no FMA
 *   DK_LOADN(p,n) the first n (< DK_LANES) elements, the rest +0; nothing past them is read
 *   DK_STOREN(p,v,n) the first n (<= DK_LANES) elements; nothing past them is written
 *   DK_CANON(v)   every NaN lane as the positive quiet NaN (decision N6)
 *   DK_FMADD(x,y,acc) optional: one fused multiply-add (x*y + acc, one rounding), used instead of
 *                 DK_MUL and DK_ADD; only for operands whose products are exact (K11)
 *   DK_ATTR       optional: attributes of the kernel (e.g. a target that adds FMA)
 *   DK_KUNROLL    optional: a pragma for the loop over k (e.g. _Pragma("GCC unroll 2"))
 *
 * Each lane of each accumulator is one output element: acc = acc + (a[k] * b[k]) for k in order,
 * starting from +0.0 (flags & PP_DOT_FIRST) or from the partial sum stored in c by the previous
 * block of k. Vectorising across output columns leaves every element's order of operations
 * exactly that of the scalar loop (csrc/dot.c dot_reference). The build has -ffp-contract=off, so
 * DK_MUL and DK_ADD stay two instructions (two roundings).
 *
 * Arguments (pp_dot_ukernel, pyprecision.h): kc steps of k; a: row 0 of the tile at its first k,
 * rows lda elements apart; bp: the packed panel, kc rows of DK_LANES * DK_NV elements (columns
 * past nr are zeros); c: the tile's first output, rows ldc apart; mr <= DK_MR rows and
 * nr <= DK_LANES * DK_NV columns are real (rows past mr repeat row 0 and are not stored). */

#ifndef DK_UNROLL
#define DK_UNROLL _Pragma("GCC unroll 16")
#endif

#ifndef DK_ATTR
#define DK_ATTR
#endif
#ifndef DK_KUNROLL
#define DK_KUNROLL
#endif
#ifdef DK_FMADD
#define DK_STEP(acc, x, y) DK_FMADD(x, y, acc)
#else
#define DK_STEP(acc, x, y) DK_ADD(acc, DK_MUL(x, y))
#endif

DK_ATTR static void DK_NAME(size_t kc, const void *a_, size_t lda, const void *bp_, void *c_, size_t ldc,
                    int mr, int nr, int flags) {
    const DK_T *a = a_, *bp = bp_;
    DK_T *c = c_;
    const DK_T *ar[DK_MR];
    DK_V acc[DK_MR][DK_NV];
    DK_UNROLL for (int r = 0; r < DK_MR; r++) ar[r] = a + (size_t)(r < mr ? r : 0) * lda;
    DK_UNROLL for (int r = 0; r < DK_MR; r++)
        DK_UNROLL for (int v = 0; v < DK_NV; v++) {
            const int left = nr - v * DK_LANES;
            if ((flags & PP_DOT_FIRST) || r >= mr || left <= 0) acc[r][v] = DK_ZERO();
            else if (left >= DK_LANES) acc[r][v] = DK_LOAD(c + (size_t)r * ldc + v * DK_LANES);
            else acc[r][v] = DK_LOADN(c + (size_t)r * ldc + v * DK_LANES, left);
        }
    DK_KUNROLL for (size_t kk = 0; kk < kc; kk++) {
        DK_V b[DK_NV];
        DK_UNROLL for (int v = 0; v < DK_NV; v++) b[v] = DK_LOAD(bp + kk * (DK_LANES * DK_NV) + v * DK_LANES);
        DK_UNROLL for (int r = 0; r < DK_MR; r++) {
            const DK_V x = DK_SET1(ar[r][kk]);
            DK_UNROLL for (int v = 0; v < DK_NV; v++) acc[r][v] = DK_STEP(acc[r][v], x, b[v]);
        }
    }
    for (int r = 0; r < mr && r < DK_MR; r++)
        for (int v = 0; v < DK_NV; v++) {
            const int left = nr - v * DK_LANES;
            if (left <= 0) break;
            const DK_V out = (flags & PP_DOT_LAST) ? DK_CANON(acc[r][v]) : acc[r][v];
            DK_STOREN(c + (size_t)r * ldc + v * DK_LANES, out, left >= DK_LANES ? DK_LANES : left);
        }
}
#undef DK_STEP
#undef DK_ATTR
#undef DK_KUNROLL
