"""BatchNormTrainingUpcast (spec 004): bf16 batch-norm-training statistics in F32."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hlo_testdata import data_file

from pyprecision import hlo

BNT = data_file("jax-0.10.2", "bnt_bf16.hlo.txt")

EXPECTED_BODY = """  x.1 = bf16[4,3,2]{2,1,0} parameter(0)
  s.1 = bf16[3]{0} parameter(1)
  o.1 = bf16[3]{0} parameter(2)
  convert.8 = f32[4,3,2]{2,1,0} convert(x.1)
  convert.9 = f32[3]{0} convert(s.1)
  convert.10 = f32[3]{0} convert(o.1)
  batch-norm-training.11 = (f32[4,3,2]{2,1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(convert.8, convert.9, convert.10), epsilon=0.001, feature_index=1
  get-tuple-element.12 = f32[4,3,2]{2,1,0} get-tuple-element(batch-norm-training.11), index=0
  convert.13 = bf16[4,3,2]{2,1,0} convert(get-tuple-element.12)
  get-tuple-element.14 = f32[3]{0} get-tuple-element(batch-norm-training.11), index=1
  convert.15 = bf16[3]{0} convert(get-tuple-element.14)
  get-tuple-element.16 = f32[3]{0} get-tuple-element(batch-norm-training.11), index=2
  convert.17 = bf16[3]{0} convert(get-tuple-element.16)
  tuple.18 = (bf16[4,3,2]{2,1,0}, bf16[3]{0}, bf16[3]{0}) tuple(convert.13, convert.15, convert.17)
  batch_norm_training.5 = bf16[4,3,2]{2,1,0} get-tuple-element(tuple.18), index=0
  batch_norm_training.6 = bf16[3]{0} get-tuple-element(tuple.18), index=1
  batch_norm_training.7 = bf16[3]{0} get-tuple-element(tuple.18), index=2
"""


def run(text: str) -> tuple[bool, str]:
    m = hlo.parse(text)
    changed = hlo.run_passes(m, ["batch-norm-training-upcast"])
    return changed, hlo.to_text(m)


def test_bnt_rewrite_text() -> None:
    changed, out = run(BNT.read_text())
    assert changed
    assert EXPECTED_BODY in out
    assert out.startswith(BNT.read_text().split("ENTRY")[0])  # header untouched: signature stays bf16


def test_bnt_tuple_inherits_metadata() -> None:
    src = BNT.read_text().replace("feature_index=1\n", 'feature_index=1, metadata={op_name="bn"}\n')
    _, out = run(src)
    assert 'tuple.18 = (bf16[4,3,2]{2,1,0}, bf16[3]{0}, bf16[3]{0}) tuple(convert.13, convert.15, convert.17), metadata={op_name="bn"}' in out
    assert out.count('metadata={op_name="bn"}') == 1


def test_bnt_mixed_operands_all_converted() -> None:
    src = BNT.read_text().replace("s.1 = bf16[3]{0} parameter(1)", "s.1 = f32[3]{0} parameter(1)")
    src = src.replace("{(bf16[4,3,2]{2,1,0}, bf16[3]{0},", "{(bf16[4,3,2]{2,1,0}, f32[3]{0},")
    _, out = run(src)
    assert "convert.9 = f32[3]{0} convert(s.1)" in out


@pytest.mark.parametrize("name", ["bnt_f32", "bni_bf16"])
def test_bnt_f32_and_inference_untouched(name) -> None:
    text = data_file("jax-0.10.2", f"{name}.hlo.txt").read_text()
    assert run(text) == (False, text)


GRAD = """HloModule g

ENTRY main.6 {
  x.1 = bf16[2,3]{1,0} parameter(0)
  s.2 = bf16[3]{0} parameter(1)
  m.3 = bf16[3]{0} parameter(2)
  v.4 = bf16[3]{0} parameter(3)
  g.5 = bf16[2,3]{1,0} parameter(4)
  ROOT bng.6 = (bf16[2,3]{1,0}, bf16[3]{0}, bf16[3]{0}) batch-norm-grad(x.1, s.2, m.3, v.4, g.5), epsilon=0.001, feature_index=1
}

"""


def test_bnt_grad_untouched() -> None:
    assert run(GRAD) == (False, GRAD)


def test_bnt_NOTE_outputs_stay_bf16_and_equal_f32_rounded_once() -> None:
    from pyprecision.emulate import run_hlo

    z = np.load(data_file("jax-0.10.2", "bnt_bf16.npz"))
    args = [z[f"in{i}"].view(ml_dtypes.bfloat16) for i in range(3)]
    m = hlo.parse(BNT.read_text())
    hlo.run_passes(m, ["batch-norm-training-upcast"])
    outs = run_hlo(m, args)
    assert [o.dtype for o in outs] == [np.dtype(ml_dtypes.bfloat16)] * 3
    x, s, o = (a.astype(np.float64) for a in args)
    mean = x.mean(axis=(0, 2))
    var = ((x - mean[None, :, None]) ** 2).mean(axis=(0, 2))
    y = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + np.float32(0.001))
    y = y * s[None, :, None] + o[None, :, None]
    for got, ref in zip(outs, (y, mean, var)):
        want = ref.astype(np.float32).astype(ml_dtypes.bfloat16)
        ulp = np.abs(got.astype(np.float32) - want.astype(np.float32))
        spacing = np.abs(want.astype(np.float32)) * 2.0**-7 + 1e-30
        assert np.all(ulp <= spacing)   # at most one bf16 ulp from a single F32→BF16 rounding
        assert np.mean(got == want) > 0.9
