"""Regenerate docs/decisions.md, the index of every decision recorded in docs/decisions/*.md, and
check the decision IDs: each one unique across all areas and area-prefixed (``OP12``, ``LD3``,
``IR-4``), and every reference to one in the repository (``decision L4``, ``decisions L14–L16``,
``speed.md S18``, ``docs/decisions/hlo-eval.md HE5``) naming an ID that exists, in that file when
the reference names one.

    python scripts/decisions_index.py          # rewrite docs/decisions.md
    python scripts/decisions_index.py --check  # exit 1 if it is out of date (tests/test_docs.py)
    python scripts/decisions_index.py --ids    # print every ID problem; exit 1 if there is one
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"

# (file, area title, spec it resolves) in reading order
AREAS = [
    ("kernel.md", "The cast core", "CAST_SEMANTICS.md"),
    ("kernel-tests.md", "The cast core's evidence", "CAST_SEMANTICS.md"),
    ("speed.md", "The cast core at memory speed", "CAST_SEMANTICS.md, issue 5"),
    ("ir.md", "The loop-level IR and its emulator", "notes 000, 002"),
    ("passes.md", "The numeric-legalization passes", "notes 000, 002"),
    ("frontend.md", "The frontend precision flags", "note 003"),
    ("hlo.md", "The HLO layer and its passes", "note 004"),
    ("hlo-eval.md", "The HLO evaluator", "note 004, CAST_SEMANTICS.md §8"),
    ("load.md", "Loading modules: text, proto, gzip, StableHLO", "issue 23"),
    ("lower.md", "The HLO → loop-IR lowering", "notes 000, 002, 003, 004; issue 11"),
    ("io.md", "Dump and checkpoint files, reencode", "issue 6"),
    ("reencode.md", "Model folders and our own readers", "issue 14"),
    ("verify.md", "verify and explain", "issue 6"),
    ("explain.md", "explain's error measure, locations, reasons", "issue 25"),
    ("distributed.md", "Distributed re-encode, many-dump verify", "issue 15"),
    ("numerics.md", "One vocabulary and one numerics module", "issue 10"),
    ("torch.md", "PyTorch tensors and state dicts", "issue 14"),
    ("tune.md", "tune: the cheapest flags within an error budget", "issue 26"),
    ("opcodes.md", "One table of opcodes, XLA's semantics in both executors", "issue 24"),
]

HEADING = re.compile(r"^##\s+(.*\S)\s*$")
BOLD = re.compile(r"^\*\*((?:[A-Z]+-?\d+|\d+)\.(?:\s.*?)?)(?:\*\*|$)")  # a title may wrap
#: a decision's ID: one to three capitals, an optional dash, its number (``K4``, ``OP12``, ``EM-10``)
ID = r"[A-Z]{1,3}-?\d+(?!\w)"


def titles(text: str) -> list[str]:
    """Decision titles: `## N. title` headings, or `**ID. title**` paragraphs under plain headings."""
    out = []
    for line in text.splitlines():
        m = HEADING.match(line)
        if m and re.match(r"^([A-Z]+-?\d+|\d+)\.", m.group(1)):
            out.append(m.group(1))
            continue
        b = BOLD.match(line)
        if b:
            out.append(b.group(1).rstrip("."))
    return out


def decision_ids() -> dict[str, list[str]]:
    """ID → the decisions files that define it (a list: a duplicate is listed twice)."""
    ids: dict[str, list[str]] = {}
    for path in sorted((DOCS / "decisions").glob("*.md")):
        for title in titles(path.read_text(encoding="utf-8")):
            ids.setdefault(title.split(".", 1)[0], []).append(path.name)
    return ids


_SEP = r"(?:\s*(?:,|/|–|-|\.\.|and|or)\s*)"
_LIST = rf"({ID}(?:{_SEP}{ID})*)"
#: ``decision P5``, ``decisions L14–L16``, ``decisions EM-8, EM-9``
_BY_WORD = re.compile(rf"\b[Dd]ecisions? {_LIST}")
#: ``speed.md S18``, ``decisions/hlo-eval.md HE4 and HE10``, ``[decisions/torch.md](…) PT9``
_AREA = r"(?<![\w/-])((?:docs/)?decisions/|docs/)?([a-z][a-z-]*)"
_BY_FILE = re.compile(rf"{_AREA}\.md(?:\]\([^)]*\))?\)?,? {_LIST}")
#: the spellings before the IDs were prefixed: ``speed.md §N``, ``hlo-eval decision N``
_OLD = re.compile(_AREA + r"(?:\.md\)?,? §| decisions? )\d+")
#: a bare number: ``decision N`` names nothing since IDs are unique only with their prefix
_BARE = re.compile(r"\b[Dd]ecisions? \d+")
#: the index itself, and this check and its test (their examples are wrong on purpose)
_NOT_SCANNED = {"docs/decisions.md", "scripts/decisions_index.py", "tests/test_docs.py"}
_TEXT = (".py", ".md", ".c", ".h", ".sh", ".toml", ".cfg", ".txt", ".yml", ".yaml", ".json")


def _repo_files() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                               check=True).stdout.split()
        files = [REPO / n for n in names]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in REPO.rglob("*") if ".git" not in p.parts]
    return [p for p in files if p.suffix in _TEXT or p.name == "run"]


def id_problems() -> list[str]:
    """Every duplicated or unprefixed decision ID, and every reference to an ID that does not exist."""
    ids = decision_ids()
    files = {p.stem for p in (DOCS / "decisions").glob("*.md")}
    out = [f"{i} is defined twice: {', '.join(w)}" for i, w in ids.items() if len(w) > 1]
    out += [f"{w[0]}: decision {i} has no area prefix" for i, w in ids.items() if i.isdigit()]
    for path in _repo_files():
        rel = path.relative_to(REPO).as_posix()
        if rel in _NOT_SCANNED or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        out += text_problems(rel, text, ids, files)
    return sorted(set(out))


def text_problems(rel: str, text: str, ids: dict[str, list[str]], files: set[str]) -> list[str]:
    """The references in one file's ``text`` to decision IDs that do not exist (``ids`` from
    :func:`decision_ids`, ``files`` the stems of docs/decisions/*.md), and old spellings."""
    out = []
    refs: list[tuple[str, str | None]] = []
    for m in _BY_WORD.finditer(text):
        refs += [(r, None) for r in re.findall(ID, m.group(1))]
    for m in _BY_FILE.finditer(text):
        if m.group(2) in files and m.group(1) != "docs/":  # docs/io.md is the user guide
            refs += [(r, m.group(2) + ".md") for r in re.findall(ID, m.group(3))]
    for r, where in refs:
        if r not in ids:
            out.append(f"{rel}: decision {r} does not exist")
        elif where is not None and where not in ids[r]:
            out.append(f"{rel}: decision {r} is not in {where} (it is in {ids[r][0]})")
    for m in _OLD.finditer(text):
        if m.group(2) in files and m.group(1) != "docs/":
            out.append(f"{rel}: {m.group(0)!r} is an old plain-numbered reference")
    out += [f"{rel}: {m.group(0)!r} names no area" for m in _BARE.finditer(text)]
    return out


def render() -> str:
    lines = [
        "# Decisions",
        "",
        "Where a note of the specification (`shared/spec/`) is uncertain or contradicts itself, we chose",
        "the reading that keeps programs meaningful, wrote it down with the passage it resolves, and",
        "tested it. This page is the index; each area's file holds the decisions in full (passage,",
        "choice, reason, test). Generated by `python scripts/decisions_index.py`; `tests/test_docs.py`",
        "fails when it is out of date.",
        "",
    ]
    listed = set()
    for name, title, spec in AREAS:
        path = DOCS / "decisions" / name
        if not path.exists():
            continue
        listed.add(name)
        lines += [f"## {title} — [decisions/{name}](decisions/{name}) ({spec})", ""]
        lines += [f"- {t}" for t in titles(path.read_text(encoding="utf-8"))]
        lines.append("")
    missing = sorted(p.name for p in (DOCS / "decisions").glob("*.md") if p.name not in listed)
    if missing:
        raise SystemExit(f"decisions files not in the index: {missing} (add them to AREAS)")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    text = render()
    target = DOCS / "decisions.md"
    if "--ids" in sys.argv:
        problems = id_problems()
        print("\n".join(problems) or "decision IDs: no problem")
        sys.exit(1 if problems else 0)
    if "--check" in sys.argv:
        sys.exit(0 if target.exists() and target.read_text(encoding="utf-8") == text else 1)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
