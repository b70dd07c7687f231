"""docs/torch.md's examples are real: every >>> block runs as written (as tests/test_docs.py does
for the other pages; this one needs torch, so it lives here and skips without it)."""
from __future__ import annotations

import doctest
from pathlib import Path

import pytest

pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install pyprecision[torch]); docs/torch.md unchecked"
)

PAGE = Path(__file__).resolve().parent.parent.parent / "docs" / "torch.md"


def test_torch_page_examples_run_as_written() -> None:
    test = doctest.DocTestParser().get_doctest(PAGE.read_text(), {}, PAGE.name, str(PAGE), 0)
    assert len(test.examples) > 20
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0
