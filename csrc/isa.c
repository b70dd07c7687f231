/* Which fast path this CPU can run. */
#include "pyprecision.h"

#include "emu512_cpu.h" /* the emulated AVX-512 test build only */

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
