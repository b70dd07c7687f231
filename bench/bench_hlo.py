"""Benchmark of the HLO layer: parse + print + the three spec-004 passes on generated modules.

    python3 bench/bench_hlo.py                 # 1e3, 1e4, 1e5 instructions
    python3 bench/bench_hlo.py --sizes 1000 20000

Prints, per size, the seconds of each stage and instructions per second; a constant
instructions-per-second column across sizes shows the work is linear in the module size.
"""
from __future__ import annotations

import argparse
import time

from pyprecision import hlo

_HEADER = ("HloModule bench, entry_computation_layout={(bf16[4,8]{1,0}, s8[4,8]{1,0}, "
           "s8[8,4]{1,0}, bf16[8]{0}, bf16[8]{0})->(bf16[4,8]{1,0}, s32[4,4]{1,0})}\n\n")
_BLOCK = """  c{k} = bf16[] constant(0.1001)
  bc{k} = bf16[4,8]{{1,0}} broadcast(c{k}), dimensions={{}}
  add{k} = bf16[4,8]{{1,0}} add({x}, bc{k}), metadata={{op_name="jit(f)/add" source_file="f.py" source_line={k}}}
  dot{k} = s32[4,4]{{1,0}} dot(a.2, b.3), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, metadata={{op_name="jit(f)/dot_general" source_file="f.py" source_line={k}}}
  bnt{k} = (bf16[4,8]{{1,0}}, bf16[8]{{0}}, bf16[8]{{0}}) batch-norm-training(add{k}, s.4, o.5), epsilon=0.001, feature_index=1
  gte{k} = bf16[4,8]{{1,0}} get-tuple-element(bnt{k}), index=0
  mul{k} = bf16[4,8]{{1,0}} multiply(gte{k}, {x})
  neg{k} = s32[4,4]{{1,0}} negate(dot{k})
  cvt{k} = f32[4,8]{{1,0}} convert(mul{k})
  out{k} = bf16[4,8]{{1,0}} convert(cvt{k})
"""


def generate(n: int) -> str:
    """HLO text of a module with about ``n`` instructions (blocks of 10, chained through ``out``)."""
    lines = [_HEADER, "ENTRY main.0 {\n",
             "  x.1 = bf16[4,8]{1,0} parameter(0)\n", "  a.2 = s8[4,8]{1,0} parameter(1)\n",
             "  b.3 = s8[8,4]{1,0} parameter(2)\n", "  s.4 = bf16[8]{0} parameter(3)\n",
             "  o.5 = bf16[8]{0} parameter(4)\n"]
    x = "x.1"
    blocks = max(1, (n - 6) // 10)
    for k in range(blocks):
        lines.append(_BLOCK.format(k=k, x=x))
        x = f"out{k}"
    last = blocks - 1
    lines.append(f"  ROOT t = (bf16[4,8]{{1,0}}, s32[4,4]{{1,0}}) tuple(out{last}, neg{last})\n")
    lines.append("}\n\n")
    return "".join(lines)


def measure(n: int) -> dict[str, float]:
    """Seconds per stage for a generated module of about ``n`` instructions."""
    text = generate(n)
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    module = hlo.parse(text)
    times["parse"] = time.perf_counter() - t0
    times["count"] = module.instruction_count()
    t0 = time.perf_counter()
    printed = hlo.to_text(module)
    times["print"] = time.perf_counter() - t0
    assert printed == text
    for name in ("batch-norm-training-upcast", "upcast-all-to-fp32", "neuron-int-matmul-downcast"):
        t0 = time.perf_counter()
        assert hlo.run_passes(module, [name])
        times[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    hlo.to_text(module)
    times["print after"] = time.perf_counter() - t0
    return times


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    args = ap.parse_args()
    stages = ["parse", "print", "batch-norm-training-upcast", "upcast-all-to-fp32",
              "neuron-int-matmul-downcast", "print after"]
    print(f"{'instructions':>12} " + " ".join(f"{s[:12]:>12}" for s in stages)
          + f" {'total s':>9} {'instr/s':>10}")
    for n in args.sizes:
        t = measure(n)
        total = sum(t[s] for s in stages)
        print(f"{int(t['count']):>12} " + " ".join(f"{t[s]:>12.4f}" for s in stages)
              + f" {total:>9.3f} {t['count'] / total:>10.0f}")


if __name__ == "__main__":
    main()
