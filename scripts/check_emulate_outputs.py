"""Hash every emulation output of every model with inputs in tests/data/models, to prove that a
change to the evaluators (a fast path, a kernel, memory handling) left every output bit unchanged.

Runs, per model: ``emulate.run_hlo`` (the HLO evaluator) and ``compile_hlo`` + ``run_compiled``
(the pipeline, gen2) under the modes none, matmult, all, all-fp32r, matmult-fp16, matmult-fp8e4,
all-fp8e4, experimental-all-fp16 and matmult-fp32r, and none, matmult, all and matmult-fp8e4 again
with ``--enable-saturate-infinity`` (run ``MODE+satinf``), and all, all-fp8e4,
experimental-all-fp16 and matmult-fp16 with ``--disable-mixed-precision-accumulation`` (``MODE+nacc``). One ``source model run<TAB>sha256`` line per run
(dtype, shape and bytes of every output; an error is recorded as its type and message).
``--check FILE`` lists every line that differs (exit 1 when any does). About a minute.

    python scripts/check_emulate_outputs.py --write scripts/emulate_outputs.sha256
    python scripts/check_emulate_outputs.py --check scripts/emulate_outputs.sha256
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from models_data import load_model, manifest, model_names, sources  # noqa: E402

from pyprecision import emulate, frontend, hlo  # noqa: E402

MODES = ("none", "matmult", "all", "all-fp32r", "matmult-fp16", "matmult-fp8e4", "all-fp8e4",
         "experimental-all-fp16", "matmult-fp32r")
#: modes run again with --enable-saturate-infinity (a satinf before every PE op and reducer operand)
SATURATED = ("none", "matmult", "all", "matmult-fp8e4")
#: modes run again with --disable-mixed-precision-accumulation (reduces fold in the narrow dtype)
NARROW_ACC = ("all", "all-fp8e4", "experimental-all-fp16", "matmult-fp16")


def _digest(outputs: list[Any]) -> str:
    h = hashlib.sha256()
    for x in outputs:
        a = np.ascontiguousarray(np.asarray(x))
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.view(np.uint8).tobytes())
    return h.hexdigest()[:16]


def _run(fn: Any) -> str:
    try:
        return _digest(fn())
    except Exception as e:  # noqa: BLE001 -- an error is a recorded outcome
        return f"ERR {type(e).__name__}: {str(e)[:200]}"


def runs() -> Iterator[str]:
    """``source model run<TAB>digest`` for every run."""
    for s in sources():
        for n in model_names(s):
            if manifest(s)["modules"][n]["text_only"]:
                continue
            m = load_model(n, s)
            mod = hlo.parse(m.hlo_path.read_text(), str(m.hlo_path))
            yield f"{s} {n} eval\t{_run(lambda: emulate.run_hlo(mod, m.inputs))}"
            for mode, extra in [(x, "") for x in MODES] + [(x, "+satinf") for x in SATURATED] \
                    + [(x, "+nacc") for x in NARROW_ACC]:
                def pipe(mode: str = mode, extra: str = extra) -> list[Any]:
                    cfg = frontend.PrecisionConfig.from_mode(mode)
                    if extra == "+satinf":
                        cfg = dataclasses.replace(cfg, enable_saturate_infinity=True)
                    if extra == "+nacc":
                        cfg = dataclasses.replace(cfg, enable_mixed_precision_accumulation=False)
                    c = emulate.compile_hlo(mod, cfg)
                    return emulate.run_compiled(c, m.inputs)
                yield f"{s} {n} {mode}{extra}\t{_run(pipe)}"


def main(argv: list[str] | None = None) -> int:
    """Write or check the hashes."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path, metavar="FILE")
    g.add_argument("--check", type=Path, metavar="FILE")
    a = ap.parse_args(argv)
    lines = list(runs())
    if a.write:
        tmp = a.write.with_suffix(a.write.suffix + ".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(a.write)
        print(f"wrote {len(lines)} runs to {a.write}")
        return 0
    want = {ln.split("\t")[0]: ln for ln in a.check.read_text().splitlines() if ln.strip()}
    differ = [ln for ln in lines if want.get(ln.split("\t")[0], ln) != ln]
    for ln in differ:
        print(f"differs: {ln} (baseline: {want[ln.split(chr(9))[0]]})")
    print(f"{len(lines)} runs compared, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
