"""The invariant decisions EM-11, EM-23 and EM-24 rest on: every value the IR evaluator makes for an
instruction whose result dtype is a narrow float format (bf16, fp16, the fp8s) is a value of that
format, so rounding it to the format (without saturation) returns it (NaNs aside, whose payloads
those routes never read). Checked on every traced value of the real models of tests/data under
the narrowing modes."""
from __future__ import annotations

import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.emulate import compile_hlo, run_compiled
from pyprecision.errors import EmulationError, LoweringError, PassError, VerifyError
from pyprecision.frontend import parse_flags
from pyprecision.kernel import as_float32, round_to_format
from tests.models_data import load_model, model_names

ERRORS = (EmulationError, LoweringError, PassError, VerifyError)
FLAGS = [["--auto-cast", "all"], ["--auto-cast", "all", "--auto-cast-type", "fp16"],
         ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3"], ["--auto-cast", "matmult"]]
NARROW = {"bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5"}
MODELS = [(s, n) for s in ("jax-0.10.2", "torch_xla-2.9.0") for n in model_names(s)
          if n not in ("bert_base", "bert_base_per_head")]
_CHECKED: list[int] = []


@pytest.mark.parametrize("source,name", MODELS)
def test_every_narrow_value_is_a_value_of_its_format(source: str, name: str) -> None:
    data = load_model(name, source)
    if not data.inputs:
        pytest.skip("text-only module")
    module = hlo.parse(data.text)
    for flags in FLAGS:
        try:
            compiled = compile_hlo(module, parse_flags(flags))
            trace: dict[int, np.ndarray] = {}
            run_compiled(compiled, data.inputs, trace)
        except ERRORS:
            continue
        for inst in compiled.lowered.function.instructions():
            r, v = inst.result, trace.get(id(inst))
            if r is None or v is None or not r.dtype.is_float or r.dtype.fmt not in NARROW:
                continue
            v = np.asarray(v, np.float32)
            # rounded without saturation: an fp8e4 ±inf is one of its values
            again = as_float32(round_to_format(v, r.dtype.fmt, saturate=False))
            ok = np.isnan(v) | (again.view(np.uint32) == v.view(np.uint32))
            assert ok.all(), (flags, type(inst).__name__, r.dtype.name)
            _CHECKED.append(v.size)


def test_the_check_saw_narrow_values():
    """The property above is not vacuous (it ran first in this file)."""
    if not _CHECKED:
        pytest.skip("run with the real-model test")
    assert len(_CHECKED) > 100
