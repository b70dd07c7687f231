/* Fast kernels compiled for AVX2 (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 32
#define PP_STREAM(d, s) _mm256_stream_si256((__m256i *)(void *)(d), _mm256_loadu_si256((const __m256i *)(const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx2
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx2;
#endif
