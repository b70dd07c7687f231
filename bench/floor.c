/* The memory floor of the cast benchmark: a streaming copy that reads `in_bytes` and writes
 * `out_bytes` per element, with the least compute there can be (the input vectors of one output
 * vector are ORed together) and non-temporal stores, over [begin, end) of n elements. Built by
 * bench/compare.py with -O3 -march=native; threads are driven from Python. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__)
typedef __m512i vec;
#define VB 64
#define LOAD(p) _mm512_loadu_si512((const void *)(p))
#define OR(a, b) _mm512_or_si512(a, b)
#define STREAM(p, v) _mm512_stream_si512((void *)(p), v)
#elif defined(__AVX2__)
typedef __m256i vec;
#define VB 32
#define LOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define OR(a, b) _mm256_or_si256(a, b)
#define STREAM(p, v) _mm256_stream_si256((__m256i *)(void *)(p), v)
#else
typedef __m128i vec;
#define VB 16
#define LOAD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define OR(a, b) _mm_or_si128(a, b)
#define STREAM(p, v) _mm_stream_si128((__m128i *)(void *)(p), v)
#endif

/* Elements [begin, end) of a copy of n elements; begin/end multiples of 64 except at n. */
void floor_copy(const void *src, size_t in_bytes, void *dst, size_t out_bytes, size_t begin,
                size_t end) {
    const char *s = (const char *)src + begin * in_bytes;
    char *d = (char *)dst + begin * out_bytes;
    const size_t n = end - begin;
    const size_t out_total = n * out_bytes, in_total = n * in_bytes;
    size_t o = 0, i = 0;
    /* head: plain stores up to an aligned destination */
    while (o < out_total && ((uintptr_t)(d + o) & (VB - 1))) {
        d[o++] = s[i];
        i += in_bytes > out_bytes ? in_bytes / out_bytes : 1;
    }
    if (in_bytes >= out_bytes) {
        const size_t r = in_bytes / out_bytes; /* input vectors per output vector */
        for (; o + VB <= out_total && i + r * VB <= in_total; o += VB) {
            vec v = LOAD(s + i);
            for (size_t k = 1; k < r; k++) v = OR(v, LOAD(s + i + k * VB));
            i += r * VB;
            STREAM(d + o, v);
        }
    } else {
        const size_t r = out_bytes / in_bytes; /* output vectors per input vector */
        for (; o + r * VB <= out_total && i + VB <= in_total; i += VB) {
            vec v = LOAD(s + i);
            for (size_t k = 0; k < r; k++) STREAM(d + o + k * VB, v);
            o += r * VB;
        }
    }
    for (; o < out_total; o++) d[o] = 0;
    _mm_sfence();
}
