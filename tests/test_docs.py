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


def _index():
    import importlib.util

    spec = importlib.util.spec_from_file_location("decisions_index",
                                                  DOCS.parent / "scripts" / "decisions_index.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_decision_ids_are_unique_prefixed_and_every_reference_exists():
    """Each decision ID is area-prefixed and unique across docs/decisions/*.md, and every reference
    in the repository (``decision L4``, ``speed.md S18``, ``decisions L14–L16``) names one that
    exists, in the file the reference names (issue 24: "decision 5" existed seven times)."""
    problems = _index().id_problems()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("text, problem", [
    ("docs/decisions/hlo-eval.md HE5 and HE99", "HE99 does not exist"),
    ("decisions L14–L99", "L99 does not exist"),
    ("speed.md HE4", "HE4 is not in speed.md"),
    ("[decisions/torch.md](decisions/torch.md) PT99", "PT99 does not exist"),
    ("as speed.md §18 says", "old plain-numbered"),
    ("see decision 14", "names no area"),
])
def test_the_decision_reference_check_can_fail(text, problem):
    mod = _index()
    files = {p.stem for p in (DOCS / "decisions").glob("*.md")}
    assert any(problem in p for p in mod.text_problems("x.md", text, mod.decision_ids(), files))


@pytest.mark.parametrize("text", ["docs/io.md §3", "decision P5.", "a decision boundary",
                                  "F8_E4M3", "docs/decisions/ir.md EM-8..EM-10"])
def test_the_decision_reference_check_leaves_other_text_alone(text):
    mod = _index()
    files = {p.stem for p in (DOCS / "decisions").glob("*.md")}
    assert mod.text_problems("x.md", text, mod.decision_ids(), files) == []


def test_a_duplicated_or_plain_decision_id_is_found(tmp_path, monkeypatch):
    mod = _index()
    (tmp_path / "decisions").mkdir()
    (tmp_path / "decisions" / "a.md").write_text("## A1. one\n\n## A1. two\n\n## 3. plain\n")
    monkeypatch.setattr(mod, "DOCS", tmp_path)
    ids = mod.decision_ids()
    assert ids["A1"] == ["a.md", "a.md"] and "3" in ids
