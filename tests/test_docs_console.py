"""The user guide's console examples stay true: every ``$ pyprecision ...`` block of the pages in
:data:`PAGES` is run in a fresh directory per page and its pasted output compared line for line.

What a page's console block is: a fenced block with no language whose first line starts with
``$ ``. Each ``$ `` line is one shell command (stderr merged into stdout); the lines after it, up to
the next ``$ ``, are its expected output. Conventions inside expected output:

* ``$ echo $?`` followed by a number checks the exit code of the previous command;
* ``$ D=some/path`` (an uppercase variable) is remembered and prefixed to later commands;
* trailing blanks are ignored (a page cannot show them);
* a line that is just ``...`` (any indentation) skips zero or more output lines until the next
  expected line matches (at the end: the rest of the output) — for excerpts and timing lines;
* inside a line, ``...`` stands for any text (``time ... GB/s``, ``verify (...): ok``);
* for a ``--json`` command whose expected output is an excerpt (it contains ``...``), the output
  must be valid JSON and each expected line, whitespace removed and trailing comma dropped, must
  occur in the whitespace-free output, in order (excerpts there are re-indented and re-wrapped).

A ``python`` block whose first line is ``# NAME.py`` is written into the page's directory as NAME.py
before the page's console blocks run, so a page can say "save this as NAME.py" and then run it.
Blocks run in page order in one directory; running a single block runs the earlier ones first.
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = ("index.md", "commands.md", "verify.md", "explain.md", "tune.md")

WRAPPER = f"""#!{sys.executable}
import sys
from pyprecision.tools import cli
sys.exit(cli.main(sys.argv[1:]))
"""

Step = tuple[str, list[str]]


def fenced(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    blocks: list[tuple[str, str]] = []
    lang: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        if line.startswith("```"):
            if lang is None:
                lang, body = line[3:].strip(), []
            else:
                blocks.append((lang, "\n".join(body)))
                lang = None
        elif lang is not None:
            body.append(line)
    return blocks


def python_blocks(text: str) -> list[str]:
    """The bodies of the page's ```python blocks."""
    return [body for lang, body in fenced(text) if lang == "python"]


def console_blocks(text: str) -> list[list[Step]]:
    """Each console block as a list of (command, expected output lines)."""
    blocks = []
    for lang, body in fenced(text):
        lines = body.rstrip("\n").split("\n")
        if lang or not lines[0].startswith("$ "):
            continue
        steps: list[Step] = []
        for line in lines:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


# ---------------------------------------------------------------------------- output matching

def _line_matches(pattern: str, line: str) -> bool:
    pattern, line = pattern.rstrip(), line.rstrip()  # trailing blanks are invisible in a page
    if "..." not in pattern:
        return pattern == line
    parts = pattern.split("...")
    return re.fullmatch(r".*".join(re.escape(p) for p in parts), line) is not None


def match_lines(expected: list[str], got: list[str]) -> str | None:
    """None when ``got`` matches ``expected`` (with ``...`` skips); else a description of the
    first difference."""
    def go(i: int, j: int) -> str | None:
        while i < len(expected):
            if expected[i].strip() == "...":
                if i + 1 == len(expected):
                    return None
                first_error = None
                for k in range(j, len(got) + 1):
                    if k < len(got) and not _line_matches(expected[i + 1], got[k]):
                        continue
                    err = go(i + 1, k)
                    if err is None:
                        return None
                    first_error = first_error or err
                return first_error or f"no output line after line {j} matches {expected[i + 1]!r}"
            if j >= len(got):
                return f"output ended; expected {expected[i]!r}"
            if not _line_matches(expected[i], got[j]):
                return f"output line {j + 1}: expected {expected[i]!r}, got {got[j]!r}"
            i, j = i + 1, j + 1
        return None if j == len(got) else f"unexpected extra output from line {j + 1}: {got[j]!r}"
    return go(0, 0)


def match_json_excerpt(expected: list[str], output: str) -> str | None:
    """None when every non-elided expected line occurs, in order, in the whitespace-free JSON."""
    try:
        json.loads(output)
    except ValueError as exc:
        return f"not JSON: {exc}"
    flat, pos = re.sub(r"\s+", "", output), 0
    for line in expected:
        piece = re.sub(r"\s+", "", line).rstrip(",")
        piece = piece.removeprefix("{...").removesuffix("...}")
        if not piece or piece == "...":
            continue
        found = flat.find(piece, pos)
        if found < 0:
            return f"JSON excerpt line not found (in order): {line.strip()!r}"
        pos = found + len(piece)
    return None


# ---------------------------------------------------------------------------- per-page setup

def _setup_verify(d: Path) -> None:
    """verify.md: make.py's data, its mlp.pir program and the mlp_device.npz it writes."""
    (d / "mlp.pir").write_text((ROOT / "examples" / "mlp.pir").read_text())
    mlp = next(b for b in python_blocks((DOCS / "verify.md").read_text()) if "mlp_device" in b)
    subprocess.run([sys.executable, "make.py"], cwd=d, check=True, env=_env(d))
    subprocess.run([sys.executable, "-c", mlp], cwd=d, check=True, env=_env(d))


def _setup_explain(d: Path) -> None:
    """explain.md: mlp.pir, mlp_in.npz, its multi_user.pir listing and multi_in.npz."""
    (d / "mlp.pir").write_text((ROOT / "examples" / "mlp.pir").read_text())
    program = next(body for lang, body in fenced((DOCS / "explain.md").read_text())
                   if body.startswith("func @main"))
    (d / "multi_user.pir").write_text(program + "\n")
    code = ("import numpy as np\n"
            "np.savez('mlp_in.npz', xT=np.random.default_rng(1).standard_normal((4, 2))"
            ".astype(np.float32))\n"
            "np.savez('multi_in.npz', x=np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4))\n")
    subprocess.run([sys.executable, "-c", code], cwd=d, check=True, env=_env(d))


SETUP: dict[str, Callable[[Path], None]] = {"verify.md": _setup_verify,
                                            "explain.md": _setup_explain}


def _env(d: Path) -> dict[str, str]:
    return dict(os.environ, PATH=f"{d / 'bin'}{os.pathsep}{os.environ['PATH']}",
                PYTHONPATH=str(ROOT), PYTHONHASHSEED="0", COLUMNS="80")  # argparse wraps --help at COLUMNS


class PageDir:
    """A page's working directory and which of its blocks have run."""

    def __init__(self, page: str, d: Path) -> None:
        self.page, self.dir, self.done = page, d, -1
        (d / "bin").mkdir()
        wrapper = d / "bin" / "pyprecision"
        wrapper.write_text(WRAPPER)
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
        for name in ("tests", "examples", "pyprecision"):
            (d / name).symlink_to(ROOT / name)
        text = (DOCS / page).read_text()
        for body in python_blocks(text):
            first = body.split("\n", 1)[0]
            m = re.fullmatch(r"#\s*([\w.-]+\.py)\s*", first)
            if m:
                (d / m.group(1)).write_text(body + "\n")
        if page in SETUP:
            SETUP[page](d)
        self.blocks = console_blocks(text)

    def run_block(self, index: int, compare: bool = True) -> None:
        """Run block ``index`` (after any earlier block not run yet) and compare its output."""
        for earlier in range(self.done + 1, index):
            self.run_block(earlier, compare=False)
        self.done = max(self.done, index)
        env, prefix, last_code, last_command = _env(self.dir), "", 0, ""
        for command, expected in self.blocks[index]:
            where = f"{self.page} console block {index}: $ {command}"
            if re.fullmatch(r"[A-Z]+=\S+", command):
                prefix += command + "; "
                continue
            if command == "echo $?":
                assert "|" not in last_command, f"{where}: after a pipe it is the last stage's code"
                if compare:
                    assert expected == [str(last_code)], f"{where}: exit code {last_code}"
                continue
            proc = subprocess.run(prefix + command + " 2>&1", shell=True, cwd=self.dir, env=env,
                                  capture_output=True, text=True, timeout=300)
            last_code, last_command = proc.returncode, command
            if not compare:
                continue
            got = proc.stdout.rstrip("\n").split("\n") if proc.stdout.strip() else []
            if "--json" in command.split() and any("..." in line for line in expected):
                error = match_json_excerpt(expected, proc.stdout)
            else:
                error = match_lines(expected, got)
            assert error is None, f"{where}\n{error}\n--- output:\n{proc.stdout}"


@pytest.fixture(scope="session")
def page_dirs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], PageDir]:
    """One working directory per page, made on first use."""
    made: dict[str, PageDir] = {}

    def get(page: str) -> PageDir:
        if page not in made:
            made[page] = PageDir(page, tmp_path_factory.mktemp(page.replace(".", "_")))
        return made[page]
    return get


#: Blocks whose page is known to be wrong (owned by another area; the reason says what to fix). They
#: are expected to fail — strictly: once the page is fixed the test XPASSes, fails, and the entry
#: must go.
KNOWN_DOC_DEFECTS: dict[tuple[str, int], str] = {}


def _cases() -> list[tuple[str, int]]:
    return [(page, i) for page in PAGES
            for i in range(len(console_blocks((DOCS / page).read_text())))]


def test_every_page_has_console_examples() -> None:
    for page in PAGES:
        assert console_blocks((DOCS / page).read_text()), page


@pytest.mark.parametrize(("page", "index"), _cases(), ids=lambda v: str(v))
def test_console_example(page_dirs: Callable[[str], PageDir], page: str, index: int,
                         request: pytest.FixtureRequest) -> None:
    if (page, index) in KNOWN_DOC_DEFECTS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_DOC_DEFECTS[page, index], strict=True))
    page_dirs(page).run_block(index)


# ---------------------------------------------------------------------------- the matcher itself

@pytest.mark.parametrize(("expected", "got", "ok"), [
    (["a", "b"], ["a", "b"], True),
    (["a", "b"], ["a", "c"], False),
    (["a"], ["a", "b"], False),
    (["a", "b"], ["a"], False),
    (["a", "...", "d"], ["a", "b", "c", "d"], True),
    (["a", "...", "d"], ["a", "d"], True),
    (["a", "...", "d"], ["a", "b", "c"], False),
    (["a", "..."], ["a", "b"], True),
    (["...", "x", "y"], ["x", "z", "x", "y"], True),
    (["time ... GB/s"], ["time 0.01 s, 9.1 GB/s"], True),
    (["time ... GB/s"], ["time 0.01 s"], False),
    (["a  "], ["a"], True),
])
def test_match_lines(expected: list[str], got: list[str], ok: bool) -> None:
    assert (match_lines(expected, got) is None) is ok


def test_match_json_excerpt() -> None:
    out = json.dumps({"a": 1, "b": [1, 2], "c": {"d": None}}, indent=2)
    assert match_json_excerpt(["{ ...", '  "b": [1, 2],', "  ... }"], out) is None
    assert match_json_excerpt(['"c": {"d": null}', '"a": 1'], out) is not None  # order
    assert match_json_excerpt(['"a": 2'], out) is not None
    assert match_json_excerpt(['"a": 1'], "not json") is not None
