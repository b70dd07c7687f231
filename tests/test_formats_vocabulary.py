"""One vocabulary: every spelling the seven hand maps accepted before they were derived from the C
table maps exactly as it did (the old maps are written here as literal data, copied from the code
they replaced: ir/dtypes._ALIASES, hlo_numeric.CORE_FORMATS, passes/target.DTYPE_OF_TOKEN,
io/dtypes._FORMAT_STORAGE, verify/cast_check._E4_DTYPES, kernel/_args.SOURCE_TYPES and the C
table's alias column). docs/decisions/numerics.md N1-N2."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pyprecision as pp
from pyprecision import hlo, ir
from pyprecision.emulate.shared import numeric as hlo_numeric
from pyprecision.errors import FormatError
from pyprecision.hlo import PrimitiveType as P
from pyprecision.io import SAFETENSORS_DTYPES, safetensors_name_of_format
from pyprecision.kernel import _args
from pyprecision.passes import target
from pyprecision.verify import cast_check

# ir/dtypes._ALIASES before (alias -> canonical IR dtype name), plus the canonical names themselves.
OLD_IR_ALIASES = {
    "fp32": "float32", "f32": "float32", "fp32r": "float32r", "tf32": "float32r",
    "bf16": "bfloat16", "fp16": "float16", "half": "float16", "f16": "float16",
    "fp8e4": "float8e4", "float8_e4m3": "float8e4", "fp8_e4m3": "float8e4",
    "fp8e4m3fn": "float8e4m3fn", "float8_e4m3fn": "float8e4m3fn",
    "fp8e5": "float8_e5m2", "float8e5": "float8_e5m2", "fp8_e5m2": "float8_e5m2",
    "float8e5m2": "float8_e5m2",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
}
OLD_IR_NAMES = ["float32", "float32r", "bfloat16", "float16", "float8e4", "float8e4m3fn",
                "float8_e5m2", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64"]
# ir/dtypes._narrow(name, fmt) before: IR dtype -> cast-core format.
OLD_IR_FORMAT = {"float32r": "fp32r", "bfloat16": "bf16", "float16": "fp16", "float8e4": "fp8e4",
                 "float8e4m3fn": "fp8e4m3fn", "float8_e5m2": "fp8e5"}
# emulate/hlo_numeric.CORE_FORMATS before.
OLD_CORE_FORMATS = {P.BF16: "bf16", P.F16: "fp16", P.F8E4M3FN: "fp8e4m3fn", P.F8E5M2: "fp8e5",
                    P.F8E4M3: "fp8e4"}
# passes/target.DTYPE_OF_TOKEN before.
OLD_DTYPE_OF_TOKEN = {"bf16": "bfloat16", "fp16": "float16", "fp32r": "float32r",
                      "fp8e4": "float8e4"}
# io/dtypes._FORMAT_STORAGE before.
OLD_FORMAT_STORAGE = {"bf16": "BF16", "fp16": "F16", "fp32r": "F32", "fp8e4m3fn": "F8_E4M3",
                      "fp8e5": "F8_E5M2", "fp8e4": "U8"}
# verify/cast_check._E4_DTYPES before.
OLD_E4_DTYPES = {np.dtype(ml_dtypes.float8_e4m3): "fp8e4",
                 np.dtype(ml_dtypes.float8_e4m3fn): "fp8e4m3fn"}
# kernel/_args.SOURCE_TYPES before (numpy dtype -> PP_T_* code of csrc/pyprecision_api.h).
OLD_SOURCE_TYPES = {
    np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
    np.dtype(ml_dtypes.bfloat16): 3, np.dtype(ml_dtypes.float8_e4m3): 4,
    np.dtype(ml_dtypes.float8_e4m3fn): 5, np.dtype(ml_dtypes.float8_e5m2): 6,
    np.dtype(np.int8): 7, np.dtype(np.int16): 8, np.dtype(np.int32): 9, np.dtype(np.int64): 10,
    np.dtype(np.uint8): 11, np.dtype(np.uint16): 12, np.dtype(np.uint32): 13,
    np.dtype(np.uint64): 14,
}
# The C table's name and alias column before (pp.format is case-insensitive).
OLD_FORMAT_SPELLINGS = {
    "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "fp32r": "fp32r", "tf32": "fp32r", "float32r": "fp32r",
    "fp8e4": "fp8e4", "fp8_e4m3": "fp8e4", "float8_e4m3": "fp8e4", "float8e4": "fp8e4",
    "fp8e4m3fn": "fp8e4m3fn", "float8_e4m3fn": "fp8e4m3fn", "fp8_e4m3fn": "fp8e4m3fn",
    "fp8e5": "fp8e5", "fp8_e5m2": "fp8e5", "float8_e5m2": "fp8e5",
}
# Value dtypes pp.format accepted before (float32 names no format).
OLD_FORMAT_DTYPES = {np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.float16): "fp16",
                     np.dtype(ml_dtypes.float8_e4m3): "fp8e4",
                     np.dtype(ml_dtypes.float8_e4m3fn): "fp8e4m3fn",
                     np.dtype(ml_dtypes.float8_e5m2): "fp8e5"}


@pytest.mark.parametrize("spelling,name", sorted({**OLD_IR_ALIASES,
                                                  **{n: n for n in OLD_IR_NAMES}}.items()))
def test_every_old_ir_spelling_names_the_same_dtype(spelling: str, name: str) -> None:
    assert ir.dtype_from_name(spelling).name == name
    assert ir.as_dtype(spelling).name == name


@pytest.mark.parametrize("dtype,fmt", sorted(OLD_IR_FORMAT.items()))
def test_ir_dtypes_round_with_the_same_format(dtype: str, fmt: str) -> None:
    d = ir.dtype_from_name(dtype)
    assert d.fmt == fmt
    assert d.bits == pp.format(fmt).bits
    assert d.np_dtype == pp.format(fmt).dtype


def test_ir_still_refuses_what_it_refused() -> None:
    for bad in ("BF16", "Float16", "f64", "s32", "e4m3", ""):
        with pytest.raises(KeyError):
            ir.dtype_from_name(bad)


def test_hlo_core_formats_are_derived_unchanged() -> None:
    assert hlo_numeric.CORE_FORMATS == OLD_CORE_FORMATS


def test_frontend_tokens_name_the_same_ir_dtypes() -> None:
    assert {t: d.name for t, d in target.DTYPE_OF_TOKEN.items()} == OLD_DTYPE_OF_TOKEN


@pytest.mark.parametrize("fmt,name", sorted(OLD_FORMAT_STORAGE.items()))
def test_safetensors_storage_is_unchanged(fmt: str, name: str) -> None:
    assert safetensors_name_of_format(fmt) == name


def test_e4_dtypes_are_derived_unchanged() -> None:
    assert cast_check._E4_DTYPES == OLD_E4_DTYPES


def test_kernel_source_types_are_derived_unchanged() -> None:
    assert _args.SOURCE_TYPES == OLD_SOURCE_TYPES


@pytest.mark.parametrize("spelling,name", sorted(OLD_FORMAT_SPELLINGS.items()))
def test_every_old_format_spelling_still_resolves(spelling: str, name: str) -> None:
    assert pp.format(spelling).name == name
    assert pp.format(spelling.upper()).name == name


@pytest.mark.parametrize("dtype,name", sorted(OLD_FORMAT_DTYPES.items(), key=str))
def test_value_dtypes_still_resolve(dtype: np.dtype, name: str) -> None:
    assert pp.format(dtype).name == name


@pytest.mark.parametrize("spelling,name", sorted({
    **{k: v for k, v in OLD_IR_ALIASES.items() if v in OLD_IR_FORMAT},
    **{k: k for k in OLD_IR_FORMAT}}.items()))
def test_pp_format_accepts_every_ir_spelling_of_a_format(spelling: str, name: str) -> None:
    assert pp.format(spelling).name == OLD_IR_FORMAT[name]


@pytest.mark.parametrize("t,fmt", sorted(OLD_CORE_FORMATS.items()))
def test_pp_format_accepts_the_hlo_type_names(t: P, fmt: str) -> None:
    assert pp.format(t.name.lower()).name == fmt
    assert pp.format(t.name).hlo_name == t.name.lower()


def test_format_carries_every_vocabulary() -> None:
    f = pp.format("fp8e4m3fn")
    assert (f.hlo_name, f.ir_name, f.safetensors_name) == ("f8e4m3fn", "float8e4m3fn", "F8_E4M3")
    assert f.dtype == np.dtype(ml_dtypes.float8_e4m3fn) and f.storage_dtype == np.uint8
    e4 = pp.format("fp8e4")  # the IEEE-like e4m3 is XLA's f8e4m3; safetensors has no name for it
    assert (e4.hlo_name, e4.ir_name, e4.safetensors_name) == ("f8e4m3", "float8e4", None)
    assert pp.format("fp32r").hlo_name is None


def test_safetensors_f8_e4m3_is_not_the_ieee_like_e4m3() -> None:
    """QUIRK (decision N2): safetensors' F8_E4M3 is e4m3fn, while fp8_e4m3 / float8_e4m3 spell the
    IEEE-like fp8e4; so the safetensors names are a field, never a spelling pp.format accepts."""
    assert pp.format("fp8_e4m3").name == "fp8e4"
    with pytest.raises(FormatError):
        pp.format("F8_E4M3")


def test_every_spelling_names_one_format() -> None:
    seen: dict[str, str] = {}
    for f in pp.formats():
        for s in f.spellings:
            assert seen.setdefault(s, f.name) == f.name, s
            assert pp.format(s) is f


@pytest.mark.parametrize("f", pp.formats(), ids=str)
def test_the_other_rooms_tables_agree_with_the_format_table(f: pp.Format) -> None:
    """hlo.numpy_dtype and io's SAFETENSORS_DTYPES list types beyond the formats, so they stay
    tables of their own; where they name a format they must give its value dtype."""
    if f.hlo_name is not None:
        assert hlo.numpy_dtype(P[f.hlo_name.upper()]) == f.dtype
    if f.safetensors_name is not None:
        assert SAFETENSORS_DTYPES[f.safetensors_name] == f.dtype
    assert _args.SOURCE_TYPES[f.dtype] == f.source_type
