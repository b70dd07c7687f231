"""``pyprecision demo``: a few seconds' tour on bundled data (the README's first command)."""
from __future__ import annotations

import argparse
from importlib import resources

import numpy as np

import pyprecision as pp
from pyprecision.kernel import cast_stats
from pyprecision.tools.formats_cmd import format_table


def _section(title: str) -> None:
    print()
    print(f"== {title} " + "=" * max(0, 72 - len(title)))


def sample_weights() -> np.ndarray:
    """The bundled 64x64 float32 sample weight tensor."""
    with resources.files("pyprecision.data").joinpath("sample_weights.npy").open("rb") as fh:
        return np.load(fh, allow_pickle=False)


def show_formats() -> None:
    _section("formats (read from the C core's table)")
    print(format_table())


def show_weight_casts(w: np.ndarray) -> None:
    _section(f"a {w.shape[0]}x{w.shape[1]} float32 weight tensor cast to every format (rne, Neuron-default saturation)")
    head = f"{'format':10} {'exact':>6} {'rounded':>8} {'overflow':>9} {'underflow':>10} {'NaN out':>8} {'inf out':>8} {'max rel err':>12}"
    print(head)
    for f in pp.formats():
        codes = pp.encode(w, f)
        s = cast_stats(w, codes, f)
        print(f"{f.name:10} {s.exact:6d} {s.rounded:8d} {s.overflowed:9d} {s.underflowed:10d} "
              f"{s.nan_out:8d} {s.inf_out:8d} {s.max_rel_error:12.4g}")
    x = np.array([248.0, 464.0, 1.0 + 2.0**-4, 1.0 + 3 * 2.0**-4, np.inf], np.float32)
    print("\nedge cases (CAST_SEMANTICS.md §9), codes with saturate=False / True:")
    for f in ("fp8e4", "fp8e4m3fn", "fp8e5"):
        a = pp.encode(x, f, saturate=False)
        b = pp.encode(x, f, saturate=True)
        pairs = ", ".join(f"{v:g}->0x{c:02x}/0x{d:02x}" for v, c, d in zip(x, a, b))
        print(f"  {f:10} {pairs}")


def run(args: argparse.Namespace) -> int:
    w = sample_weights()
    show_formats()
    show_weight_casts(w)
    print()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="a short tour on bundled sample data")
    p.set_defaults(func=run)
