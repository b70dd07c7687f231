"""Options of a re-encode and the plan of its outputs (which file goes where, with what dtypes)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from pyprecision.errors import CastError, DumpError, FormatError
from pyprecision.formats import Format
from pyprecision.formats import format as _format
from pyprecision.io import (
    INDEX_SUFFIX,
    TORCH_INDEX_SUFFIX,
    TensorInfo,
    TensorStore,
    is_dir,
    join,
    safetensors_dtype,
    safetensors_name_of_format,
)
from pyprecision.kernel import NAN_POLICIES, ROUNDINGS

__all__ = [
    "ReencodeOptions",
    "tensor_seed",
    "SCALE_SUFFIX",
    "plan_outputs",
    "run_metadata",
    "output_specs",
]

#: The most C-core worker threads a re-encode accepts.
MAX_THREADS = 4096

#: Name suffix of the companion tensor holding a tensor's scale (``--scale amax``).
SCALE_SUFFIX = ".scale"


@dataclass(frozen=True)
class ReencodeOptions:
    """Everything that decides the output bits (plus how to run). See :func:`reencode`."""

    to: str
    rounding: str = "rne"
    saturate: bool | None = None
    nan: str = "ml_dtypes"
    seed: int | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    scale: str | None = None
    output_format: str | None = None
    threads: int | None = None
    verify: bool = False
    overwrite: bool = False
    allow_symlinks: bool = False
    chunk_elements: int = 1 << 20

    def checked(self) -> ReencodeOptions:
        """Validated copy with the format's default saturation and a seed filled in."""
        f = _format(self.to)
        if self.rounding not in ROUNDINGS:
            raise FormatError(f"unknown rounding {self.rounding!r}; valid: {', '.join(ROUNDINGS)}")
        if self.nan not in NAN_POLICIES:
            raise FormatError(f"unknown nan policy {self.nan!r}; valid: {', '.join(NAN_POLICIES)}")
        if self.scale not in (None, "amax"):
            raise FormatError(f"unknown scale {self.scale!r}; valid: amax")
        if self.output_format not in (None, "safetensors", "npz", "pt"):
            raise FormatError(
                f"unknown output format {self.output_format!r}; valid: safetensors, npz, pt"
            )
        if self.threads is not None and (
            isinstance(self.threads, bool)
            or not isinstance(self.threads, int)
            or not 1 <= self.threads <= MAX_THREADS
        ):
            raise CastError(
                f"threads={self.threads!r}: expected an integer from 1 to {MAX_THREADS}"
            )
        if self.seed is not None and self.rounding != "stochastic":
            raise FormatError("--seed is only used with --rounding stochastic")
        seed = self.seed
        if self.rounding == "stochastic" and seed is None:
            import secrets  # only when a seed is drawn

            seed = secrets.randbits(63)
        sat = f.default_saturate if self.saturate is None else bool(self.saturate)
        return ReencodeOptions(
            **{
                **asdict(self),
                "to": f.name,
                "saturate": sat,
                "seed": seed,
                "include": tuple(self.include),
                "exclude": tuple(self.exclude),
            }
        )

    def selects(self, t: TensorInfo) -> bool:
        """Whether tensor ``t`` is re-encoded (floating, matches an include, matches no exclude)."""
        dt = t.dtype
        floating = dt.kind == "f" or (dt.kind == "V" and dt.name.startswith(("float", "bfloat")))
        if not floating:
            return False
        if self.include and not any(fnmatch.fnmatchcase(t.name, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatchcase(t.name, g) for g in self.exclude)


def tensor_seed(seed: int, name: str) -> int:
    """The stochastic-rounding seed of one tensor: the first 8 bytes (little-endian) of
    sha256(f"{seed}:{name}"), so tensors get independent streams and chunking does not matter."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little")


_KIND_EXT = {"safetensors": ".safetensors", "npz": ".npz", "pt": ".pt"}
_STEMS = (".safetensors", ".npz", ".npy", ".pt", ".pth", ".bin")


#: transformers' names: a torch checkpoint ``pytorch_model[-k-of-n].bin`` (+ ``pytorch_model.bin.index.json``)
#: is ``model[-k-of-n].safetensors`` (+ ``model.safetensors.index.json``) in safetensors.
_TORCH_STEM, _SAFE_STEM = "pytorch_model", "model"


def _safetensors_stem(stem: str) -> str:
    """The safetensors name transformers looks for in place of a torch checkpoint's stem."""
    if stem == _TORCH_STEM or stem.startswith(_TORCH_STEM + "-"):
        return _SAFE_STEM + stem[len(_TORCH_STEM) :]
    return stem


def _out_stem(path: str, kind: str) -> str:
    stem = _stem(path)
    return _safetensors_stem(stem) if kind == "safetensors" and path.endswith(".bin") else stem


def _stem(path: str) -> str:
    base = os.path.basename(path)
    for ext in _STEMS:
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def _kind_of(output: str) -> str:
    """The output kind an output file name asks for: .npz, .pt / .pth (torch.save), else safetensors."""
    if output.endswith(".npz"):
        return "npz"
    return "pt" if output.endswith((".pt", ".pth")) else "safetensors"


def plan_outputs(
    store: TensorStore, inputs: Sequence[str], output: str, o: ReencodeOptions
) -> tuple[list[tuple[str, str]], str | None, str]:
    """(input file, output file) pairs, the output index (or None) and the output kind."""
    dir_mode = (
        len(inputs) > 1
        or store.index is not None
        or is_dir(inputs[0])
        or is_dir(output)
        or output.endswith(os.sep)
    )
    if not dir_mode:
        kind = o.output_format or _kind_of(output)
        return [(store.files[0], output)], None, kind
    kind = o.output_format or "safetensors"
    pairs = [(f, join(output, _out_stem(f, kind) + _KIND_EXT[kind])) for f in store.files]
    seen: dict[str, str] = {}
    for fin, fout in pairs:
        if fout in seen:
            raise DumpError(f"{seen[fout]} and {fin} would both be written to {fout}")
        seen[fout] = fin
    index = None
    if store.index_path is not None and kind == "safetensors":
        name = os.path.basename(store.index_path)
        if name.endswith(
            TORCH_INDEX_SUFFIX
        ):  # pytorch_model.bin.index.json -> model.safetensors...
            name = _safetensors_stem(name[: -len(TORCH_INDEX_SUFFIX)]) + INDEX_SUFFIX
        index = join(output, name)
    return pairs, index, kind


def run_metadata(o: ReencodeOptions, source: str) -> dict[str, str]:
    """The ``pyprecision.reencode`` metadata entry: what was done, with which options."""
    from pyprecision import __version__

    what = {
        "tool": "pyprecision reencode",
        "version": __version__,
        "format": o.to,
        "rounding": o.rounding,
        "saturate": o.saturate,
        "nan": o.nan,
        "seed": o.seed if o.rounding == "stochastic" else None,
        "scale": o.scale,
        "include": list(o.include),
        "exclude": list(o.exclude),
        "source": source,
    }
    return {"pyprecision.reencode": json.dumps(what, sort_keys=True)}


def output_specs(
    tensors: list[TensorInfo], o: ReencodeOptions, f: Format
) -> list[tuple[str, str, tuple[int, ...], str | None]]:
    """(name, safetensors dtype, shape, format or None) of every output tensor of one file."""
    specs: list[tuple[str, str, tuple[int, ...], str | None]] = []
    for t in tensors:
        if o.selects(t):
            specs.append((t.name, safetensors_name_of_format(f), t.shape, f.name))
            if o.scale:
                specs.append((t.name + SCALE_SUFFIX, "F32", (), None))
        elif t.format is not None:
            specs.append((t.name, safetensors_name_of_format(t.format), t.shape, t.format))
        else:
            specs.append((t.name, safetensors_dtype(t.dtype), t.shape, None))
    return specs
