#!/usr/bin/env python3
"""Generate real-model HLO modules (and XLA:CPU's outputs for them) with JAX, for issue 11.

JAX is a tool for *making* data here, never a test or runtime dependency of pyprecision::

    /work/jaxvenv/bin/python scripts/gen_lower_models.py --out tests/data/models

writes ``<out>/jax-<version>/`` with, per model ``<name>`` (the models are in
``scripts/lower_models.py``):

* ``<name>.hlo.txt`` — the unoptimized module, ``jax.jit(f).lower(*args).as_text(dialect="hlo")``
  (constants printed in full; the script fails if any is elided as ``{...}``);
* ``<name>.debug.hlo.txt`` — the same with ``debug_info=True`` (``metadata={op_name, source_file,
  source_line...}`` and the stack-frame tables), for locations;
* ``<name>.npz`` — ``in<i>`` (the ENTRY parameters in order), ``out<i>`` (XLA:CPU's outputs with
  ``--xla_allow_excess_precision=false``, a tuple result flattened in order), for float models
  ``ref_bf16mm_out<i>`` (the same function with every matmul/conv operand rounded to bf16 and f32
  accumulation, also computed by XLA:CPU), and for ``bf16_mlp`` ``excess_out<i>`` (XLA:CPU's default,
  excess precision on, computed in a subprocess since XLA_FLAGS is read once per process);

and ``manifest.json``. The npz convention is tests/data/hlo's (``scripts/hlo_npz.py``).
``bert_base`` is HLO text only (gzipped when over 2 MB). ``--only a,b`` regenerates a subset.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

NUMERIC_FLAGS = "--xla_allow_excess_precision=false"
EXCESS_CHILD = "--excess-child"  # internal: run one model with XLA's default flags
if EXCESS_CHILD not in sys.argv:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {NUMERIC_FLAGS}").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import jaxlib  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from hlo_npz import describe, instruction_count, load_npz, opcodes, save_npz  # noqa: E402
from lower_models import MODELS, MatMul, Model  # noqa: E402

GZIP_OVER = 2 * 1024 * 1024
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def _flatten(out: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out)]


def _args(m: Model) -> list[np.ndarray]:
    r = np.random.RandomState(sum(map(ord, m.name)))  # deterministic per model
    return [np.asarray(a) for a in m.make_args(r)]


def _write(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _write_text(outdir: str, name: str, text: str) -> str:
    if len(text) > GZIP_OVER:
        fname = f"{name}.gz"
        fd, tmp = tempfile.mkstemp(dir=outdir)
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(text.encode())
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(outdir, fname))
        return fname
    _write(os.path.join(outdir, name), text)
    return name


def excess_outputs(m: Model, args: list[np.ndarray]) -> list[np.ndarray]:
    """XLA:CPU's outputs with its default flags (excess precision on), from a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        save_npz(src, {f"in{i}": a for i, a in enumerate(args)})
        env = dict(os.environ)
        env["XLA_FLAGS"] = env["XLA_FLAGS"].replace(NUMERIC_FLAGS, "").strip()
        subprocess.run([sys.executable, os.path.abspath(__file__), EXCESS_CHILD, m.name, src, dst],
                       check=True, env=env)
        got = load_npz(dst)
    return [got[f"out{i}"] for i in range(len(got))]


def _excess_child(name: str, src: str, dst: str) -> int:
    assert "excess_precision" not in os.environ.get("XLA_FLAGS", "")
    m = next(x for x in MODELS if x.name == name)
    ins = load_npz(src)
    args = [ins[f"in{i}"] for i in range(len(ins))]
    outs = _flatten(jax.jit(m.build(MatMul(False)))(*args))
    save_npz(dst, {f"out{i}": a for i, a in enumerate(outs)})
    return 0


def run_model(m: Model, outdir: str) -> dict[str, Any]:
    """Lower and run one model; write its files; return its manifest entry."""
    args = _args(m)
    fn = jax.jit(m.build(MatMul(False)))
    lowered = fn.lower(*args)
    text = lowered.as_text(dialect="hlo")
    if "{...}" in text:
        raise SystemExit(f"{m.name}: a constant is elided as {{...}} in the lowered text")
    files = {"hlo": _write_text(outdir, f"{m.name}.hlo.txt", text)}
    entry: dict[str, Any] = {"description": m.desc, "files": files, "notes": m.notes,
                             "instructions": instruction_count(text), "opcodes": opcodes(text),
                             "hlo_bytes": len(text)}
    if m.text_only:
        entry.update(inputs=[describe(a) for a in args], outputs=[], text_only=True)
        return entry
    try:  # newer JAX: the same text with metadata={...} (op_name, source_file, source_line)
        debug = lowered.as_text(dialect="hlo", debug_info=True)
    except TypeError:  # JAX 0.4.x has no debug_info
        debug = None
    else:  # FileNames: the repository's path, not the checkout's ("scripts/lower_models.py")
        debug = debug.replace(f'"{REPO_ROOT}/', '"')
    if debug is not None:
        files["debug"] = _write_text(outdir, f"{m.name}.debug.hlo.txt", debug)
    outs = _flatten(fn(*args))
    arrays = {f"in{i}": a for i, a in enumerate(args)}
    arrays.update({f"out{i}": a for i, a in enumerate(outs)})
    if m.ref_bf16mm:
        ref = _flatten(jax.jit(m.build(MatMul(True)))(*args))
        arrays.update({f"ref_bf16mm_out{i}": a for i, a in enumerate(ref)})
        entry["ref_bf16mm_max_abs_diff"] = [float(np.max(np.abs(r.astype(np.float64)
                                                                 - o.astype(np.float64))))
                                            for r, o in zip(ref, outs, strict=True)]
    if m.excess:
        exc = excess_outputs(m, args)
        arrays.update({f"excess_out{i}": a for i, a in enumerate(exc)})
        entry["excess_elements_differ"] = [int(np.sum(e.view(np.uint16) != o.view(np.uint16)))
                                           for e, o in zip(exc, outs, strict=True)]
    files["data"] = f"{m.name}.npz"
    save_npz(os.path.join(outdir, files["data"]), arrays)
    entry.update(inputs=[describe(a) for a in args], outputs=[describe(a) for a in outs],
                 ref_bf16mm=m.ref_bf16mm, excess=m.excess, text_only=False)
    return entry


def main(argv: list[str] | None = None) -> int:
    """Generate the models named by ``--only`` (default: all) into ``--out``/jax-<version>/."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == EXCESS_CHILD:
        return _excess_child(*argv[1:4])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/data/models", help="parent of jax-<version>/")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ns = ap.parse_args(argv)
    outdir = os.path.join(ns.out, f"jax-{jax.__version__}")
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "manifest.json")
    manifest: dict[str, Any] = {
        "generator": "scripts/gen_lower_models.py (models: scripts/lower_models.py)",
        "versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
                     "numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
                     "python": sys.version.split()[0]},
        "backend": jax.default_backend(),
        "xla_flags": NUMERIC_FLAGS,
        "excess_xla_flags": "(none: XLA's default, --xla_allow_excess_precision=true)",
        "npz_convention": ("in<i>/out<i>/ref_bf16mm_out<i>/excess_out<i>; bfloat16 stored as "
                           "uint16 bits, float8_* as uint8 bits; __dtypes__ = JSON {key: dtype}"),
        "modules": {},
    }
    only = {s for s in ns.only.split(",") if s}
    if only and os.path.exists(path):
        with open(path) as fh:
            manifest["modules"] = json.load(fh)["modules"]
    for m in MODELS:
        if only and m.name not in only:
            continue
        entry = manifest["modules"][m.name] = run_model(m, outdir)
        print(f"{m.name}: {entry['instructions']} instructions, {len(entry['outputs'])} outputs")
    _write(path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


def add_models(models: list[Model], generator: str, description: str,
               argv: list[str] | None = None) -> int:
    """The ``main`` of a script that adds models to the manifest this script wrote (its versions
    and flags are theirs): generate ``models`` (``--only``: a subset) into ``--out``/jax-<version>/
    and merge each entry, marked ``"generator": generator``, into that manifest."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", default="tests/data/models", help="parent of jax-<version>/")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ns = ap.parse_args(argv)
    outdir = os.path.join(ns.out, f"jax-{jax.__version__}")
    path = os.path.join(outdir, "manifest.json")
    with open(path) as fh:
        manifest = json.load(fh)
    if manifest["versions"]["jax"] != jax.__version__:
        raise SystemExit(f"{path} was written by jax {manifest['versions']['jax']}")
    only = {s for s in ns.only.split(",") if s}
    for m in models:
        if only and m.name not in only:
            continue
        entry = run_model(m, outdir)
        entry["generator"] = generator
        manifest["modules"][m.name] = entry
        print(f"{m.name}: {entry['instructions']} instructions, {len(entry['outputs'])} outputs, "
              f"opcodes {sorted(entry['opcodes'])}")
    _write(path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
