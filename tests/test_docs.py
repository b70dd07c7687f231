"""The user guide's examples are real: every ```python block with >>> in these pages runs."""
import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["cast_semantics.md", "index.md"]


@pytest.mark.parametrize("page", PAGES)
def test_doc_examples_run_as_written(page):
    path = DOCS / page
    test = doctest.DocTestParser().get_doctest(path.read_text(), {}, page, str(path), 0)
    assert test.examples
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0


def test_decisions_index_is_up_to_date():
    """docs/decisions.md lists every decision of docs/decisions/*.md (scripts/decisions_index.py)."""
    import subprocess
    import sys

    script = DOCS.parent / "scripts" / "decisions_index.py"
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, "docs/decisions.md is stale: run python scripts/decisions_index.py"
