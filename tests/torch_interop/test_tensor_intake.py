"""The torch intake's contract: zero-copy views, the result's kind (``like``), the errors."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install pyprecision[torch]); torch interop untested"
)

import pyprecision as pp  # noqa: E402
from pyprecision.errors import CastError, FormatError  # noqa: E402
from pyprecision.kernel import array_as_tensor, format_of_torch_dtype, tensor_as_array  # noqa: E402

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn,
          torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.float8_e8m0fnu,
          torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16,
          torch.uint32, torch.uint64]


@pytest.mark.parametrize("td", DTYPES, ids=str)
def test_a_tensor_is_read_in_place(td: object) -> None:
    t = torch.zeros(3, 5, dtype=torch.uint8 if td.itemsize == 1 else td)
    t = t.view(td)
    a = tensor_as_array(t)
    assert a.__array_interface__["data"][0] == t.data_ptr()  # same memory: no copy
    assert a.dtype.name == str(td).removeprefix("torch.") and a.shape == (3, 5)
    raw = t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[td.itemsize])
    raw[1, 2] = 1  # a write through torch shows in the array
    assert a.view(f"u{td.itemsize}")[1, 2] == 1


@pytest.mark.parametrize("fmt", [f.name for f in pp.formats()])
def test_a_result_is_handed_over_in_place(fmt: str) -> None:
    a = pp.cast(np.linspace(-3, 3, 7, dtype=np.float32), fmt)
    t = array_as_tensor(a)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    out = torch.empty(7, dtype={8: torch.uint8, 16: torch.uint16, 32: torch.uint32}[a.dtype.itemsize * 8])
    before = out.data_ptr()
    got = pp.encode(torch.linspace(-3, 3, 7), fmt, out=out)
    assert got is out and out.data_ptr() == before
    np.testing.assert_array_equal(out.numpy(), a.view(out.numpy().dtype))


def test_like_picks_the_result_kind() -> None:
    x = np.array([1.0, 2.5], np.float32)
    t = torch.from_numpy(x)
    assert isinstance(pp.encode(x, "bf16"), np.ndarray)
    assert isinstance(pp.encode(t, "bf16"), torch.Tensor)
    assert isinstance(pp.encode(t, "bf16", like="numpy"), np.ndarray)
    assert pp.cast(x, "bf16", like="torch").dtype == torch.bfloat16
    assert pp.cast([1.0, 2.5], torch.float8_e5m2, like="torch").dtype == torch.float8_e5m2
    assert pp.decode(np.array([0x3F80], np.uint16), "bf16", like="torch").dtype == torch.float32
    assert pp.quantize(x, "fp8e4", like="torch").tolist() == [1.0, 2.5]
    assert pp.decode(bits=torch.tensor([0x3F80], dtype=torch.int16), fmt="bf16").tolist() == [1.0]
    assert pp.encode(x=t, fmt=torch.bfloat16).dtype == torch.uint16
    with pytest.raises(CastError, match="like must be 'numpy', 'torch' or None"):
        pp.encode(x, "bf16", like="jax")


def test_torch_dtypes_name_formats() -> None:
    assert [format_of_torch_dtype(d) for d in (torch.bfloat16, torch.float16, torch.float8_e4m3fn,
                                               torch.float8_e5m2)] == ["bf16", "fp16", "fp8e4m3fn", "fp8e5"]
    for d in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.float32, torch.int8):
        with pytest.raises(FormatError, match=re.escape(f"{d} is not a pyprecision format")):
            pp.cast(torch.ones(2), d)
    got = pp.encode(torch.ones(2), fmt=torch.bfloat16)
    assert got.tolist() == [0x3F80, 0x3F80]


def _numpy_error(fn, *args, **kw) -> str:
    with pytest.raises(CastError) as e:
        fn(*args, **kw)
    return str(e.value)


def test_dtypes_numpy_refuses_are_refused_with_the_numpy_message() -> None:
    for td, nd in ((torch.bool, np.bool_), (torch.complex64, np.complex64)):
        msg = _numpy_error(pp.encode, np.zeros(2, nd), "bf16")
        with pytest.raises(CastError, match=re.escape(msg)):
            pp.encode(torch.zeros(2, dtype=td), "bf16")
    # fnuz codes are not fp8e4m3fn codes, exactly as with the ml_dtypes array
    msg = _numpy_error(pp.decode, np.zeros(2, ml_dtypes.float8_e4m3fnuz), "fp8e4m3fn")
    with pytest.raises(CastError, match=re.escape(msg)):
        pp.decode(torch.zeros(2, dtype=torch.float8_e4m3fnuz), "fp8e4m3fn")
    # an out= of the wrong dtype or layout: the numpy path's own words
    msg = _numpy_error(pp.encode, np.ones(4, np.float32), "bf16", out=np.empty(4, np.int16))
    with pytest.raises(CastError, match=re.escape(msg)):
        pp.encode(torch.ones(4), "bf16", out=torch.empty(4, dtype=torch.int16))
    msg = _numpy_error(pp.encode, np.ones(4, np.float32), "bf16", out=np.empty(8, np.uint16)[::2])
    with pytest.raises(CastError, match=re.escape(msg)):
        pp.encode(torch.ones(4), "bf16", out=torch.empty(8, dtype=torch.uint16)[::2])


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch warns that complex32 / qint8 are experimental
@pytest.mark.parametrize("make,words", [
    (lambda: torch.ones(2, device="meta"), "on meta; pyprecision runs on the CPU: pass x.cpu()"),
    (lambda: torch.ones(2, requires_grad=True), "requires grad"),
    (lambda: torch.nn.Parameter(torch.ones(2)), "pass x.detach()"),
    (lambda: torch.ones(2).to_sparse(), "pass x.to_dense()"),
    (lambda: torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8), "quantized"),
    (lambda: torch.ones(2, dtype=torch.complex32), "torch.complex32, which has no numpy equivalent"),
    (lambda: torch.empty(2, dtype=torch.float4_e2m1fn_x2), "torch.float4_e2m1fn_x2, which has no"),
    (lambda: torch.empty(2, dtype=torch.bits8), "torch.bits8, which has no numpy equivalent"),
    (lambda: torch.empty(2, dtype=torch.int4), "torch.int4, which has no numpy equivalent"),
])
def test_tensors_the_core_cannot_read_are_refused_clearly(make, words) -> None:
    t = make()
    for fn in (pp.encode, pp.cast, pp.quantize):
        with pytest.raises(CastError, match=re.escape(words)):
            fn(t, "bf16")
    with pytest.raises(CastError, match=re.escape(re.sub(r"\bx\b", "bits", words))):
        pp.decode(t, "bf16")


def test_a_detached_parameter_and_a_negated_view_are_read_as_their_values() -> None:
    p = torch.nn.Parameter(torch.tensor([1.5, -2.0]))
    assert pp.encode(p.detach(), "bf16").tolist() == [0x3FC0, 0xC000]
    neg = torch._neg_view(torch.tensor([1.5, -2.0]))
    assert neg.is_neg() and pp.encode(neg, "bf16").tolist() == [0xBFC0, 0x4000]
    with pytest.raises(CastError, match="negated"):
        pp.decode(torch.ones(2, dtype=torch.int16), "bf16", out=torch._neg_view(torch.zeros(2)))
