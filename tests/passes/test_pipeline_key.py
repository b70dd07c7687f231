"""The program key is made of everything the lowering and the precision passes read of a config
(decision P22): a run with a config that records its field reads reads no field outside
``lowering_key``'s and ``PIPELINE_FIELDS``. (That equal keys give equal programs on every real
model is tests/emulate/test_flag_set_sharing.py.)"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import pytest

from pyprecision import hlo, lower
from pyprecision.emulate import DEFAULT_HLO_PASSES
from pyprecision.errors import LoweringError, PassError, VerifyError
from pyprecision.frontend import PrecisionConfig, parse_flags
from pyprecision.passes import PIPELINE_FIELDS, pipeline_key, run_pipeline
from pyprecision.verify.hlo_check import diagnosis_flag_sets
from tests.models_data import load_model

FIELDS = frozenset(f.name for f in dataclasses.fields(PrecisionConfig))
#: what lower.lowering_key reads (decision P21)
LOWERING_FIELDS = frozenset({"enable_mixed_precision_accumulation", "enable_saturate_infinity"})
FAMILIES = [["--auto-cast", "matmult"], ["--fp32-cast", "matmult-fp8e4"],
            ["--fast-math", "fp32-cast-matmult"]]


class Recording(PrecisionConfig):
    """A config that notes every field read of it in ``reads``."""

    reads: set[str]

    def __getattribute__(self, name: str) -> Any:
        if name in FIELDS:
            object.__getattribute__(self, "reads").add(name)
        return object.__getattribute__(self, name)


def recording(config: PrecisionConfig) -> Recording:
    """``config`` as a :class:`Recording` with nothing read yet."""
    r = Recording(**{f: getattr(config, f) for f in FIELDS})
    object.__setattr__(r, "reads", set())
    return r


def _configs() -> list[PrecisionConfig]:
    out = [c for fam in FAMILIES for _, c in diagnosis_flag_sets(parse_flags(fam))]
    out.append(parse_flags(["--auto-cast", "all", "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"]))
    return out


def test_the_field_lists_name_fields() -> None:
    assert set(PIPELINE_FIELDS) <= FIELDS and LOWERING_FIELDS <= FIELDS


@pytest.mark.parametrize("name", ["encoder_block", "scan_rnn", "cnn", "int8_matmul",
                                  "maxpool_cnn_grad", "embed_grad"])
def test_lowering_and_passes_read_no_field_outside_the_key(name: str) -> None:
    m = hlo.parse(load_model(name).text)
    hlo.run_passes(m, list(DEFAULT_HLO_PASSES))
    for config in _configs():
        rec = recording(config)
        try:
            lowered = lower.lower(m, config=rec)
        except LoweringError:
            continue
        assert rec.reads <= LOWERING_FIELDS, config
        rec.reads.clear()
        with contextlib.suppress(PassError, VerifyError):
            run_pipeline(lowered.module, rec)
        assert rec.reads <= set(PIPELINE_FIELDS), config


def test_the_pipeline_key_reads_only_the_pipeline_fields() -> None:
    for config in _configs():
        rec = recording(config)
        assert pipeline_key(rec) == pipeline_key(config)
        assert rec.reads <= set(PIPELINE_FIELDS)


def test_the_key_separates_what_the_passes_tell_apart() -> None:
    """Scope none: no pass reads the mode or the relayout; scope all: the relayout is not read;
    scope matmult: a relayout token that names the mode's own transpose dtype is no token."""
    def key(*flags: str) -> Any:
        return pipeline_key(parse_flags(list(flags)))

    assert key("--auto-cast", "none") == key("--auto-cast", "none", "--fast-math",
                                             "fast-relayout-fp8e4")  # fmt: skip
    assert key("--auto-cast", "all") == key("--auto-cast", "all", "--fast-math",
                                            "no-fast-relayout")  # fmt: skip
    assert key("--auto-cast", "all") != key("--auto-cast", "all", "--auto-cast-type", "fp16")
    assert key("--fp32-cast", "matmult") != key("--fp32-cast", "matmult", "--fast-math",
                                                "no-fast-relayout")  # fmt: skip
    assert key("--fp32-cast", "matmult-fp8e4") == key("--fp32-cast", "matmult-fp8e4",
                                                      "--fast-math", "fast-relayout-fp8e4")
    assert key("--auto-cast", "none") != key("--auto-cast", "none",
                                             "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3")
    assert pipeline_key(parse_flags([]), "gen2") != pipeline_key(parse_flags([]), "gen3")


def test_matmult_modes_with_one_row_and_one_transpose_dtype_are_one_key() -> None:
    """P32: AutoCastTCInputs reads the mode's row, not its name. ``matmult`` (bf16 matmuls, fp16
    transposes) and ``matmult-bf16`` are one key under one relayout token, two without one."""
    def key(*flags: str) -> Any:
        return pipeline_key(parse_flags(list(flags)))

    pair = ("--auto-cast", "matmult", "--auto-cast-type", "bf16")
    for token in ("no-fast-relayout", "fast-relayout-fp32r", "fast-relayout-fp8e4"):
        assert key("--fast-math", "fp32-cast-matmult", token) == key(*pair, "--fast-math", token)
    assert key("--fast-math", "fp32-cast-matmult") != key(*pair)
    assert key(*pair, "--fast-math", "no-fast-relayout") != key(
        "--auto-cast", "matmult", "--auto-cast-type", "fp16", "--fast-math", "no-fast-relayout")
