/* Fast kernels compiled for AVX2 (chosen at run time only where the CPU has it). */
#include "pyprecision.h"

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC target("avx2,bmi,bmi2,popcnt")
#define KSUF avx2
#include "kern_body.h"
#else
const pp_kernel_set pp_kernels_avx2 = {0, 0, 0};
#endif
