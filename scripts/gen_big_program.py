#!/usr/bin/env python3
"""Generate a large loop-IR program for scale tests and benchmarks.

``generate_program(n_instructions)`` returns IR text with at least ``n_instructions`` instructions: a chain
of 11-instruction layers (load, weight load, matmul, broadcast bias load, add, tanh, compare, select,
identity load, transposing matmul, store into the next internal tensor), ending in an output store.

    python scripts/gen_big_program.py 10000 -o examples/big_10k.pir
"""

from __future__ import annotations

import argparse
import base64
import sys

import numpy as np

__all__ = ["LAYER_INSTRUCTIONS", "generate_program"]

LAYER_INSTRUCTIONS = 11
_K, _M = 16, 8  # activations are [K, M] (features × batch), weights [K, K]


def _dense(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


def generate_program(n_instructions: int = 10_000, seed: int = 0, n_weights: int = 4) -> str:
    """IR text of a deterministic program with at least ``n_instructions`` instructions."""
    rng = np.random.default_rng(seed)
    layers = max(1, -(-n_instructions // LAYER_INSTRUCTIONS))
    out = ["func @main {", f"  tensor @x : input float32[{_K},{_M}]"]
    for j in range(n_weights):
        w = (rng.standard_normal((_K, _K)) * 0.25).astype(np.float32)
        out.append(f'  tensor @w{j} : const float32[{_K},{_K}] = dense "{_dense(w)}"')
    out.append(f'  tensor @ident : const float32[{_M},{_M}] = dense "{_dense(np.eye(_M))}"')
    out.append(f"  tensor @bias : const float32[1,{_K}] = splat 0.125")
    for i in range(1, layers):
        out.append(f"  tensor @t{i} : internal float32[{_K},{_M}]")
    out.append(f"  tensor @y : output float32[{_K},{_M}]")
    out.append("^bb0:")
    for i in range(layers):
        src = "x" if i == 0 else f"t{i}"
        dst = "y" if i == layers - 1 else f"t{i + 1}"
        f32, f32t = f"float32[{_M},{_K}]", f"float32[{_K},{_M}]"
        out += [
            f"  %a{i} = affine_load @{src} : {f32t}",
            f"  %w{i} = sb_atom_load @w{i % n_weights} : float32[{_K},{_K}]",
            f"  %mm{i} = matmul %a{i}, %w{i} : {f32}",
            f"  %b{i} = sb_atom_load @bias broadcast : {f32}",
            f"  %h{i} = add %mm{i}, %b{i} : {f32}",
            f"  %th{i} = tanh %h{i} : {f32}",
            f"  %m{i} = cmp_gt %th{i}, float32 0.0 : uint8[{_M},{_K}]",
            f"  %s{i} = select %m{i}, %th{i}, float32 0.0 : {f32}",
            f"  %id{i} = sb_atom_load @ident : float32[{_M},{_M}]",
            f"  %t{i} = matmul %s{i}, %id{i} : {f32t}",
            f"  affine_store %t{i}, @{dst}",
        ]
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: ``gen_big_program.py [N] [-o OUT] [--seed S]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=10_000, help="minimum instruction count")
    ap.add_argument("-o", "--output", help="output file (default: stdout)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    text = generate_program(args.n, args.seed)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
