"""Every real module in tests/data lowers under ``--auto-cast none`` or is refused with a reason
from its record (decision OP15): the HLO text files, the .hlo.pb / .hlo.pb.gz protos and (with
jaxlib) the StableHLO files, each read as ``hlo.load`` reads it. Compile only, no emulation (about
5 s for the ~300 modules). Which modules are refused, and by which record, is pinned: a module that
lowered and is now refused fails, and so does a refused one that now lowers (update REFUSED then).

    PYTHONPATH=$PWD python -m pytest -q tests/lower/test_lower_every_real_module.py
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from pyprecision import emulate, frontend, hlo
from pyprecision.errors import LoweringError
from pyprecision.hlo import opcodes

DATA = Path(__file__).resolve().parents[1] / "data"
NONE = frontend.parse_flags(["--auto-cast", "none"])
_HAS_JAX = importlib.util.find_spec("jax") is not None
_SPMD = r"hlo/jax-[0-9.]+/(psum_shard_map|sharded_matmul)"
_INT4 = r"hlo/jax-[0-9.]+/int4_(convert|param)"
_STAGES = r"\.(hlo|debug\.hlo|before_optimizations|after_optimizations|compiled\.hlo)\.txt"

#: refusal key -> (a regular expression over the path under tests/data, how many modules it matches)
REFUSED: dict[str, tuple[str, int]] = {
    # XLA's SPMD-partitioned per-device programs keep their collectives
    "all-reduce": (_SPMD + r"\.(after_optimizations|compiled\.hlo)\.txt", 8),
    # the unpartitioned texts: JAX's Sharding / xla.sdy.* annotations
    "custom-call": (_SPMD + r"\.(hlo|debug\.hlo|before_optimizations)\.txt", 10),
    "dynamic-slice:index": (r"hlo/jax-[0-9.]+/scan_ops\.hlo\.txt", 2),
    "element-type": (rf"(hlo/jax-[0-9.]+/f64_mix\.hlo\.txt|{_INT4}{_STAGES})", 20),
    "elided-constant": (r"hlo/jax-0\.4\.30/const_large\.hlo\.txt", 1),
    "rng-bit-generator": (r"hlo-eval/jax-0\.10\.2/rng_bit_generator\.hlo\.txt", 1),
    "while:trip-count": (rf"hlo/jax-[0-9.]+/(while_bf16\.hlo\.txt|while_loop{_STAGES})", 11),
}
#: modules read from text or proto; the StableHLO ones (converted by jaxlib) besides
TEXT_AND_PROTO, STABLEHLO = 302, 8


def real_modules() -> list[str]:
    """Every module file under tests/data (paths relative to it), the broken inputs of
    tests/data/load/bad left out."""
    out = []
    for p in sorted(DATA.rglob("*")):
        rel = p.relative_to(DATA).as_posix()
        if not p.is_file() or rel.startswith("load/bad/"):
            continue
        if p.name.endswith((".txt", ".hlo.pb", ".hlo.pb.gz", ".mlir", ".mlirbc")):
            out.append(rel)
    return out


MODULES = real_modules()


def expected(rel: str) -> str | None:
    """The refusal key REFUSED pins for ``rel`` (None: it lowers)."""
    keys = [k for k, (pattern, _) in REFUSED.items() if re.fullmatch(pattern, rel)]
    assert len(keys) <= 1, f"{rel} matches {keys}"
    return keys[0] if keys else None


def test_the_walk_finds_every_module_and_the_pins_match_what_they_say():
    stablehlo = [m for m in MODULES if m.endswith((".mlir", ".mlirbc"))]
    assert (len(MODULES) - len(stablehlo), len(stablehlo)) == (TEXT_AND_PROTO, STABLEHLO)
    counts = {k: sum(expected(m) == k for m in MODULES) for k in REFUSED}
    assert counts == {k: n for k, (_, n) in REFUSED.items()}
    assert set(REFUSED) <= set(opcodes.REFUSALS)
    lowered = len(MODULES) - sum(counts.values())
    print(f"\n{len(MODULES)} modules: {lowered} lower, {sum(counts.values())} refused {counts}")
    assert lowered == TEXT_AND_PROTO + STABLEHLO - 53


@pytest.mark.parametrize("rel", MODULES)
def test_a_real_module_lowers_or_is_refused_with_its_record_s_reason(rel):
    if rel.endswith((".mlir", ".mlirbc")) and not _HAS_JAX:
        pytest.skip("StableHLO is read through jaxlib (pip install 'pyprecision[jax]')")
    path = str(DATA / rel)
    text, label = hlo.load_text(path)
    module = hlo.parse(text, label)
    want = expected(rel)
    if want is None:
        emulate.compile_hlo(module, NONE, filename=label, text=text)
        return
    with pytest.raises(LoweringError) as e:
        emulate.compile_hlo(module, NONE, filename=label, text=text)
    msg = str(e.value)
    assert e.value.refusal == want, msg
    assert msg.endswith(opcodes.refusal(want).reason), msg
    assert re.match(rf"{re.escape(label)}:\d+:\d+: \S+ \(\S+\): ", msg), msg  # located
