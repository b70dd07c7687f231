"""docs/verify.md and docs/explain.md stay true. Their console examples are run and compared line
for line by the guide's shared runner, tests/test_docs_console.py (which also builds their data:
verify.md's make.py and program dump, explain.md's multi_user.pir and inputs); this file checks
that they stay under it and that their Python listings are valid code."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import test_docs_console as runner  # noqa: E402

PAGES = ("verify.md", "explain.md")


@pytest.mark.parametrize("page", PAGES)
def test_page_is_run_by_the_shared_console_runner(page: str) -> None:
    assert page in runner.PAGES
    assert page in runner.SETUP
    blocks = runner.console_blocks((ROOT / "docs" / page).read_text())
    assert len(blocks) >= 5
    assert all(any(cmd.startswith("pyprecision ") for cmd, _ in b) for b in blocks
               if not b[0][0].startswith("python3"))


@pytest.mark.parametrize("page", PAGES)
def test_python_listings_parse(page: str) -> None:
    blocks = runner.python_blocks((ROOT / "docs" / page).read_text())
    assert blocks
    for body in blocks:
        ast.parse(body)
