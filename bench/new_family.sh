#!/bin/bash
# Everything issue 16 asks of a CPU family the tables of bench/README.md do not have yet (first
# meant for the AVX-512 machines: Intel Sapphire / Emerald Rapids, AMD Zen 4), in one log:
#
#     bash bench/new_family.sh [LOG]        # from the top of the tree, its venv active; ~30-60 min
#
# 1. the CPU, its flags and the ISA pyprecision picks; 2. `compare.py --runs 2` (16 Mi elements,
# one and two threads, ml_dtypes / numpy / torch where installed) and one 64 Mi run; 3. on AVX-512
# BF16 CPUs, bf16 rne with and without vcvtneps2bf16 (PYPRECISION_AVX512_BF16=0); 4. the float64
# rows against the floor; 5. the command-line start-up and re-encode (bench_cli_reencode.py); 6. on
# an AVX-512 CPU, the exhaustive sweeps of the kernels only ever run emulated so far (speed.md S20:
# bf16 / fp32r rne rtz rna and SR, fp16 rne, the saturating and NVIDIA rows): all 2^32
# float32 inputs each against the reference converter, 0 mismatches expected.
# Record the tables in bench/README.md under the CPU's name (one table per family; never replace
# another family's), and the sweeps in docs/decisions/speed.md.
#
# Which pyprecision runs: this tree where its C core is built in place (`python setup_build.py`),
# else the installed package (`pip install .`): every command runs from a scratch directory with
# the tree's files named by absolute path, so the tree (without its _core) never shadows it.
set -uo pipefail
LOG=${1:-/tmp/pyprecision-family-$(date -u +%Y%m%dT%H%M%SZ).log}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if compgen -G "$ROOT/pyprecision/_core*.so" >/dev/null; then
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi
SCRATCH=$(mktemp -d -t pp-family-XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH" || exit 2
if ! python -c "import pyprecision._core" 2>/dev/null; then
    echo "new_family.sh: no usable pyprecision: build $ROOT in place (python setup_build.py)" \
         "or pip install it" >&2
    exit 2
fi
exec > >(tee "$LOG") 2>&1
step() { echo; echo "== $(date -u +%H:%M:%S) $*"; }
step "machine"
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-400
uptime
python "$ROOT/bench/compare.py" --machine
step "compare.py --runs 2 (16 Mi)"
nice -n -5 python "$ROOT/bench/compare.py" --runs 2 || python "$ROOT/bench/compare.py" --runs 2
step "compare.py --n 67108864 --reps 3"
python "$ROOT/bench/compare.py" --n 67108864 --reps 3
if grep -q avx512_bf16 /proc/cpuinfo; then
    step "bf16 rne without vcvtneps2bf16 (PYPRECISION_AVX512_BF16=0), then with"
    PYPRECISION_AVX512_BF16=0 python "$ROOT/bench/compare.py" --only encode
    python "$ROOT/bench/compare.py" --only encode
fi
step "float64 sources (probe_f64.py)"
python "$ROOT/bench/probe_f64.py"
step "command line (bench_cli_reencode.py)"
python "$ROOT/bench/bench_cli_reencode.py"
if grep -q avx512bw /proc/cpuinfo; then
    step "exhaustive sweeps on the real AVX-512 set"
    PYPRECISION_EXHAUSTIVE_ISAS=avx512 nice -n 10 python -m pytest -q -s -p no:cacheprovider \
        --rootdir "$ROOT" -c "$ROOT/pyproject.toml" \
        -m exhaustive "$ROOT/tests/fastpaths/test_exhaustive.py" \
        -k "(test_every_float32[ and (bf16 or fp32r or fp16-rne or fp16-rtz or fp16-rna)) or (saturating_wide and rne) or (nvidia and bf16-rne)"
fi
step "done: $LOG"
