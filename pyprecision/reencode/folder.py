"""A model folder re-encoded whole: the files beside the weights come along, the config names the new dtype.

A Hugging Face model folder holds the weights (``*.safetensors``, maybe sharded with an index) next to
files a loader needs as much: ``config.json``, the tokenizer files, ``generation_config.json``, a
README, sub-folders such as sentence-transformers' ``1_Pooling/``. When the input of a re-encode is a
directory, every such file is copied unchanged into the output, atomically, and ``config.json``'s
``torch_dtype`` (and ``dtype``, the newer spelling, at any depth) is set to the new format when a
model can run in it (bf16, fp16, fp32r; ``torch_dtype`` is added when the config names none); an fp8
folder's config keeps its dtype, which transformers upcasts the weights to on load, or gets the one
the weights were re-encoded from when it names none — so ``from_pretrained(OUT)`` finds a complete
model that loads (docs/decisions/reencode.md, R1, R3). The summary says what was done to the config.

Not copied: the tensor files being re-encoded and their index (they are written anew), weights of
the same model in another framework's format (``pytorch_model.bin``, ``*.pt``, ``*.pth``, ``*.h5``,
``*.msgpack``, ``*.ckpt``, ``*.onnx``, ``*.gguf``: copied, they would make the output hold two
different models, and a loader may pick the old one), hidden directories (``.git``, ``.cache``), and
this package's own temporaries and markers. Each is listed in the summary as skipped, with why.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyprecision.errors import DumpError
from pyprecision.formats import Format
from pyprecision.io import (
    INCOMPLETE_MARKER,
    TEMP_TAG,
    TORCH_INDEX_SUFFIX,
    OutputDirectory,
    atomic_file,
    exists,
    find_files,
    is_remote,
    join,
    open_binary,
    read_bytes,
)

__all__ = ["FolderPlan", "plan_folder", "copy_folder", "config_with_dtype", "refuse_occupied",
           "upcast_dtype",
           "CONFIG_DTYPE_NAMES", "OTHER_WEIGHTS"]

#: The dtype name ``config.json`` gets for each format a model can be *run* in: transformers makes
#: it torch's default dtype while building the model (``torch.set_default_dtype``), which refuses
#: the fp8 dtypes ("couldn't find storage object Float8_e4m3fnStorage", transformers 5.24, torch
#: 2.9). An fp8 folder therefore keeps the config's dtype, and transformers upcasts the fp8 weights
#: to it on load — exactly, since every fp8 value is a float16/bfloat16/float32 value.
CONFIG_DTYPE_NAMES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "fp32r": "float32",  # stored as float32 with the low 13 mantissa bits zero
}

#: Suffixes of weight files in other frameworks' formats: never copied into a re-encoded folder.
OTHER_WEIGHTS = (".bin", ".pt", ".pth", ".h5", ".msgpack", ".ckpt", ".onnx", ".gguf", ".tflite")

#: The config keys that name a model's dtype (``dtype`` is transformers ≥ 4.56's spelling).
_DTYPE_KEYS = ("torch_dtype", "dtype")


@dataclass
class FolderPlan:
    """What a directory re-encode does beside the tensors: files copied, skipped, config rewritten."""

    source: str
    copy: list[str] = field(default_factory=list)  # relative paths, copied unchanged
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why)
    config: str | None = None  # relative path of the config.json whose dtype is rewritten


def _ours(name: str) -> bool:
    return name == INCOMPLETE_MARKER or (TEMP_TAG in name and name.endswith(".tmp"))


def _why_skipped(rel: str) -> str | None:
    """Why the folder's file ``rel`` is not copied (None: it is copied)."""
    n = rel.rsplit("/", 1)[-1]
    if n.endswith((".safetensors", ".npz", ".npy")) or n.endswith(".safetensors.index.json"):
        return "a tensor file this re-encode does not read"
    if n.endswith(OTHER_WEIGHTS):
        return "weights in another format (the output would hold two models)"
    if n.endswith(TORCH_INDEX_SUFFIX):  # its shards are not copied: it would name missing files
        return "the index of weights in another format"
    return None


def _add(plan: FolderPlan, rel: str) -> None:
    why = _why_skipped(rel)
    if why is not None:
        plan.skipped.append((rel, why))
        return
    plan.copy.append(rel)
    if rel == "config.json":
        plan.config = rel


def _plan_remote(source: str, tensor_files: Iterable[str]) -> FolderPlan:
    """plan_folder for a prefix of an object store (no links, no modes: objects only)."""
    base = source.rstrip("/")
    taken = {f[len(base) + 1 :] for f in map(str, tensor_files) if f.startswith(base + "/")}
    plan = FolderPlan(source=base)
    hidden: set[str] = set()
    for rel in find_files(base):
        parts = rel.split("/")
        dot = next((i for i, part in enumerate(parts[:-1]) if part.startswith(".")), None)
        if dot is not None:
            hidden.add("/".join(parts[: dot + 1]) + "/")
        elif not _ours(parts[-1]) and rel not in taken:
            _add(plan, rel)
    plan.skipped += [(h, "hidden directory") for h in sorted(hidden)]
    return plan


def plan_folder(
    source: str, tensor_files: Iterable[str], *, allow_symlinks: bool = False
) -> FolderPlan:
    """Walk the input directory ``source`` (or a prefix of an object store): which non-tensor files
    a re-encode copies, which it skips.

    ``tensor_files`` are the files the re-encode reads (shards and index), by path. A symbolic link
    leading out of ``source`` is refused (DumpError) unless ``allow_symlinks``, as for the shards."""
    if is_remote(source):
        return _plan_remote(source, tensor_files)
    root = Path(source)
    real_root = root.resolve()
    taken = {Path(f).resolve() for f in tensor_files}
    plan = FolderPlan(source=os.fspath(source))
    for dirpath, dirnames, filenames in os.walk(root, followlinks=allow_symlinks):
        d = Path(dirpath)
        hidden = sorted(n for n in dirnames if n.startswith("."))
        for n in hidden:
            plan.skipped.append(((d / n).relative_to(root).as_posix() + "/", "hidden directory"))
        dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
        for n in sorted(filenames):
            p = d / n
            rel = p.relative_to(root).as_posix()
            if _ours(n):
                continue
            if p.resolve() in taken:
                continue
            if not allow_symlinks and p.is_symlink():
                try:
                    p.resolve().relative_to(real_root)
                except ValueError:
                    raise DumpError(
                        f"{p}: a symbolic link leading out of {source} "
                        "(pass allow_symlinks=True / --allow-symlinks to follow it)"
                    ) from None
            if not p.is_file():
                plan.skipped.append((rel, "not a regular file"))
            else:
                _add(plan, rel)
    return plan


def _retag(node: Any, name: str) -> int:
    """Set every dtype key of ``node`` (at any depth) to ``name``; how many were set."""
    n = 0
    if isinstance(node, dict):
        for k, v in node.items():
            if k in _DTYPE_KEYS and isinstance(v, str):
                node[k] = name
                n += 1
            else:
                n += _retag(v, name)
    elif isinstance(node, list):
        for v in node:
            n += _retag(v, name)
    return n


#: The torch dtype a model's fp8 weights are upcast to, by the dtype they were re-encoded from.
_UPCAST = {"float32": "float32", "float64": "float32", "bfloat16": "bfloat16", "float16": "float16",
           "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def refuse_occupied(out: str, written: list[str]) -> None:
    """DumpError naming the output folder ``out`` (and the first of ``written`` in it) when any of
    the files a re-encode would write there exists (R3)."""
    there = [w for w in written if exists(w)]
    if there:
        first = there[0] if is_remote(out) else os.path.relpath(there[0], out)
        more = f" and {len(there) - 1} more of the files it would write" if len(there) > 1 else ""
        raise DumpError(f"{out}: the output folder already exists and holds {first}{more} (pass "
                        "overwrite=True / --force to replace them, or choose another output folder)")


def upcast_dtype(in_dtypes: list[str]) -> str:
    """The dtype an fp8 folder's config names (R3): the one the weights were re-encoded from when
    they all had one, else float32 (every bf16/fp16 value is a float32 value)."""
    names = {_UPCAST.get(d, "float32") for d in in_dtypes}
    return names.pop() if len(names) == 1 else "float32"


def _dtype_key(cfg: Any) -> str:
    """The key a config without one gets: ``dtype`` for transformers ≥ 5's configs, else
    ``torch_dtype`` (read by transformers 4 and 5 alike)."""
    version = str(cfg.get("transformers_version", "")) if isinstance(cfg, dict) else ""
    major = version.split(".")[0]
    return "dtype" if major.isdigit() and int(major) >= 5 else "torch_dtype"


def _named(node: Any) -> list[str]:
    """Every dtype value the config names, at any depth."""
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in _DTYPE_KEYS and isinstance(v, str):
                out.append(v)
            else:
                out += _named(v)
    elif isinstance(node, list):
        for v in node:
            out += _named(v)
    return out


def config_with_dtype(text: str, where: str, f: Format,
                      upcast: str = "float32") -> tuple[str | None, str]:
    """``config.json``'s new text (None: copied unchanged) and a note saying what was done (R3).

    bf16/fp16/fp32r: every dtype key is set to the dtype the model now runs in, or ``torch_dtype``
    is added when the config names none. fp8: a config that names a dtype keeps it (transformers
    upcasts the fp8 weights to it on load); one that names none gets ``upcast``, since without it
    transformers takes the weights' own fp8 dtype as torch's default and fails ("couldn't find
    storage object Float8_e4m3fnStorage")."""
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DumpError(f"{where}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    old = _named(cfg)
    was = f" (was {', '.join(dict.fromkeys(old))})" if old else ""
    name = CONFIG_DTYPE_NAMES.get(f.name)
    if name is None:  # fp8: a model cannot run in it
        if old:
            return None, (f"dtype {', '.join(dict.fromkeys(old))} kept: transformers upcasts the "
                          f"{f.name} weights to it on load")
        if not isinstance(cfg, dict):
            return None, "left unchanged (not a JSON object)"
        key = _dtype_key(cfg)
        cfg[key] = upcast
        return (json.dumps(cfg, indent=2, ensure_ascii=False) + "\n",
                f"{key} set to {upcast} (it named no dtype): transformers upcasts the {f.name} "
                f"weights to it on load")
    if _retag(cfg, name) == 0:
        if not isinstance(cfg, dict):
            return None, "left unchanged (not a JSON object)"
        key = _dtype_key(cfg)
        cfg[key] = name
        return (json.dumps(cfg, indent=2, ensure_ascii=False) + "\n",
                f"{key} set to {name} (it named no dtype)")
    return json.dumps(cfg, indent=2, ensure_ascii=False) + "\n", f"dtype set to {name}{was}"


def copy_folder(
    plan: FolderPlan,
    out: str,
    d: OutputDirectory,
    f: Format,
    *,
    encoded: bool,
    overwrite: bool,
    inputs: list[Path | str],
    upcast: str = "float32",
) -> list[str]:
    """Copy ``plan``'s files into the output directory ``out`` (published through ``d``), with the
    config's dtype rewritten when ``encoded`` (at least one tensor was re-encoded; ``upcast``: the
    dtype an fp8 config names, :func:`upcast_dtype`). Returns notes for the summary: what was done
    to the config, always."""
    notes: list[str] = []
    for rel in plan.copy:
        src = join(plan.source, rel)
        dst = join(out, rel)
        parent = os.path.dirname(dst)
        if not is_remote(dst) and not os.path.isdir(parent):
            d.made_dir(parent)
        replaced = exists(dst)
        body: bytes | None = None
        if rel == plan.config and not encoded:
            notes.append(f"{rel}: unchanged (no tensor was re-encoded)")
        elif rel == plan.config:
            try:
                text = read_bytes(src).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DumpError(f"{src}: not UTF-8 text: {exc.reason}") from None
            new, note = config_with_dtype(text, src, f, upcast)
            if new is not None:
                body = new.encode("utf-8")
            notes.append(f"{rel}: {note}")
        with atomic_file(dst, inputs, overwrite=overwrite) as fh:
            if body is not None:
                fh.write(body)
            else:
                with open_binary(src) as fin:
                    shutil.copyfileobj(fin, fh, 1 << 20)
        if not is_remote(dst) and not is_remote(src):  # an object has no mode bits
            shutil.copymode(src, dst)
        d.published(dst, replaced)
    return notes
