/* Which fast path this CPU can run. */
#include "pyprecision.h"

#ifdef PP_EMULATE_AVX512
/* Test build (csrc/emu512.h): every AVX-512 feature asked about below is emulated with AVX2 +
 * FMA + F16C + BMI2, so it is "present" wherever those are. The one place for it. */
#define __builtin_cpu_supports(f)                                                                  \
    (__builtin_strncmp((f), "avx512", 6) == 0                                                     \
         ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&                     \
               __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c")                   \
         : __builtin_cpu_supports(f))
#endif

int pp_isa_supported(int isa) {
    switch (isa) {
    case PP_ISA_REFERENCE:
    case PP_ISA_PORTABLE: return 1;
#if defined(__x86_64__) || defined(__i386__)
    case PP_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
               __builtin_cpu_supports("f16c");
    case PP_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
#endif
    default: return 0;
    }
}

int pp_isa_auto(void) {
    if (pp_isa_supported(PP_ISA_AVX512)) return PP_ISA_AVX512;
    if (pp_isa_supported(PP_ISA_AVX2)) return PP_ISA_AVX2;
    return PP_ISA_PORTABLE;
}
