"""cffi builder for the C core (API mode, out of line): ``pyprecision._core``.

The cdef is csrc/pyprecision_api.h itself, so the declarations exist once. Environment:
``PYPRECISION_SANITIZE=1`` builds with AddressSanitizer + UBSan (run the tests with
``LD_PRELOAD=$(gcc -print-file-name=libasan.so)``); ``PYPRECISION_CFLAGS`` appends flags.
``PYPRECISION_EMULATE_AVX512=<SIMDe include dir>``: a test build, the AVX-512 set emulated with
AVX2 (csrc/emu512.h; scripts/emulate_avx512.sh).
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"
SOURCES = [
    "formats.c",
    "tables.c",
    "dispatch.c",
    "convert.c",
    "decode.c",
    "srwords.c",
    "pool.c",
    "isa.c",
    "intops.c",
    "kern_portable.c",
    "kern_avx2.c",
    "kern_avx512.c",
    "dot.c",
    "dot_portable.c",
    "dot_avx2.c",
    "dot_avx512.c",
    "chain.c",
    "fold.c",
]

CFLAGS = [
    "-std=c11",
    "-O3",
    "-Wall",
    "-Wextra",
    "-fno-fast-math",
    "-ffp-contract=off",  # rounding order matters everywhere in this core
    "-fno-strict-aliasing",
    "-D_GNU_SOURCE",
]
LDFLAGS: list[str] = []
if os.environ.get("PYPRECISION_SANITIZE"):
    CFLAGS += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    LDFLAGS += ["-fsanitize=address,undefined"]
CFLAGS += shlex.split(os.environ.get("PYPRECISION_CFLAGS", ""))
INCLUDE_DIRS = [str(CSRC.relative_to(HERE))]
if os.environ.get("PYPRECISION_EMULATE_AVX512"):  # a test build: csrc/emu512.h, SIMDe's include dir
    CFLAGS += ["-DPP_EMULATE_AVX512", "-Wno-psabi"]
    INCLUDE_DIRS += [os.environ["PYPRECISION_EMULATE_AVX512"]]

ffibuilder = FFI()
ffibuilder.cdef((CSRC / "pyprecision_api.h").read_text())
ffibuilder.set_source(
    "pyprecision._core",
    '#include "pyprecision.h"',
    sources=[str((CSRC / s).relative_to(HERE)) for s in SOURCES],
    include_dirs=INCLUDE_DIRS,
    extra_compile_args=CFLAGS,
    extra_link_args=LDFLAGS,
    libraries=["m", "pthread"],
    # every header: a change to any rebuilds (the kernel headers are included, not compiled)
    depends=[str(h.relative_to(HERE)) for h in sorted(CSRC.glob("*.h"))],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
