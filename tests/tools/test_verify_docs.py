"""docs/verify.md and docs/explain.md stay true: every console example is run and its pasted output
compared line for line (excerpts marked with ``...`` and the JSON excerpts are run but not compared)."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = {name: ROOT / "docs" / name for name in ("verify.md", "explain.md")}

WRAPPER = f"""#!{sys.executable}
import sys
from pyprecision.tools import cli
cli.COMMAND_MODULES = ("verify_cmd", "explain_cmd")
sys.exit(cli.main(sys.argv[1:]))
"""


def _fenced(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    blocks, lang, body = [], None, []
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


def _python_blocks(text: str) -> list[str]:
    return [body for lang, body in _fenced(text) if lang == "python"]


def _console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    blocks = []
    for lang, body in _fenced(text):
        lines = body.rstrip("\n").split("\n")
        if lang or not lines[0].startswith("$ "):
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in lines:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the guides use: make.py's data, mlp.pir and its inputs/dump, multi_user.pir."""
    d = tmp_path_factory.mktemp("docs")
    (d / "bin").mkdir()
    wrapper = d / "bin" / "pyprecision"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    (d / "tests").symlink_to(ROOT / "tests")
    (d / "mlp.pir").write_text((ROOT / "examples" / "mlp.pir").read_text())
    verify_md = DOCS["verify.md"].read_text()
    make, mlp = (b for b in _python_blocks(verify_md) if "np.savez" in b or "make.py" in b)
    for code in (make, mlp):
        subprocess.run([sys.executable, "-c", code], cwd=d, check=True)
    explain_md = DOCS["explain.md"].read_text()
    program = next(body for lang, body in _fenced(explain_md) if body.startswith("func @main"))
    (d / "multi_user.pir").write_text(program + "\n")
    subprocess.run([sys.executable, "-c", "import numpy as np; np.savez('multi_in.npz', "
                    "x=np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4))"], cwd=d, check=True)
    return d


def _cases() -> list[tuple[str, int, list[tuple[str, list[str]]]]]:
    out = []
    for name, path in DOCS.items():
        for i, steps in enumerate(_console_blocks(path.read_text())):
            out.append((name, i, steps))
    return out


@pytest.mark.parametrize(("doc", "index", "steps"), _cases(), ids=lambda v: str(v)[:40])
def test_console_example(workdir: Path, doc: str, index: int,
                         steps: list[tuple[str, list[str]]]) -> None:
    env = dict(os.environ, PATH=f"{workdir / 'bin'}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=str(ROOT))
    prefix, last_code = "", 0
    for command, expected in steps:
        if re.fullmatch(r"[A-Z]+=\S+", command):  # D=... : remember for later commands
            prefix += command + "; "
            continue
        if command == "echo $?":
            assert expected == [str(last_code)], (doc, index)
            continue
        proc = subprocess.run(prefix + command + " 2>&1", shell=True, cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=120)
        last_code = proc.returncode
        got = proc.stdout.rstrip("\n").split("\n") if proc.stdout.strip() else []
        if any(line.strip() in ("...", "{ ...") or line.strip().startswith("...")
               for line in expected):
            continue  # an excerpt: run, not compared
        assert got == expected, f"{doc} block {index}: {command}\n" + proc.stdout
