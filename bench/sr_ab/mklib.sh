#!/bin/bash
# bench/sr_ab/mklib.sh <csrc dir> <objects dir> <out.so> [extra CFLAGS...]
# A shared library of the C core with kern_avx2.c (and every kernel header) compiled from <csrc dir>
# and every other unit taken from <objects dir> (a tree built in place: its csrc/*.o), for
# bench/sr_ab/ab.c to load beside another. About 40 s (kern_avx2.c alone). speed.md S27.
set -e
D=$1; OBJ=$2; OUT=$3; shift 3
CF="-std=c11 -O3 -Wall -Wextra -fno-fast-math -ffp-contract=off -fno-strict-aliasing -D_GNU_SOURCE -fPIC"
gcc $CF "$@" -I"$D" -c "$D/kern_avx2.c" -o "$OUT.kern_avx2.o"
gcc -shared "$OUT.kern_avx2.o" $(ls "$OBJ"/*.o | grep -v '/kern_avx2\.o$') -lm -lpthread -o "$OUT"
