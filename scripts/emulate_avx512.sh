#!/usr/bin/env bash
# Run the AVX-512 kernel set on a machine without AVX-512: build the C core with the AVX-512 set
# emulated by SIMDe on AVX2 (csrc/emu512.h, -DPP_EMULATE_AVX512) in a separate copy of this tree
# (the normal pyprecision/_core*.so is never touched), check that the build really runs the
# avx512 path and emits no AVX-512 instruction, then run tests/fastpaths and tests/kernel there.
#
#   scripts/emulate_avx512.sh                      the fast tests (not exhaustive, not slow)
#   scripts/emulate_avx512.sh -k fp8               extra pytest arguments are passed through
#   nice scripts/emulate_avx512.sh -m exhaustive -k "fp8e4 and rne" -s    exhaustive sweeps
#
# The tests run with KERNEL_TEST_ISAS=avx512 and PYPRECISION_EXHAUSTIVE_ISAS=avx512 (the other
# paths are the normal suite's), unless those are set. Needs a Python with the test dependencies
# (the project's venv, activated, or $PYTHON) and gcc. SIMDe (header-only) is taken from
# $SIMDE_INCLUDE, else from the cache (${XDG_CACHE_HOME:-~/.cache}/pyprecision/simde), else
# downloaded there from Debian (apt-get download libsimde-dev; dpkg-deb -x; no root needed).
# Exit status 77 (and a message saying why) when SIMDe cannot be had: callers may skip on it.
# $PP_EMU_DIR keeps the copy and the build there (reused when csrc/ and setup_build.py are
# unchanged); by default a temporary directory, removed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/pyprecision

fetch_simde() {
  local dest=$CACHE/simde tmp
  if [ -f "$dest/usr/include/simde/x86/avx512.h" ]; then
    echo "$dest/usr/include"
    return 0
  fi
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
    || { echo "emulate_avx512: no apt-get / dpkg-deb to fetch SIMDe (set SIMDE_INCLUDE)" >&2; return 1; }
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download libsimde-dev >"$tmp/log" 2>&1); then
    echo "emulate_avx512: 'apt-get download libsimde-dev' failed:" >&2
    tail -n 3 "$tmp/log" >&2
    rm -rf "$tmp"
    return 1
  fi
  mkdir -p "$dest.part"
  dpkg-deb -x "$tmp"/libsimde-dev_*.deb "$dest.part"
  cp "$tmp"/libsimde-dev_*.deb "$dest.part/"
  rm -rf "$tmp" "$dest"
  mv "$dest.part" "$dest"
  echo "$dest/usr/include"
}

if [ -n "${SIMDE_INCLUDE:-}" ]; then
  INC=$SIMDE_INCLUDE
else
  INC=$(fetch_simde) || exit 77
fi
[ -f "$INC/simde/x86/avx512.h" ] || { echo "emulate_avx512: no simde/x86/avx512.h under $INC" >&2; exit 77; }
VER=$(sed -n 's/^#define SIMDE_VERSION_\(MAJOR\|MINOR\|MICRO\) \([0-9]*\).*/\2/p' "$INC/simde/simde-common.h" | paste -sd.)
echo "== SIMDe $VER from $INC"

if [ -n "${PP_EMU_DIR:-}" ]; then
  DIR=$PP_EMU_DIR
  mkdir -p "$DIR"
else
  DIR=$(mktemp -d)
  trap 'rm -rf "$DIR"' EXIT
fi
# The copy: this tree's files as they are now (tracked and untracked, not ignored), no built core.
rm -rf "$DIR/src"
"$PYTHON" - "$ROOT" "$DIR/src" <<'PY'
import os, shutil, subprocess, sys
root, dst = sys.argv[1], sys.argv[2]
out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z"],
                     check=True, capture_output=True).stdout
for name in sorted(set(out.decode().split("\0")) - {""}):
    src = os.path.join(root, name)
    if not os.path.isfile(src) or (name.startswith("pyprecision/_core") and name.endswith(".so")):
        continue
    os.makedirs(os.path.dirname(os.path.join(dst, name)), exist_ok=True)
    shutil.copy2(src, os.path.join(dst, name))
PY

KEY=$(cd "$DIR/src" && cat csrc/* setup_build.py | sha256sum | cut -c1-16)-$(printf %s "$INC" | sha256sum | cut -c1-8)
SO=$DIR/build/pyprecision/_core.abi3.so
if [ -f "$SO" ] && [ "$(cat "$DIR/build/key" 2>/dev/null)" = "$KEY" ]; then
  echo "== emulated core: reusing $SO"
else
  echo "== building the emulated core (about a minute)"
  rm -rf "$DIR/build"
  mkdir -p "$DIR/build"
  ln -sfn "$DIR/src/csrc" "$DIR/build/csrc"
  t0=$(date +%s)
  (cd "$DIR/src" && PYPRECISION_EMULATE_AVX512="$INC" "$PYTHON" -c \
    "import setup_build as s; s.ffibuilder.compile(tmpdir='$DIR/build')" >"$DIR/build/log" 2>&1) \
    || { tail -n 30 "$DIR/build/log" >&2; echo "emulate_avx512: the emulated build failed" >&2; exit 1; }
  mv "$DIR"/build/pyprecision/_core*.so "$SO"
  echo "$KEY" >"$DIR/build/key"
  echo "   built in $(($(date +%s) - t0)) s"
fi
cp "$SO" "$DIR/src/pyprecision/_core.abi3.so"

cd "$DIR/src"
# No AVX-512 instruction may be in the emulated build (it could not run here, or would run
# natively on an AVX-512 machine and prove nothing about the emulation).
if command -v objdump >/dev/null; then
  if objdump -d pyprecision/_core.abi3.so | grep -Eq '%zmm|\{%k[0-7]\}|%[xy]mm(1[6-9]|2[0-9]|3[01])'; then
    echo "emulate_avx512: the emulated build contains AVX-512 instructions" >&2
    exit 1
  fi
fi
"$PYTHON" - "$DIR/src" <<'EOF'
import sys
import pyprecision
from pyprecision.kernel import isa_available, isa_auto
where = pyprecision.__file__
if not where.startswith(sys.argv[1]):
    sys.exit(f"emulate_avx512: imported {where}, not the emulated copy")
avail = isa_available()
if "avx512" not in avail:
    sys.exit(f"emulate_avx512: avx512 not available in the emulated build: {avail}")
print(f"== emulated build: {where}; auto {isa_auto()}, available {avail}")
EOF

export KERNEL_TEST_ISAS=${KERNEL_TEST_ISAS:-avx512}
export PYPRECISION_EXHAUSTIVE_ISAS=${PYPRECISION_EXHAUSTIVE_ISAS:-avx512}
export SIMDE_INCLUDE=$INC # tests/fastpaths/test_emu512_shims.py compiles the shims with it
echo "== tests (KERNEL_TEST_ISAS=$KERNEL_TEST_ISAS PYPRECISION_EXHAUSTIVE_ISAS=$PYPRECISION_EXHAUSTIVE_ISAS)"
"$PYTHON" -m pytest -q -p no:cacheprovider tests/fastpaths tests/kernel -m "not exhaustive and not slow" "$@"
