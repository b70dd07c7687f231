"""docs/testing.md is executable: its code blocks run here, and its printed failures are real."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import pyprecision as pp

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.S | re.M)
WORKED = ("test_to_bf16_is_bit_exact", "test_ties_go_to_even", "test_nan_stays_nan")
#: the ml_dtypes properties: format name, ml_dtypes type (docs/testing.md, "A real example")
ML_DTYPES = {
    "test_ml_dtypes_float64_to_bf16": ("bf16", ml_dtypes.bfloat16),
    "test_ml_dtypes_float64_to_fp8e4m3fn": ("fp8e4m3fn", ml_dtypes.float8_e4m3fn),
}
#: issue 14's two reports: float64 bits -> (format, ml_dtypes' code, exact RNE code)
REPORTED = {0x3790000000000001: ("bf16", 0x0000, 0x0001),
            0x3F50000000000001: ("fp8e4m3fn", 0x00, 0x01)}


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
    assert infos.count("python") >= 5 and infos.count("python fails") == 1


def test_worked_example_properties_pass():
    ns = _run_doc()
    tests = {k for k, v in ns.items() if k.startswith("test_") and callable(v)}
    assert tests == {*WORKED, *ML_DTYPES, "test_f32_to_bf16"}
    for name in (*WORKED, "test_f32_to_bf16"):
        ns[name]()


def test_worked_example_properties_catch_the_naive_version():
    ns = _run_doc()
    ns["to_bf16"] = ns["to_bf16_naive"]  # the property functions look the name up at call time
    with pytest.raises(AssertionError, match="differ in their bf16 bits|ulp of bf16 apart"):
        ns["test_to_bf16_is_bit_exact"]()
    with pytest.raises(AssertionError, match="nan≠number"):
        ns["test_nan_stays_nan"]()


def _ml_dtypes_code(bits: int, mld: type) -> int:
    x = np.array([bits], np.uint64).view(np.float64)
    return int(x.astype(mld).view(np.uint8 if np.dtype(mld).itemsize == 1 else np.uint16)[0])


def test_the_reported_values():
    """pyprecision rounds issue 14's two inputs exactly; a double-rounding ml_dtypes gives the
    codes the issue reports."""
    types = {"bf16": ml_dtypes.bfloat16, "fp8e4m3fn": ml_dtypes.float8_e4m3fn}
    for bits, (fmt, reported, exact) in REPORTED.items():
        assert int(pp.encode(np.array([bits], np.uint64).view(np.float64), fmt)[0]) == exact
        if _ml_dtypes_double_rounds():
            assert _ml_dtypes_code(bits, types[fmt]) == reported


def _ml_dtypes_double_rounds() -> bool:
    types = {"bf16": ml_dtypes.bfloat16, "fp8e4m3fn": ml_dtypes.float8_e4m3fn}
    got = {bits: _ml_dtypes_code(bits, types[fmt]) for bits, (fmt, _, _) in REPORTED.items()}
    return any(got[b] != exact for b, (_, _, exact) in REPORTED.items())


def _is_double_rounding(bits: int, fmt: str, mld: type) -> bool:
    """float32 holds a tie of ``fmt`` that the float64 value is not, and ml_dtypes' result is the
    float32 route's (the tie to even) while the exact rounding differs."""
    x = np.array([bits], np.uint64).view(np.float64)
    t = x.astype(np.float32)
    lo = int(pp.encode(np.abs(t), fmt, rounding="rtz")[0])
    f = pp.format(fmt)
    mid = (float(pp.decode(np.array([lo], f.storage_dtype), f)[0])
           + float(pp.decode(np.array([lo + 1], f.storage_dtype), f)[0])) / 2
    via_f32 = int(pp.encode(t, fmt)[0])
    return (float(abs(t[0])) == mid and float(t[0]) != float(x[0])
            and _ml_dtypes_code(bits, mld) == via_f32 != int(pp.encode(x, fmt)[0]))


@pytest.mark.parametrize("name", sorted(ML_DTYPES))
def test_ml_dtypes_examples_pass_or_fail_for_the_double_rounding_reason(name):
    ns = _run_doc()
    fmt, mld = ML_DTYPES[name]
    if not _ml_dtypes_double_rounds():
        ns[name]()  # ml_dtypes >= 0.7.0 rounds float64 exactly: the property passes, as the doc says
        return
    with pytest.raises(AssertionError) as err:
        ns[name]()
    text = str(err.value)
    assert f"differ in their {fmt} bits" in text
    inputs = [int(b, 16) for b in re.findall(r"\(0x([0-9a-f]{16})\)", text)]
    assert inputs, text
    for bits in inputs:
        assert _is_double_rounding(bits, fmt, mld), hex(bits)
    if inputs == [0x3790000000000001]:  # the shrunk example the doc prints
        shown = next((b for i, b in _blocks() if i == "text" and "0x3790" in b), None)
        assert shown is None or text.startswith(shown.rstrip("\n"))


def test_the_checker_finds_the_ml_dtypes_bug_too():
    if not _ml_dtypes_double_rounds():
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} no longer double rounds float64")
    from pyprecision.testing import assert_matches_pyprecision

    def ml_dtypes_bf16(x):
        with np.errstate(all="ignore"):  # NaN / overflow warnings of the cast itself
            return x.astype(ml_dtypes.bfloat16)

    with pytest.raises(AssertionError, match="differ in their bf16 bits"):
        assert_matches_pyprecision(ml_dtypes_bf16, np.float64, "bf16", max_size=8)
