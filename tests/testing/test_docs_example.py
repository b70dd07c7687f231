"""docs/testing.md is executable: its code blocks run here, and its printed failure is real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.S | re.M)


def _blocks() -> list[tuple[str, str]]:
    return [(info.strip(), body) for info, body in FENCE.findall(DOC.read_text(encoding="utf-8"))]


def _run_doc() -> dict:
    ns: dict = {"__name__": "docs_testing"}
    blocks = _blocks()
    for i, (info, body) in enumerate(blocks):
        if info == "python":
            exec(compile(body, f"{DOC}:block{i}", "exec"), ns)  # noqa: S102 - the doc is ours
        elif info == "python fails":
            with pytest.raises(AssertionError) as err:
                exec(compile(body, f"{DOC}:block{i}", "exec"), ns)  # noqa: S102
            shown = blocks[i + 1]
            assert shown[0] == "text", "a `python fails` block must be followed by a text block"
            assert str(err.value) == shown[1].rstrip("\n")
    return ns


def test_doc_has_the_blocks():
    infos = [info for info, _ in _blocks()]
    assert infos.count("python") >= 3 and infos.count("python fails") == 1


def test_worked_example_properties_pass():
    ns = _run_doc()
    tests = [v for k, v in ns.items() if k.startswith("test_") and callable(v)]
    assert len(tests) == 3
    for t in tests:
        t()


def test_worked_example_properties_catch_the_naive_version():
    ns = _run_doc()
    ns["to_bf16"] = ns["to_bf16_naive"]  # the property functions look the name up at call time
    with pytest.raises(AssertionError, match="differ in their bf16 bits|ulp of bf16 apart"):
        ns["test_to_bf16_is_bit_exact"]()
    with pytest.raises(AssertionError, match="nan≠number"):
        ns["test_nan_stays_nan"]()
