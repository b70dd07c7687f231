"""`pyprecision reencode` at the command line against a plain safetensors + ml_dtypes script, as
whole processes, in the same run (issue 16): a ~90 MB float32 checkpoint shaped like a BERT-small
(all-MiniLM-L6-v2: 100 tensors, 384-1536 wide, a 30522 x 384 embedding) made from random data,
re-encoded to bf16 and to fp8e4m3fn, best of N wall times (and
of N user + system CPU times), the commands alternated. Also
`python -c "import pyprecision"`, `pyprecision --help` and `python -c pass`.

    python bench/bench_cli_reencode.py [--repeat 5] [--dir DIR]

The checkpoint and the outputs go to DIR (default: the system temp dir). Where the tree this
script lives in has its C core built in place (`python setup_build.py`), the tree is put first on
PYTHONPATH for every process, its bytecode compiled first (as pip does at install time); otherwise
the processes run the installed package (`pip install .`), from a directory outside the tree. A
benchmark, never a test."""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

PLAIN = """\
import sys
import ml_dtypes
from safetensors.numpy import load_file, save_file
src, dst, fmt = sys.argv[1:]
dt = {"bf16": ml_dtypes.bfloat16, "fp8e4m3fn": ml_dtypes.float8_e4m3fn}[fmt]
save_file({k: v.astype(dt) for k, v in load_file(src).items()}, dst)
"""


def bert_small() -> dict[str, tuple[int, ...]]:
    """Names and shapes of a 6-layer, 384-wide BERT (100 tensors)."""
    h, f = 384, 1536
    shapes: dict[str, tuple[int, ...]] = {"embeddings.word_embeddings.weight": (30522, h),
                                          "embeddings.position_embeddings.weight": (512, h),
                                          "embeddings.LayerNorm.weight": (h,),
                                          "embeddings.LayerNorm.bias": (h,)}
    for i in range(6):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            shapes[p + f"attention.self.{n}.weight"] = (h, h)
            shapes[p + f"attention.self.{n}.bias"] = (h,)
        shapes[p + "attention.output.dense.weight"] = (h, h)
        shapes[p + "attention.output.dense.bias"] = (h,)
        shapes[p + "attention.output.LayerNorm.weight"] = (h,)
        shapes[p + "attention.output.LayerNorm.bias"] = (h,)
        shapes[p + "intermediate.dense.weight"] = (f, h)
        shapes[p + "intermediate.dense.bias"] = (f,)
        shapes[p + "output.dense.weight"] = (h, f)
        shapes[p + "output.dense.bias"] = (h,)
        shapes[p + "output.LayerNorm.weight"] = (h,)
        shapes[p + "output.LayerNorm.bias"] = (h,)
    return shapes


def tree_is_built(root: Path) -> bool:
    """Whether root's pyprecision has its C core built in place (else: the installed package)."""
    return any((root / "pyprecision").glob("_core*.so")) or any(
        (root / "pyprecision").glob("_core*.pyd"))


def package_env() -> tuple[dict[str, str], Path]:
    """The environment of the timed processes and the pyprecision package they import: the tree
    when it is built in place, else the installed one (the tree never shadows it: every process
    runs from the temp dir, and the tree is not on PYTHONPATH)."""
    env = dict(os.environ)
    if tree_is_built(ROOT):
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [q for q in [env.get("PYTHONPATH")] if q])
    else:
        keep = [q for q in env.get("PYTHONPATH", "").split(os.pathsep)
                if q and Path(q).resolve() != ROOT]
        env["PYTHONPATH"] = os.pathsep.join(keep)
    probe = subprocess.run([sys.executable, "-c", "import pyprecision._core, pyprecision;"
                            " print(pyprecision.__file__)"], env=env, capture_output=True,
                           text=True, cwd=tempfile.gettempdir())
    if probe.returncode != 0:
        sys.exit("bench_cli_reencode: no usable pyprecision (build the tree in place with "
                 "`python setup_build.py`, or `pip install .`): "
                 + (probe.stderr.strip().splitlines() or ["?"])[-1])
    return env, Path(probe.stdout.strip()).parent


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One run of a whole process: (wall seconds, user + system CPU seconds of the child); fails
    loudly if the command fails."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> None:
    """Make the checkpoint, time the commands alternately, print one table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    from safetensors.numpy import save_file

    env, pkg = package_env()
    # What an installed package has: pip compiles its bytecode at install time. A tree used in
    # place under PYTHONDONTWRITEBYTECODE=1 (set on some machines) would otherwise recompile every
    # module of pyprecision in every process, ~60 ms, and measure that instead.
    import compileall

    if pkg.resolve() == (ROOT / "pyprecision").resolve():
        compileall.compile_dir(str(pkg), quiet=1)
    cli = shutil.which("pyprecision", path=str(Path(sys.executable).parent)) or "pyprecision"
    work = Path(tempfile.mkdtemp(prefix="pp_cli_", dir=a.dir))
    try:
        rng = np.random.default_rng(0)
        ckpt = {k: (rng.standard_normal(s) * 0.05).astype(np.float32) for k, s in bert_small().items()}
        src = work / "model.safetensors"
        save_file(ckpt, str(src))
        plain = work / "plain.py"
        plain.write_text(PLAIN)
        size = src.stat().st_size
        print(f"checkpoint: {len(ckpt)} tensors, {size / 1e6:.1f} MB float32 in {work.parent}; "
              f"load {os.getloadavg()[0]:.2f}; best of {a.repeat} wall times; pyprecision from {pkg}")
        py = sys.executable
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "import pyprecision": [py, "-c", "import pyprecision"],
            "pyprecision --help": [cli, "--help"],
        }
        for fmt in ("bf16", "fp8e4m3fn"):
            out = str(work / f"out_{fmt}.safetensors")
            cases[f"pyprecision reencode {fmt}"] = [cli, "reencode", str(src), "-o", out, "--to", fmt,
                                                    "--force", "-q"]
            cases[f"plain script {fmt}"] = [py, str(plain), str(src), str(work / f"plain_{fmt}"), fmt]
        best = dict.fromkeys(cases, float("inf"))
        cpu = dict.fromkeys(cases, float("inf"))
        for _ in range(a.repeat):
            for name, cmd in cases.items():
                w, c = timed(cmd, env)
                best[name], cpu[name] = min(best[name], w), min(cpu[name], c)
        print(f"  {'command':<30} {'wall s':>7} {'cpu s':>7}")
        for name, t in best.items():
            extra = ""
            if name.startswith("pyprecision reencode"):
                fmt = name.split()[-1]
                extra = (f"   plain / cli: wall {best[f'plain script {fmt}'] / t:.2f}, "
                         f"cpu {cpu[f'plain script {fmt}'] / cpu[name]:.2f}")
            print(f"  {name:<30} {t:7.3f} {cpu[name]:7.3f}{extra}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
