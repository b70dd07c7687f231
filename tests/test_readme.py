"""The README's examples are real: run them as doctests."""
import doctest
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_examples_run_as_written():
    text = README.read_text()
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, "README.md", str(README), 0)
    assert test.examples, "README has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0


def test_readme_opens_with_the_two_commands():
    blocks = README.read_text().split("```bash")[1:3]
    first, second = (b.split("```")[0].strip() for b in blocks)
    assert first.endswith("pyprecision demo")
    assert "pip install -e '.[test]'" in second and second.endswith("python -m pytest -q")
