#!/usr/bin/env python3
"""Write the same JAX modules in every form ``pyprecision.hlo.load`` reads (issue 23).

JAX makes the data; no test imports JAX to *produce* an expected value. Run from the repository
root (file names in the stack-frame tables are then repository-relative)::

    . /work/venv/bin/activate && python scripts/gen_load_artifacts.py

writes ``tests/data/load/``, per model ``<name>`` (the models of ``scripts/lower_models.py``; their
inputs and XLA:CPU outputs are ``tests/data/models/jax-0.10.2/<name>.npz``):

* ``<name>.hlo.pb`` — ``jax.jit(f).lower(*args).compiler_ir("hlo").as_serialized_hlo_module_proto()``,
  the HloModuleProto binary (what neuronx-cc is given as ``.hlo.pb``);
* ``<name>.hlo.pb.gz`` — the same bytes gzipped (mtime 0, so the file is reproducible);
* ``<name>.hlo.txt`` — **jaxlib's print of that proto**: ``XlaComputation(pb).as_hlo_module()
  .to_string(short_parsable + print_metadata)``, i.e. the reference text with ``metadata={...}`` and
  the stack-frame tables (the script checks it equals ``as_text(dialect="hlo", debug_info=True)``);
* ``<name>.stablehlo.mlir`` — ``as_text(debug_info=True)``: StableHLO with its ``loc(...)``
  (the script checks that jaxlib converts it back to the same HLO text);
* ``<name>.stablehlo.mlirbc`` for the first model — the same StableHLO as MLIR bytecode.

``bad/compile_options.pb`` (a real protobuf of another message, XLA's CompileOptionsProto), and
``manifest.json`` (versions, and which forms jaxlib itself prints identically).
"""
from __future__ import annotations

import gzip
import io
import json
import os
import sys
import types

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jaxlib  # noqa: E402
import numpy as np  # noqa: E402
from jax._src import source_info_util  # noqa: E402
from jax._src.lib import hlo as xla_hlo  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402
from jaxlib import _hlo  # noqa: E402


def _import_relative(name: str) -> types.ModuleType:
    """Import scripts/<name>.py compiled under its repository-relative file name, so that the
    stack-frame tables of the artifacts name ``scripts/<name>.py``, not this checkout's path."""
    path = os.path.join("scripts", f"{name}.py")
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    with open(path, encoding="utf-8") as fh:
        exec(compile(fh.read(), path, "exec"), mod.__dict__)  # noqa: S102
    return mod


source_info_util.register_exclusion(os.path.dirname(os.path.abspath(__file__)) + "/gen_load")
_models = _import_relative("lower_models")
MODELS, MatMul = _models.MODELS, _models.MatMul

#: dot, bf16, while loop (scan), convolution + reduce-window, reduce + transpose, conditional,
#: constants printed in full
NAMES = ("mlp_param", "bf16_mlp", "scan_rnn", "cnn", "encoder_block", "cond_model", "mlp_const")
OUT = os.path.join("tests", "data", "load")


def _args(name: str) -> list[np.ndarray]:
    """The model's inputs exactly as tests/data/models/jax-0.10.2/<name>.npz stores them."""
    m = next(x for x in MODELS if x.name == name)
    r = np.random.RandomState(sum(map(ord, name)))  # gen_lower_models' seed
    return [np.asarray(a) for a in m.make_args(r)]


def _print(comp: object) -> str:
    opts = xla_hlo.HloPrintOptions.short_parsable()
    opts.print_metadata = True
    return comp.as_hlo_module().to_string(opts)  # type: ignore[attr-defined]


def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _gzip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def run(name: str, bytecode: bool) -> dict[str, object]:
    """Write one model's forms; return its manifest entry."""
    m = next(x for x in MODELS if x.name == name)
    lowered = jax.jit(m.build(MatMul(False))).lower(*_args(name))
    pb = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    text = _print(_hlo.XlaComputation(pb))
    if text != lowered.as_text(dialect="hlo", debug_info=True):
        raise SystemExit(f"{name}: jaxlib's print of the proto differs from as_text(hlo)")
    if "{...}" in text:
        raise SystemExit(f"{name}: a constant is elided")
    mlir = lowered.as_text(debug_info=True)
    from_mlir = _print(xla_client._xla.mlir.mlir_module_to_xla_computation(mlir))
    files = {"proto": f"{name}.hlo.pb", "gzip": f"{name}.hlo.pb.gz", "text": f"{name}.hlo.txt",
             "stablehlo": f"{name}.stablehlo.mlir"}
    _write(os.path.join(OUT, files["proto"]), pb)
    _write(os.path.join(OUT, files["gzip"]), _gzip(pb))
    _write(os.path.join(OUT, files["text"]), text.encode())
    _write(os.path.join(OUT, files["stablehlo"]), mlir.encode())
    if bytecode:
        from jax._src.interpreters import mlir as jax_mlir
        bc = jax_mlir.module_to_bytecode(lowered.compiler_ir("stablehlo"))
        files["bytecode"] = f"{name}.stablehlo.mlirbc"
        _write(os.path.join(OUT, files["bytecode"]), bc)
    return {"files": files, "proto_bytes": len(pb),
            "stablehlo_converts_to_same_text": from_mlir == text}


def main() -> int:
    """Write every model in NAMES and the manifest."""
    os.makedirs(os.path.join(OUT, "bad"), exist_ok=True)
    # a real protobuf of another message: XLA's CompileOptionsProto
    _write(os.path.join(OUT, "bad", "compile_options.pb"),
           xla_client.CompileOptions().SerializeAsString())
    manifest = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
                "models": {n: run(n, i == 0) for i, n in enumerate(NAMES)}}
    _write(os.path.join(OUT, "manifest.json"),
           (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
