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
