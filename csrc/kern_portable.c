/* Fast kernels for the baseline instruction set of the build machine's compiler target. */
#include "pyprecision.h"

#define KSUF portable
#include "kern_body.h"
