/* Fast kernels compiled for AVX-512 F/BW/VL/DQ (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi,bmi2,popcnt")
#define KSUF avx512
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx512 = {0, 0, 0};
#endif
