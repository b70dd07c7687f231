"""``pyprecision demo``: a few seconds' tour on bundled data (the README's first command)."""
from __future__ import annotations

import argparse
import tempfile
from importlib import resources
from pathlib import Path

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
    """Print the format table."""
    _section("formats (read from the C core's table)")
    print(format_table())


def show_weight_casts(w: np.ndarray) -> None:
    """Print cast statistics of ``w`` for every format, then the fp8 edge cases."""
    _section(f"a {w.shape[0]}x{w.shape[1]} float32 weight tensor cast to every format "
             "(rne, Neuron-default saturation)")
    head = (f"{'format':10} {'exact':>6} {'rounded':>8} {'overflow':>9} {'underflow':>10} "
            f"{'NaN out':>8} {'inf out':>8} {'max rel err':>12}")
    print(head)
    for f in pp.formats():
        codes = pp.encode(w, f)
        s = cast_stats(w, codes, f)
        print(f"{f.name:10} {s.exact:6d} {s.rounded:8d} {s.overflowed:9d} {s.underflowed:10d} "
              f"{s.nan_out:8d} {s.inf_out:8d} {s.max_rel_error:12.4g}")
    x = np.array([248.0, 464.0, 1.0 + 2.0**-4, 1.0 + 3 * 2.0**-4, np.inf], np.float32)
    print("\nedge cases (CAST_SEMANTICS.md §9), codes with saturate=False / True:")
    for name in ("fp8e4", "fp8e4m3fn", "fp8e5"):
        a = pp.encode(x, name, saturate=False)
        b = pp.encode(x, name, saturate=True)
        pairs = ", ".join(f"{v:g}->0x{c:02x}/0x{d:02x}" for v, c, d in zip(x, a, b, strict=True))
        print(f"  {name:10} {pairs}")


def _data_text(name: str) -> str:
    return resources.files("pyprecision.data").joinpath(name).read_text(encoding="utf-8")


def show_program(flags: list[str]) -> None:
    """Run the sample MLP through the pipeline chosen by ``flags`` and print IR and outputs."""
    from pyprecision import ir
    from pyprecision.emulate import run_ir
    from pyprecision.frontend import parse_flags
    from pyprecision.passes import run_pipeline

    config = parse_flags(flags)
    _section(f"an MLP layer through the auto-cast pipeline: {' '.join(flags)} "
             f"(mode {config.fp32_cast_mode}, gen2)")
    module = ir.parse(_data_text("mlp.pir"), "mlp.pir")
    print("before:")
    print(ir.to_text(module).rstrip())
    x = {"xT": np.array([[0.1, -0.7], [0.33, 0.2], [-1.3, 0.9], [0.01, 2.5]], np.float32)}
    ref = run_ir(module, x)
    stats = run_pipeline(module, config, target="gen2")
    print("after:")
    print(ir.to_text(module).rstrip())
    print("statistics:")
    for key, value in stats.items():
        if value:
            print(f"  {value:8d}  {key}  ({stats.description(key)})")
    out = run_ir(module, x)
    print("emulated output y, fp32 program vs auto-cast program:")
    for name in ref:
        a = np.asarray(ref[name], np.float64)
        b = np.asarray(out[name]).astype(np.float64)
        print(f"  fp32      {np.array2string(a, precision=6, separator=', ')}")
        print(f"  {str(np.asarray(out[name]).dtype):9} {np.array2string(b, precision=6, separator=', ')}")
        print(f"  max rel difference {float(np.max(np.abs(b - a) / np.maximum(np.abs(a), 1e-30))):.3g}")


def show_int_dot() -> None:
    """Print the s32 dot routed through F32 and where it differs from the exact product."""
    from pyprecision import hlo
    from pyprecision.emulate import run_hlo

    _section("an s32 dot routed through F32 (neuron-int-matmul-downcast)")
    module = hlo.parse(_data_text("dot_s32.hlo.txt"), "dot_s32.hlo.txt")
    hlo.run_passes(module, ["neuron-int-matmul-downcast"])
    print(hlo.to_text(module).rstrip())
    rng = np.random.default_rng(7)
    for bound in (2**7, 2**12):
        a = rng.integers(-bound, bound, (4, 16), dtype=np.int32)
        b = rng.integers(-bound, bound, (16, 4), dtype=np.int32)
        (got,) = run_hlo(module, [a, b])
        exact = a.astype(np.int64) @ b.astype(np.int64)
        changed = int(np.count_nonzero(got.astype(np.int64) != exact))
        print(f"  operands in ±2^{int(np.log2(bound))}: {changed} of {got.size} outputs differ "
              f"from the exact integer product (largest |sum| {int(np.abs(exact).max())})")


def _data_path(name: str, workdir: Path) -> str:
    """A bundled data file, copied into the demo's working directory (a real path for the CLI)."""
    target = workdir / name
    target.write_bytes(resources.files("pyprecision.data").joinpath(name).read_bytes())
    return str(target)


def show_verify(workdir: Path) -> None:
    """``pyprecision verify`` on the bundled dumps: one bit-exact, one from a truncating device."""
    from pyprecision.tools.cli import main as cli

    w = _data_path("sample_weights.npy", workdir)
    for title, dump in (("a device dump that matches", "sample_dump_fp8e4m3fn.npy"),
                        ("a device dump with injected faults", "sample_dump_fp8e4m3fn_faulty.npy")):
        _section(f"verify: {title} ({dump})")
        d = _data_path(dump, workdir)
        code = cli(["verify", "--input", w, "--dump", d, "--format", "fp8e4m3fn", "--show", "3"])
        print(f"(exit code {code})")


def show_reencode(workdir: Path) -> None:
    """``pyprecision reencode`` of a small checkpoint made from the sample weights."""
    from pyprecision.io import save_safetensors
    from pyprecision.tools.cli import main as cli

    _section("reencode: a small checkpoint to fp8e4m3fn, norms kept, verified")
    w = sample_weights()
    ckpt = workdir / "model.safetensors"
    save_safetensors(ckpt, {
        "layer0.weight": np.nan_to_num(w, nan=0.0, posinf=0.0, neginf=0.0),
        "layer0.bias": w[0].copy(),
        "layer0.norm.weight": np.ones(64, np.float32),
        "step": np.array([1000], np.int64),
    })
    out = workdir / "model.fp8.safetensors"
    code = cli(["reencode", str(ckpt), "--to", "fp8e4m3fn", "--exclude", "*norm*", "--verify",
                "-q", "-o", str(out)])
    print(f"(exit code {code}; {ckpt.stat().st_size} bytes in, {out.stat().st_size} bytes out)")


def run(args: argparse.Namespace) -> int:
    """``pyprecision demo``: the whole tour; returns the exit code."""
    w = sample_weights()
    show_formats()
    show_weight_casts(w)
    show_program(args.flags.split() if args.flags else ["--auto-cast", "all", "--auto-cast-type", "bf16"])
    show_int_dot()
    with tempfile.TemporaryDirectory(prefix="pyprecision-demo-") as tmp:
        show_verify(Path(tmp))
        show_reencode(Path(tmp))
    print()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    p = sub.add_parser("demo", help="a short tour on bundled sample data")
    p.add_argument("--flags", default=None,
                   help='precision flags for the program part (default: "--auto-cast all")')
    p.set_defaults(func=run)
