/* Fast kernels compiled for AVX-512 F/BW/VL/DQ (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi,bmi2,popcnt")
#include <immintrin.h>
#define PP_VBYTES 64
#define PP_STREAM(d, s) _mm512_stream_si512((void *)(d), _mm512_loadu_si512((const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#define KSUF avx512
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx512;
#endif
