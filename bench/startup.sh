#!/bin/bash
# best of 5 wall times of whole processes; $1 = tree put first on PYTHONPATH
export PYTHONPATH=$1
cd /tmp
best() { local b=999; for i in 1 2 3 4 5; do s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); t=$(echo "$e - $s" | bc); if (( $(echo "$t < $b" | bc) )); then b=$t; fi; done; printf "%.3f" "$b"; }
echo "$1: python -c pass $(best /work/venv/bin/python -c pass) | import pyprecision $(best /work/venv/bin/python -c 'import pyprecision') | pyprecision --help $(best /work/venv/bin/python /work/venv/bin/pyprecision --help) | pyprecision formats $(best /work/venv/bin/python /work/venv/bin/pyprecision formats) | import numpy $(best /work/venv/bin/python -c 'import numpy')"
