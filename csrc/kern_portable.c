/* Fast kernels for the baseline instruction set of the build machine's compiler target. */
#include "pyprecision.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define PP_VBYTES 16
#define PP_STREAM(d, s) _mm_stream_si128((__m128i *)(void *)(d), _mm_loadu_si128((const __m128i *)(const void *)(s)))
#define PP_SFENCE() _mm_sfence()
#endif
#define KSUF portable
#include "kern_body.h"
