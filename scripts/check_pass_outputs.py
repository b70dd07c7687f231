"""Hash what every pass pipeline prints for every program we have, to prove a refactor unchanged it.

Programs: ``examples/*.pir``, every string literal in ``tests/**/*.py`` that parses as a loop-IR
module, and every HLO module (``tests/hlo/samples``, ``tests/data/hlo``, HLO string literals in
the tests). Runs:

* loop IR — ``run_pipeline`` for every fp32-cast mode × target (gen2, gen3, gen4) × the
  ``--experimental-unsafe-fp8e4m3fn-as-fp8e4m3`` flag off/on, with the provenance log on: the printed
  module, the statistics, and every decision's text; then every pass alone with every option set
  the tests use, on gen2 and gen3, for the modes all, all-fp32r, matmult and matmult-fp8e4; then
  ``explain``'s trace rows for every mode on gen2 and gen3;
* HLO — every pass alone and the three in registry order: the printed module.

An error is recorded as its type and message. ``--write FILE`` records one ``key sha256`` line per
run (a test program's key is its file and the start of its text's sha256, so editing a test
elsewhere does not move it); ``--check FILE`` recomputes and lists every key whose hash differs
(exit 1 when any does). Runs present on one side only (a test program added or removed since the
baseline) are counted, not compared.

    python scripts/check_pass_outputs.py --write scripts/pass_outputs.sha256 --programs-from REV
    python scripts/check_pass_outputs.py --check scripts/pass_outputs.sha256
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyprecision import hlo, ir  # noqa: E402
from pyprecision.frontend import MODE_TABLE  # noqa: E402
from pyprecision.passes import Target, make_pass, run_passes, run_pipeline  # noqa: E402

GENS = ("gen2", "gen3", "gen4")
#: (pass spec, options) every single-pass run uses: the options the tests switch on
SINGLE = (
    "auto-cast-fp32", "auto-cast-fp32{disable-inline-cast=true}", "auto-cast-inputs",
    "auto-cast-inputs{disable-inline-cast=true}", "auto-cast-tc-inputs", "dtype-mutator",
    "dtype-mutator{mutate-multi-users=true}", "cast-elimination", "fp8e4m3fn-as-fp8e4",
)
SINGLE_MODES = ("all", "all-fp32r", "matmult", "matmult-fp8e4")


#: a git revision whose tests are read too (``--programs-from``), so a test edited since the
#: baseline still contributes the programs it had then
PROGRAMS_FROM: list[str] = []
#: the repository those revisions are read from (env PASS_CHECK_GIT; default: this checkout)
GIT = os.environ.get("PASS_CHECK_GIT", str(ROOT))


def _test_sources() -> Iterator[tuple[str, str]]:
    """(path, text) of every test module in the working tree, then of each PROGRAMS_FROM rev."""
    for path in sorted((ROOT / "tests").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for rev in PROGRAMS_FROM:
        names = subprocess.run(["git", "-C", GIT, "ls-tree", "-r", "--name-only", rev,
                                "tests"], capture_output=True, text=True, check=True).stdout
        for name in sorted(n for n in names.splitlines() if n.endswith(".py")):
            text = subprocess.run(["git", "-C", GIT, "show", f"{rev}:{name}"],
                                  capture_output=True, text=True, check=True).stdout
            yield name, text


def _literals(source: str) -> Iterator[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
            yield node.value


def ir_programs() -> dict[str, str]:
    """Name → text of every loop-IR program (examples first, then test literals that parse)."""
    out: dict[str, str] = {}
    for p in sorted((ROOT / "examples").glob("*.pir")):
        out[f"examples/{p.name}"] = p.read_text(encoding="utf-8")
    seen = set(out.values())
    for path, source in _test_sources():
        for lit in _literals(source):
            text = textwrap.dedent(lit).strip() + "\n"
            if text in seen or "func @" not in text:
                continue
            try:
                ir.parse(text)
            except Exception:  # noqa: BLE001 - not a valid program: not ours to hash
                continue
            seen.add(text)
            out[f"{path}#{_short(text)}"] = text
    return out


def _short(text: str) -> str:
    """A program's key inside its file: the start of its text's sha256 (stable under edits
    elsewhere in the file)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def hlo_programs() -> dict[str, str]:
    """Name → text of every HLO module."""
    out: dict[str, str] = {}
    files = sorted((ROOT / "tests" / "hlo" / "samples").rglob("*"))
    files += sorted((ROOT / "tests" / "data" / "hlo").rglob("*.txt"))
    for p in files:
        if p.is_file() and p.suffix in (".txt", ".hlo"):
            out[str(p.relative_to(ROOT))] = p.read_text(encoding="utf-8")
    seen = set(out.values())
    for path, source in _test_sources():
        for lit in _literals(source):
            text = textwrap.dedent(lit).strip() + "\n"
            if text in seen or "HloModule" not in text:
                continue
            try:
                hlo.parse(text)
            except Exception:  # noqa: BLE001
                continue
            seen.add(text)
            out[f"{path}#{_short(text)}"] = text
    return out


def _guard(fn: Callable[[], str]) -> str:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - an error is an output too
        return f"ERROR {type(exc).__name__}: {exc}"


def _decisions(log: list[Any]) -> str:
    return "\n".join(f"{d.op}|{d.pass_name}|{d.rule}|{d.state}|{d.text()}" for d in log)


def _pipeline(text: str, mode: str, gen: str, unsafe: bool) -> str:
    from pyprecision.frontend import parse_flags

    m = ir.parse(text)
    log: list[Any] = []
    flags = ["--fp32-cast", mode] if mode != "none" else ["--auto-cast", "none"]
    if unsafe:
        flags.append("--experimental-unsafe-fp8e4m3fn-as-fp8e4m3")
    config = parse_flags(flags)
    stats = run_pipeline(m, config, gen, provenance=log)
    return f"{ir.to_text(m)}\n--stats\n{stats.to_text()}\n--log\n{_decisions(log)}"


def _single(text: str, spec: str, mode: str, gen: str) -> str:
    m = ir.parse(text)
    log: list[Any] = []
    p = make_pass(spec, Target.from_config(mode, gen), log)
    changed = run_passes(m, [p])
    return f"{changed}\n{ir.to_text(m)}\n--log\n{_decisions(log)}"


def _trace(text: str, mode: str, gen: str) -> str:
    from pyprecision.explain import trace_pipeline

    flags = ["--fp32-cast", mode] if mode != "none" else ["--auto-cast", "none"]
    t = trace_pipeline(text, flags, gen)
    return "\n".join(f"{r.key}|{r.op}|{r.before}|{r.after}|{r.decided_by}|{r.derived}"
                     for r in t.rows)


def _hlo(text: str, names: list[str]) -> str:
    m = hlo.parse(text)
    changed = hlo.run_passes(m, names)
    return f"{changed}\n{hlo.to_text(m)}"


def runs() -> Iterator[tuple[str, Callable[[], str]]]:
    """Every (key, thunk) pair, in a fixed order."""
    for name, text in ir_programs().items():
        big = name.startswith("examples/big")
        for mode in MODE_TABLE:
            for gen in GENS:
                for unsafe in (False, True):
                    if big and (unsafe or gen == "gen4"):
                        continue
                    yield (f"ir|{name}|pipeline|{mode}|{gen}|{unsafe}",
                           lambda t=text, m=mode, g=gen, u=unsafe: _pipeline(t, m, g, u))
        for spec in SINGLE:
            for mode in SINGLE_MODES:
                for gen in ("gen2", "gen3"):
                    if big and (mode != "all" or gen != "gen2"):
                        continue
                    yield (f"ir|{name}|single|{spec}|{mode}|{gen}",
                           lambda t=text, s=spec, m=mode, g=gen: _single(t, s, m, g))
        if big:
            continue
        for mode in MODE_TABLE:
            for gen in ("gen2", "gen3"):
                yield (f"ir|{name}|trace|{mode}|{gen}",
                       lambda t=text, m=mode, g=gen: _trace(t, m, g))
    names = list(hlo.PASSES)
    for name, text in hlo_programs().items():
        for combo in [[n] for n in names] + [names]:
            yield (f"hlo|{name}|{'+'.join(combo)}", lambda t=text, c=combo: _hlo(t, c))


def compute() -> dict[str, str]:
    """key → sha256 of the run's output."""
    return {key: hashlib.sha256(_guard(fn).encode()).hexdigest() for key, fn in runs()}


def main(argv: list[str] | None = None) -> int:
    """``--write FILE`` or ``--check FILE``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE")
    group.add_argument("--check", metavar="FILE")
    ap.add_argument("--programs-from", metavar="REV", help="with --write: also take the test "
                    "programs of git revision REV (recorded in FILE; --check reuses it)")
    args = ap.parse_args(argv)
    if args.check:
        lines = Path(args.check).read_text(encoding="utf-8").splitlines()
        PROGRAMS_FROM.extend(ln.split()[2] for ln in lines if ln.startswith("# programs-from "))
    elif args.programs_from:
        PROGRAMS_FROM.append(args.programs_from)
    hashes = compute()
    if args.write:
        path = Path(args.write)
        tmp = path.with_suffix(path.suffix + ".tmp")
        head = "".join(f"# programs-from {rev}\n" for rev in PROGRAMS_FROM)
        tmp.write_text(head + "".join(f"{k} {h}\n" for k, h in hashes.items()), encoding="utf-8")
        tmp.replace(path)
        print(f"{len(hashes)} runs recorded in {path}")
        return 0
    want = dict(line.rsplit(" ", 1) for line in lines if line and not line.startswith("#"))
    both = sorted(set(want) & set(hashes))
    bad = [k for k in both if want[k] != hashes[k]]
    for k in bad:
        print(f"DIFFERS {k}")
    print(f"{len(both)} runs compared, {len(bad)} differ; {len(set(want) - set(hashes))} only in "
          f"the baseline, {len(set(hashes) - set(want))} only now")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
