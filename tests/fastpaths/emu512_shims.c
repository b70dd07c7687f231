/* Array wrappers around csrc/emu512.h's shims and around this CPU's native equivalents (F16C,
 * scalar FMA / multiply / conversion under fesetround), for tests/fastpaths/test_emu512_shims.py
 * (built there with gcc against SIMDe, loaded with ctypes). n is a multiple of the vector width;
 * the immediate / rounding arguments are dispatched to constants (the intrinsics need them). */
#define PP_EMULATE_AVX512 1
#include "emu512.h"
#include <fenv.h>
#include <math.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define RD (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define RU (_MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)
#define RZ (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define CUR _MM_FROUND_CUR_DIRECTION
/* r: 0-3 the four roundings, 4 the current direction */
#define BY_ROUNDING(r, CALL)                                                                       \
    switch (r) {                                                                                   \
    case 0: CALL(RN); break;                                                                       \
    case 1: CALL(RD); break;                                                                       \
    case 2: CALL(RU); break;                                                                       \
    case 3: CALL(RZ); break;                                                                       \
    default: CALL(CUR); break;                                                                     \
    }
static const int FE[4] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};

unsigned get_csr(void) { return _mm_getcsr(); }
void set_csr(unsigned c) { _mm_setcsr(c); }

/* ---- half precision ---- */
void emu_cvtps_ph(const float *in, uint16_t *out, size_t n, int imm) {
    for (size_t i = 0; i < n; i += 16) {
        const __m512 x = _mm512_loadu_ps(in + i);
        __m256i h;
#define C(I) h = _mm512_cvtps_ph(x, I)
        switch (imm) {
        case 0: C(0); break;
        case 1: C(1); break;
        case 2: C(2); break;
        case 3: C(3); break;
        case 4: C(4); break;
        case 8: C(8); break;
        case 9: C(9); break;
        case 10: C(10); break;
        case 11: C(11); break;
        default: C(12); break;
        }
#undef C
        _mm256_storeu_si256((__m256i *)(void *)(out + i), h);
    }
}
void nat_cvtps_ph(const float *in, uint16_t *out, size_t n, int imm) {
    for (size_t i = 0; i < n; i += 8) {
        const __m256 x = _mm256_loadu_ps(in + i);
        __m128i h;
#define C(I) h = _mm256_cvtps_ph(x, I)
        switch (imm) {
        case 0: C(0); break;
        case 1: C(1); break;
        case 2: C(2); break;
        case 3: C(3); break;
        case 4: C(4); break;
        case 8: C(8); break;
        case 9: C(9); break;
        case 10: C(10); break;
        case 11: C(11); break;
        default: C(12); break;
        }
#undef C
        _mm_storeu_si128((__m128i *)(void *)(out + i), h);
    }
}
void emu_cvtph_ps(const uint16_t *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i += 16)
        _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(in + i))));
}
void nat_cvtph_ps(const uint16_t *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(in + i))));
}
void emu_cvtneps_pbh(const float *in, uint16_t *out, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
        const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
        memcpy(out + i, &b, 32);
    }
}

/* ---- arithmetic with embedded rounding ---- */
void emu_fmadd(const float *a, const float *b, const float *c, float *out, size_t n, int r) {
    for (size_t i = 0; i < n; i += 16) {
        const __m512 x = _mm512_loadu_ps(a + i), y = _mm512_loadu_ps(b + i), z = _mm512_loadu_ps(c + i);
        __m512 o;
#define C(R) o = _mm512_fmadd_round_ps(x, y, z, R)
        BY_ROUNDING(r, C)
#undef C
        _mm512_storeu_ps(out + i, o);
    }
}
void nat_fmadd(const float *a, const float *b, const float *c, float *out, size_t n, int r) {
    const int old = fegetround();
    if (r < 4) fesetround(FE[r]);
    for (size_t i = 0; i < n; i++) {
        volatile float x = a[i], y = b[i], z = c[i];
        volatile float o = fmaf(x, y, z);
        out[i] = o;
    }
    fesetround(old);
}
void emu_mul_ps(const float *a, const float *b, float *out, size_t n, int r, unsigned k) {
    for (size_t i = 0; i < n; i += 16) {
        const __m512 x = _mm512_loadu_ps(a + i), y = _mm512_loadu_ps(b + i);
        __m512 o;
#define C(R) o = _mm512_maskz_mul_round_ps((__mmask16)k, x, y, R)
        BY_ROUNDING(r, C)
#undef C
        _mm512_storeu_ps(out + i, o);
    }
}
void nat_mul_ps(const float *a, const float *b, float *out, size_t n, int r) {
    const int old = fegetround();
    if (r < 4) fesetround(FE[r]);
    for (size_t i = 0; i < n; i++) {
        volatile float x = a[i], y = b[i];
        volatile float o = x * y;
        out[i] = o;
    }
    fesetround(old);
}
void emu_mul_pd(const double *a, const double *b, double *out, size_t n, int r, unsigned k) {
    for (size_t i = 0; i < n; i += 8) {
        const __m512d x = _mm512_loadu_pd(a + i), y = _mm512_loadu_pd(b + i);
        __m512d o;
#define C(R) o = _mm512_maskz_mul_round_pd((__mmask8)k, x, y, R)
        BY_ROUNDING(r, C)
#undef C
        _mm512_storeu_pd(out + i, o);
    }
}
void nat_mul_pd(const double *a, const double *b, double *out, size_t n, int r) {
    const int old = fegetround();
    if (r < 4) fesetround(FE[r]);
    for (size_t i = 0; i < n; i++) {
        volatile double x = a[i], y = b[i];
        volatile double o = x * y;
        out[i] = o;
    }
    fesetround(old);
}
void emu_cvtpd_ps(const double *a, float *out, size_t n, int r) {
    for (size_t i = 0; i < n; i += 8) {
        const __m512d x = _mm512_loadu_pd(a + i);
        __m256 o;
        if (r == 5) {
            o = _mm512_cvtpd_ps(x);
        } else {
#define C(R) o = _mm512_cvt_roundpd_ps(x, R)
            BY_ROUNDING(r, C)
#undef C
        }
        _mm256_storeu_ps(out + i, o);
    }
}
void nat_cvtpd_ps(const double *a, float *out, size_t n, int r) {
    const int old = fegetround();
    if (r < 4) fesetround(FE[r]);
    for (size_t i = 0; i < n; i++) {
        volatile double x = a[i];
        volatile float o = (float)x;
        out[i] = o;
    }
    fesetround(old);
}

void emu_cvtps_pd(const float *a, double *out, size_t n) {
    for (size_t i = 0; i < n; i += 8) _mm512_storeu_pd(out + i, _mm512_cvtps_pd(_mm256_loadu_ps(a + i)));
}
void nat_cvtps_pd(const float *a, double *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        volatile float x = a[i];
        volatile double o = (double)x;
        out[i] = o;
    }
}

/* ---- reduce: imm8 = M << 4 | 8 | rc, dispatched over the values the tests use ---- */
#define REDUCE_IMMS(X) X(0x08) X(0x09) X(0x0A) X(0x0B) X(0x0C) X(0x18) X(0x1B) X(0x29) X(0x3A) X(0xF8) X(0xFB)
void emu_reduce_ps(const float *a, float *out, size_t n, int imm, unsigned k) {
    for (size_t i = 0; i < n; i += 16) {
        const __m512 x = _mm512_loadu_ps(a + i);
        __m512 o = _mm512_setzero_ps();
#define C(I) case I: o = _mm512_maskz_reduce_round_ps((__mmask16)k, x, I, _MM_FROUND_NO_EXC); break;
        switch (imm) { REDUCE_IMMS(C) default: break; }
#undef C
        _mm512_storeu_ps(out + i, o);
    }
}
void emu_reduce_pd(const double *a, double *out, size_t n, int imm, unsigned k) {
    for (size_t i = 0; i < n; i += 8) {
        const __m512d x = _mm512_loadu_pd(a + i);
        __m512d o = _mm512_setzero_pd();
#define C(I) case I: o = _mm512_maskz_reduce_round_pd((__mmask8)k, x, I, _MM_FROUND_NO_EXC); break;
        switch (imm) { REDUCE_IMMS(C) default: break; }
#undef C
        _mm512_storeu_pd(out + i, o);
    }
}

/* ---- float -> unsigned with truncation, merge-masked with src ---- */
void emu_cvtt_ps_u32(const float *a, const uint32_t *src, uint32_t *out, size_t n, unsigned k) {
    for (size_t i = 0; i < n; i += 16)
        _mm512_storeu_si512(out + i, _mm512_mask_cvtt_roundps_epu32(_mm512_loadu_si512(src + i), (__mmask16)k,
                                                                    _mm512_loadu_ps(a + i), _MM_FROUND_NO_EXC));
}
void emu_cvtt_pd_u64(const double *a, const uint64_t *src, uint64_t *out, size_t n, unsigned k) {
    for (size_t i = 0; i < n; i += 8)
        _mm512_storeu_si512(out + i, _mm512_mask_cvtt_roundpd_epu64(_mm512_loadu_si512(src + i), (__mmask8)k,
                                                                    _mm512_loadu_pd(a + i), _MM_FROUND_NO_EXC));
}

/* ---- classification, compares, mask unpacking ---- */
void emu_fpclass(const float *a, uint16_t *out, size_t n, int imm) {
    for (size_t i = 0; i < n; i += 16) {
        const __m512 x = _mm512_loadu_ps(a + i);
        __mmask16 k = 0;
#define C(I) case I: k = _mm512_fpclass_ps_mask(x, I); break;
        switch (imm) { C(0x01) C(0x02) C(0x04) C(0x08) C(0x10) C(0x20) C(0x40) C(0x80) C(0x81) C(0x22) C(0xff) default: break; }
#undef C
        out[i / 16] = k;
    }
}
/* which: 0 cmpgt_epu16 (256), 1 cmpeq_epi16, 2 cmplt_epu16, 3 cmpgt_epu32, 4 cmplt_epu32,
 * 5 cmpgt_epu64, 6 cmplt_epu64; a, b: 64 bytes (32 for which 0); returns the mask */
uint64_t emu_cmp(int which, const void *a, const void *b) {
    const __m512i x = _mm512_loadu_si512(a), y = _mm512_loadu_si512(b);
    switch (which) {
    case 0: return _mm256_cmpgt_epu16_mask(_mm256_loadu_si256((const __m256i *)a), _mm256_loadu_si256((const __m256i *)b));
    case 1: return _mm512_cmpeq_epi16_mask(x, y);
    case 2: return _mm512_cmplt_epu16_mask(x, y);
    case 3: return _mm512_cmpgt_epu32_mask(x, y);
    case 4: return _mm512_cmplt_epu32_mask(x, y);
    case 5: return _mm512_cmpgt_epu64_mask(x, y);
    default: return _mm512_cmplt_epu64_mask(x, y);
    }
}
uint64_t emu_kunpack(int which, uint64_t a, uint64_t b) {
    if (which == 0) return _mm512_kunpackb((__mmask16)a, (__mmask16)b);
    if (which == 1) return _mm512_kunpackw((__mmask32)a, (__mmask32)b);
    return _mm512_kunpackd((__mmask64)a, (__mmask64)b);
}

/* ---- integer narrowing / widening: which 0 cvtepi32_epi16, 1 cvtepi32_epi8, 2 cvtepu16_epi32,
 * 3 cvtepu32_epi64, 4 cvtepu8_epi16 (in: 64 or 32 bytes; out: 32 / 16 / 64 bytes) ---- */
void emu_cvt_int(int which, const void *in, void *out) {
    switch (which) {
    case 0: _mm256_storeu_si256((__m256i *)out, _mm512_cvtepi32_epi16(_mm512_loadu_si512(in))); break;
    case 1: _mm_storeu_si128((__m128i *)out, _mm512_cvtepi32_epi8(_mm512_loadu_si512(in))); break;
    case 2: _mm512_storeu_si512(out, _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)in))); break;
    case 3: _mm512_storeu_si512(out, _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)in))); break;
    default: _mm512_storeu_si512(out, _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)in))); break;
    }
}

/* ---- masked stores: which 0 storeu_epi16 (256), 1 storeu_epi8, 2 storeu_epi32,
 * 3 cvtepi32_storeu_epi16, 4 cvtepi32_storeu_epi8; v: 64 bytes (32 for 0) ---- */
void emu_mask_store(int which, void *p, uint64_t k, const void *v) {
    const __m512i x = _mm512_loadu_si512(v);
    switch (which) {
    case 0: _mm256_mask_storeu_epi16(p, (__mmask16)k, _mm256_loadu_si256((const __m256i *)v)); break;
    case 1: _mm512_mask_storeu_epi8(p, (__mmask64)k, x); break;
    case 2: _mm512_mask_storeu_epi32(p, (__mmask16)k, x); break;
    case 3: _mm512_mask_cvtepi32_storeu_epi16(p, (__mmask16)k, x); break;
    default: _mm512_mask_cvtepi32_storeu_epi8(p, (__mmask16)k, x); break;
    }
}

/* ---- masked loads at the end of a readable page (the next one inaccessible): the last
 * `avail` bytes of the page are readable data (0..255 repeated); which 0 maskz_loadu_epi16 (256),
 * 1 maskz_loadu_epi32, 2 maskz_loadu_epi64; the elements start avail bytes before the end. A
 * lane read past it faults; returns 0 and fills out (64 bytes), or -1 if mmap failed. ---- */
int emu_mask_load_edge(int which, uint64_t k, size_t avail, void *out) {
    const long pg = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return -1;
    if (mprotect(m + pg, (size_t)pg, PROT_NONE) != 0) return -1;
    char *p = m + pg - avail;
    for (size_t j = 0; j < avail; j++) p[j] = (char)(j + 1);
    __m512i r = _mm512_setzero_si512();
    if (which == 0) r = _mm512_castsi256_si512(_mm256_maskz_loadu_epi16((__mmask16)k, p));
    else if (which == 1) r = _mm512_maskz_loadu_epi32((__mmask16)k, p);
    else r = _mm512_maskz_loadu_epi64((__mmask8)k, p);
    memcpy(out, &r, which == 0 ? 32 : 64);
    munmap(m, 2 * (size_t)pg);
    return 0;
}

/* ---- streaming stores: aligned -> a plain store; misaligned -> the child dies of a trap ---- */
int emu_stream(int which, void *p, const void *v) {
    if (which == 0) _mm512_stream_si512(p, _mm512_loadu_si512(v));
    else _mm512_stream_ps(p, _mm512_loadu_ps(v));
    return 0;
}
int emu_stream_misaligned_traps(void) {
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        signal(SIGILL, SIG_DFL); /* no crash report from the test runner's handler */
        _Alignas(64) char buf[192];
        memset(buf, 0, sizeof buf);
        _mm512_stream_si512(buf + 8, _mm512_set1_epi8(1));
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}
