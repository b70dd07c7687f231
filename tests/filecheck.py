"""A small FileCheck (LLVM's pattern checker) for printed IR and HLO: pass tests state what must
and must not appear in the output instead of repeating whole expected modules.

    filecheck(printed, '''
        CHECK-LABEL: func @main
        CHECK:       %a = add
        CHECK-NEXT:  %m = mul %a, bfloat16 0.1
        CHECK-NOT:   float32
        CHECK:       affine_store %m, @t
    ''')

Directives, one per line (text before the directive, e.g. ``//`` or ``#``, is ignored):

* ``CHECK: p`` — a later line contains ``p``;
* ``CHECK-NEXT: p`` — the line right after the previous match contains ``p``;
* ``CHECK-SAME: p`` — the previous match's line contains ``p`` after the previous match;
* ``CHECK-NOT: p`` — no line between the previous match and the next match (or the end of
  the block) contains ``p``;
* ``CHECK-LABEL: p`` — like CHECK, and it splits the input: the directives after a label are
  matched between that label's line and the next label's line.

Runs of spaces and tabs compare equal to one space; ``{{regex}}`` inside a pattern is a regular
expression. A failure raises AssertionError saying which directive failed, where the search
started, and the input with line numbers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CheckFailure", "filecheck"]

_DIRECTIVE = re.compile(r"\b(CHECK(?:-NEXT|-NOT|-LABEL|-SAME)?):(.*)$")


class CheckFailure(AssertionError):
    """A directive that does not hold on the input."""


@dataclass(frozen=True)
class _Check:
    kind: str
    pattern: str
    regex: re.Pattern[str]
    line: int  # in the check text, 1-based


def _compile(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"\{\{(.*?)\}\}", pattern)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"(?:{part})")
        else:
            out.append(r"[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", part)))
    return re.compile("".join(out))


def _parse(checks: str) -> list[_Check]:
    out = []
    for n, raw in enumerate(checks.splitlines(), 1):
        m = _DIRECTIVE.search(raw)
        if m is None:
            if raw.strip():
                raise ValueError(f"check line {n} has no CHECK directive: {raw.strip()!r}")
            continue
        pattern = m.group(2).strip()
        if not pattern and m.group(1) != "CHECK-NOT":
            raise ValueError(f"check line {n}: empty {m.group(1)} pattern")
        out.append(_Check(m.group(1), pattern, _compile(pattern), n))
    if not out:
        raise ValueError("no CHECK directives")
    return out


def _fail(lines: list[str], check: _Check, why: str, start: int) -> CheckFailure:
    shown = "\n".join(f"{i + 1:>5} | {text}" for i, text in enumerate(lines))
    return CheckFailure(f"{check.kind}: {check.pattern!r} (check line {check.line}) {why} "
                        f"(searched from input line {start + 1})\ninput:\n{shown}")


def _find(lines: list[str], check: _Check, start: int, stop: int,
          col: int = 0) -> tuple[int, int] | None:
    for i in range(start, stop):
        m = check.regex.search(lines[i], col if i == start else 0)
        if m is not None:
            return i, m.end()
    return None


def _run_block(lines: list[str], checks: list[_Check], start: int, stop: int) -> None:
    pos, col = start, 0  # the line of the previous match and the column after it
    last: int | None = None
    pending_not: list[_Check] = []
    for check in checks:
        if check.kind == "CHECK-NOT":
            pending_not.append(check)
            continue
        if check.kind == "CHECK-SAME":
            if last is None:
                raise _fail(lines, check, "has no previous match on its line", pos)
            hit = _find(lines, check, last, last + 1, col)
        elif check.kind == "CHECK-NEXT":
            if last is None:
                raise _fail(lines, check, "has no previous match", pos)
            hit = _find(lines, check, last + 1, min(last + 2, stop))
        else:
            first = pos if last is None else last + 1
            hit = _find(lines, check, first, stop)
        if hit is None:
            where = "is not on the next line" if check.kind == "CHECK-NEXT" else "not found"
            raise _fail(lines, check, where, pos if last is None else last + 1)
        _check_nots(lines, pending_not, pos if last is None else last, hit[0], col)
        pending_not = []
        last, col = hit
        pos = last
    _check_nots(lines, pending_not, pos if last is None else last, stop, col)


def _check_nots(lines: list[str], nots: list[_Check], start: int, stop: int, col: int) -> None:
    """No line from ``start`` (its text after ``col``) up to, not including, ``stop`` matches."""
    for check in nots:
        for i in range(start, min(stop, len(lines))):
            text = lines[i][col:] if i == start else lines[i]
            if check.regex.search(text):
                raise _fail(lines, check, f"found on input line {i + 1}: {lines[i].strip()!r}",
                            start)


def filecheck(text: str, checks: str) -> None:
    """Check ``text`` (e.g. printed IR) against the directives in ``checks``."""
    lines = text.splitlines()
    parsed = _parse(checks)
    labels = [c for c in parsed if c.kind == "CHECK-LABEL"]
    if not labels:
        _run_block(lines, parsed, 0, len(lines))
        return
    starts = []
    pos = 0
    for label in labels:  # the labels first, in order: they split the input into blocks
        hit = _find(lines, label, pos, len(lines))
        if hit is None:
            raise _fail(lines, label, "not found", pos)
        starts.append(hit[0])
        pos = hit[0] + 1
    head = parsed[:parsed.index(labels[0])]
    if head:
        _run_block(lines, head, 0, starts[0])
    bounds = [*starts, len(lines)]
    for k, label in enumerate(labels):
        first = parsed.index(label)
        last = parsed.index(labels[k + 1]) if k + 1 < len(labels) else len(parsed)
        _run_block(lines, parsed[first:last], bounds[k], bounds[k + 1])
