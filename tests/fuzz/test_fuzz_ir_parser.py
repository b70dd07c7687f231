"""Fuzz the loop-IR parser (and printer): mutated example programs and token soup. Only
ParseError (located at a line and column) or another pyprecision error may escape; no input may
take longer than fuzzlib.DEADLINE_MS."""

from __future__ import annotations

from pathlib import Path

from fuzzlib import FUZZ, mutations, within_budget
from hypothesis import given
from hypothesis import strategies as st

from pyprecision import ir

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = [p.read_bytes() for p in sorted(EXAMPLES.glob("*.pir")) if p.stat().st_size < 20_000]
TOKENS = ["func", "@main", "{", "}", "tensor", "@x", ":", "input", "output", "const", "float32",
          "bfloat16", "int32", "[", "]", ",", "4", "2", "0", "-1", "9" * 40, "=", "splat", "dense",
          '"AAAA"', "^bb0", "%a", "affine_load", "affine_store", "matmul", "add", "cast", "->",
          "\n", " ", "//c\n", "1e999", "nan", "0x7f", "broadcast", "(", ")", "$", "."]


def _parse(text: str) -> None:
    module = ir.parse(text, filename="fuzz.pir")
    ir.to_text(module)


@FUZZ
@given(st.sampled_from(SEEDS).flatmap(mutations))
def test_fuzz_ir_parser_mutated_examples(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    within_budget("ir.parse (mutated examples)", lambda: _parse(text), located=True)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=80).map(" ".join))
def test_fuzz_ir_parser_token_soup(text: str) -> None:
    within_budget("ir.parse (token soup)", lambda: _parse(text), located=True)


@FUZZ
@given(st.text(max_size=200))
def test_fuzz_ir_parser_any_text(text: str) -> None:
    within_budget("ir.parse (any text)", lambda: _parse(text), located=True)
