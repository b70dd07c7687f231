"""Fuzz hlo.load's binary side: mutated and truncated real HloModuleProtos (and their gzip), and
random bytes. Only a pyprecision error may escape (DumpError/ProtoError for the bytes, ParseError
when a mutation still decodes to text the parser refuses), and no input may take longer than
fuzzlib.DEADLINE_MS. The seeds are the committed artifacts (tests/data/load), at most 8 KB each."""

from __future__ import annotations

import gzip
from pathlib import Path

from fuzzlib import FUZZ, mutations, within_budget
from hypothesis import given
from hypothesis import strategies as st

from pyprecision import hlo

LOAD = Path(__file__).parent.parent / "data" / "load"
SEEDS = [(LOAD / f"{n}.hlo.pb").read_bytes() for n in ("mlp_param", "scan_rnn", "cond_model")]
assert all(len(s) <= 8192 for s in SEEDS)


def _load(data: bytes) -> str:
    hlo.to_text(hlo.load(data, name="fuzz.hlo.pb"))
    return "ok"


@FUZZ
@given(st.sampled_from(range(len(SEEDS))).flatmap(lambda i: mutations(SEEDS[i], max_edits=6)))
def test_fuzz_mutated_protos(data: bytes) -> None:
    within_budget("HloModuleProto (mutated bytes)", lambda: _load(data))


@FUZZ
@given(st.sampled_from(range(len(SEEDS))), st.integers(0, 8192))
def test_fuzz_truncated_protos(i: int, cut: int) -> None:
    data = SEEDS[i][:cut]
    within_budget("HloModuleProto (truncated)", lambda: _load(data))


@FUZZ
@given(mutations(gzip.compress(SEEDS[0], mtime=0), max_edits=3))
def test_fuzz_mutated_gzip(data: bytes) -> None:
    within_budget("HloModuleProto (mutated gzip)", lambda: _load(data))


@FUZZ
@given(st.binary(max_size=512))
def test_fuzz_random_bytes(data: bytes) -> None:
    within_budget("HloModuleProto (random bytes)", lambda: _load(data))
