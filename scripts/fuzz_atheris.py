"""The long fuzz run with atheris (coverage-guided libFuzzer), where it installs.

    pip install atheris            # not a dependency of the package or its tests
    python scripts/fuzz_atheris.py TARGET -runs=200000 -timeout=2 [-max_len=4096]

TARGET: ir (the loop-IR parser and printer), safetensors, npz, npy, index, raw. Every input may
only end normally or in a pyprecision error (a ParseError located at line/col >= 1); any other
exception is reported by atheris as a crash, an input over ``-timeout`` seconds as a timeout.
Seeds (valid files) are written to a fresh corpus directory first. Every 20 000 inputs the
script prints ``TARGET: N inputs, {outcome: count}``; libFuzzer ends with ``Done N runs``.
Results of the issue-13 run: docs/io.md ("Crash, race and fuzz tests").
"""

from __future__ import annotations

import io
import itertools
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

import atheris  # type: ignore[import-not-found]

with atheris.instrument_imports():
    import numpy as np

    from pyprecision import ir
    from pyprecision.errors import ParseError, PyPrecisionError
    from pyprecision.io import open_tensors, read_raw, save_safetensors

ROOT = Path(__file__).resolve().parents[1]
WORK = Path(tempfile.mkdtemp(prefix="pp-atheris-"))
COUNTS: Counter[str] = Counter()
_N = itertools.count()


def _fresh(suffix: str, data: bytes) -> Path:
    p = WORK / f"in{next(_N) % 64}{suffix}"  # names reused only long after their maps are gone
    p.write_bytes(data)
    return p


def _load_all(path: Path) -> None:
    store = open_tensors(path)
    for name in store:
        np.asarray(store.load(name)).tobytes()


def _seeds(target: str) -> list[bytes]:
    if target == "ir":
        return [p.read_bytes() for p in sorted((ROOT / "examples").glob("*.pir"))
                if p.stat().st_size < 20_000]
    buf = io.BytesIO()
    if target == "npz":
        np.savez(buf, a=np.arange(5, dtype=np.float32), b=np.ones((2, 2), np.int16))
        return [buf.getvalue()]
    if target in ("npy", "raw"):
        np.save(buf, np.arange(12.0).reshape(3, 4))
        return [buf.getvalue()]
    p = WORK / "seed.safetensors"
    save_safetensors(p, {"w": np.arange(6, dtype=np.float32), "b": np.ones(2, np.int64)})
    if target == "index":
        return [json.dumps({"weight_map": {"w": "a.safetensors", "b": "a.safetensors"}}).encode()]
    return [p.read_bytes()]


def _one(target: str, data: bytes) -> None:
    if target == "ir":
        ir.to_text(ir.parse(data.decode("utf-8", errors="replace"), filename="fuzz.pir"))
    elif target == "index":
        d = WORK / f"ckpt{next(_N) % 64}"
        d.mkdir(exist_ok=True)
        (d / "a.safetensors").write_bytes((WORK / "seed.safetensors").read_bytes())
        (d / "model.safetensors.index.json").write_bytes(data)
        _load_all(d)
    elif target == "raw":
        fdp = atheris.FuzzedDataProvider(data)
        dtype = fdp.PickValueInList(["float32", "bf16", "F8_E4M3", "uint16", "object", "V3", "x"])
        shape = fdp.ConsumeUnicodeNoSurrogates(8)
        offset = fdp.ConsumeIntInRange(-2, 40)
        np.asarray(read_raw(_fresh(".bin", fdp.ConsumeBytes(256)), dtype, shape or None,
                            offset=offset)).tobytes()
    else:
        _load_all(_fresh(f".{target}", data))


def main() -> None:
    """Run atheris on one target (argv[1]); the rest of argv goes to libFuzzer."""
    target = sys.argv[1]
    corpus = WORK / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(_seeds(target)):
        (corpus / f"seed{i}").write_bytes(seed)

    def test_one_input(data: bytes) -> None:
        try:
            _one(target, data)
            COUNTS["ok"] += 1
        except PyPrecisionError as exc:
            if isinstance(exc, ParseError) and target == "ir":
                assert exc.line >= 1 and exc.col >= 1, exc
            COUNTS[type(exc).__name__] += 1
        n = sum(COUNTS.values())
        if n % 20000 == 0:  # libFuzzer exits without running atexit handlers: report as we go
            print(f"{target}: {n} inputs, {dict(COUNTS)}", file=sys.stderr, flush=True)

    prefix = [] if any(a.startswith("-artifact_prefix") for a in sys.argv) else [
        f"-artifact_prefix={WORK}/"]  # crash files go to the work directory, not the cwd
    atheris.Setup([sys.argv[0], *prefix, *sys.argv[2:], str(corpus)], test_one_input)
    print(f"{target}: corpus and crash files in {WORK}", file=sys.stderr)
    atheris.Fuzz()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
