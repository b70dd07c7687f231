"""An estimate of device time from the lowered program, per hardware generation: each PE matmul's
multiply-adds over the target's peak for its operand dtype, every other instruction's bytes (read
and written) over the device-memory bandwidth, the casts the passes inserted among them. It is an
estimate from public peak figures, not a measurement (decision TU3; sources in
docs/decisions/tune.md)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyprecision.tune.errors import TuneError

__all__ = ["COST_TABLE", "Cost", "estimate_cost", "load_cost_table", "pe_dtypes"]

#: per target: dense peak TFLOPS (one chip, 2 flops a multiply-add) by PE operand dtype and the
#: device-memory bandwidth in GB/s. gen2 = Trainium / Inferentia2 (NeuronCore-v2), gen3 =
#: Trainium2 (NeuronCore-v3), gen4 = Trainium3 (NeuronCore-v4); fp8 on gen4 is AWS's MXFP8 figure.
COST_TABLE: dict[str, dict[str, Any]] = {
    "gen2": {
        "peak_tflops": {"float32": 47.5, "float32r": 190.0, "bfloat16": 190.0, "float16": 190.0,
                        "float8e4": 190.0},  # fmt: skip
        "memory_gbps": 820.0,
        "source": "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/"
                  "neuron-hardware/trainium.html",
    },
    "gen3": {
        "peak_tflops": {"float32": 181.0, "float32r": 667.0, "bfloat16": 667.0, "float16": 667.0,
                        "float8e4": 1299.0, "float8_e5m2": 1299.0},  # fmt: skip
        "memory_gbps": 2900.0,
        "source": "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/"
                  "neuron-hardware/trainium2.html",
    },
    "gen4": {
        "peak_tflops": {"float32": 183.0, "float32r": 671.0, "bfloat16": 671.0, "float16": 671.0,
                        "float8e4": 2517.0, "float8_e5m2": 2517.0, "float8e4m3fn": 2517.0},
        "memory_gbps": 4900.0,
        "source": "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.29.1/_sources/about-neuron/"
                  "arch/neuron-hardware/trainium3.rst",
    },
}


@dataclass(frozen=True)
class Cost:
    """Estimated seconds: on the PE, in memory traffic, and the part of it the casts make."""

    pe_s: float
    memory_s: float
    cast_s: float
    macs: int

    @property
    def total_s(self) -> float:
        """PE plus memory time (the casts are part of the memory time)."""
        return self.pe_s + self.memory_s

    def to_json(self) -> dict[str, Any]:
        """Seconds and multiply-adds."""
        return {"total_s": self.total_s, "pe_s": self.pe_s, "memory_s": self.memory_s,
                "cast_s": self.cast_s, "macs": self.macs}  # fmt: skip


def load_cost_table(path: str) -> dict[str, dict[str, Any]]:
    """A cost table from a JSON file shaped like :data:`COST_TABLE` (``source`` optional); a
    malformed table is a TuneError naming the file."""
    p = Path(path)
    if not p.is_file():
        raise TuneError(f"{path}: no such cost table")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise TuneError(f"{path}: not a JSON cost table ({exc})") from None
    if not isinstance(doc, dict) or not doc:
        raise TuneError(f"{path}: a cost table is an object of targets")
    for target, row in doc.items():
        peaks = row.get("peak_tflops") if isinstance(row, dict) else None
        bw = row.get("memory_gbps") if isinstance(row, dict) else None
        if not isinstance(peaks, dict) or not _positive(bw):
            raise TuneError(f"{path}: target {target!r} needs peak_tflops {{dtype: TFLOPS}} and a "
                            "positive memory_gbps")  # fmt: skip
        for dt, v in peaks.items():
            if not _positive(v):
                raise TuneError(f"{path}: {target} peak_tflops[{dt!r}] must be a positive number")
    return doc


def _positive(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _elements(shape: Any) -> int:
    n = 1
    for d in shape or ():
        n *= int(d)
    return n


def _bytes(obj: Any) -> int:
    dt = getattr(obj, "dtype", None)
    if dt is None or not hasattr(dt, "itemsize"):
        return 0
    return _elements(getattr(obj, "shape", ())) * max(1, dt.itemsize)


def _is_matmul(inst: Any) -> bool:
    return getattr(inst, "opname", "") == "matmul"


def pe_dtypes(function: Any) -> set[str]:
    """The dtype each PE matmul is costed at (the wider of its two operands), over a function."""
    out = set()
    for inst in function.instructions():
        if _is_matmul(inst):
            out.add(_pe_dtype(inst))
    return out


def _pe_dtype(inst: Any) -> str:
    s, m = inst.operands
    return max((s.dtype, m.dtype), key=lambda d: d.bits).name


def estimate_cost(function: Any, target: str, table: dict[str, dict[str, Any]]) -> Cost:
    """The estimate of one lowered function on ``target``; a PE dtype or a target the table lacks
    is a TuneError (one line)."""
    row = table.get(target)
    if row is None:
        raise TuneError(f"the cost table has no target {target!r} (it has {', '.join(table)})")
    peaks, bw = row["peak_tflops"], float(row["memory_gbps"]) * 1e9
    pe = mem = cast = 0.0
    macs = 0
    size: dict[int, int] = {}  # id of a value or scalar -> its bytes, worked out once (TU21)
    for inst in function.instructions():
        if _is_matmul(inst):
            s = inst.operands[0]
            n = _elements(s.shape[:1]) * _elements(inst.result.shape)  # Σ_k over k × m × n
            dt = _pe_dtype(inst)
            if dt not in peaks:
                raise TuneError(f"the cost table has no peak_tflops for {dt} on {target}: add it "
                                "(--cost-table)")  # fmt: skip
            macs += n
            pe += 2.0 * n / (float(peaks[dt]) * 1e12)
            continue
        moved = 0  # an int: the same sum in any order
        for o in (*inst._operands, inst.result):
            if o is not None:
                b = size.get(id(o))
                if b is None:
                    b = size[id(o)] = _bytes(o)
                moved += b
        t = moved / bw
        mem += t
        if getattr(inst, "kind", None) == "cast":
            cast += t
    return Cost(pe, mem, cast, macs)
