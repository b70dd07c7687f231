"""The one argument binder (emulate.bind_arguments) and its three call sites: hlo-run, verify's
pipeline path and verify --as-written give the same checks and the same unused-array warning."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.emulate import bind_arguments
from pyprecision.errors import EmulationError
from pyprecision.tools.cli import main

TEXT = """HloModule m

ENTRY e {
  a = f32[2,3] parameter(0)
  b = bf16[3] parameter(1)
  bc = f32[3] convert(b)
  bb = f32[2,3] broadcast(bc), dimensions={1}
  ROOT r = f32[2,3] add(a, bb)
}
"""


@pytest.fixture
def module():
    return hlo.parse(TEXT)


def _ins() -> dict[str, np.ndarray]:
    return {"arg0": np.ones((2, 3), np.float32),
            "arg1": np.array([1, 2, 3], ml_dtypes.bfloat16)}


def test_binds_by_arg_in_and_name_and_names_unused(module) -> None:
    ins = {"in0": np.ones((2, 3), np.float32), "b": np.array([1, 2, 3], ml_dtypes.bfloat16),
           "out0": np.zeros(3), "__dtypes__": np.array("{}")}
    bound = bind_arguments(module, ins)
    assert [a.shape for a in bound.args] == [(2, 3), (3,)]
    assert bound.unused == ["out0"]  # the side table is metadata, never "unused"
    assert "out0" in bound.warning("x.npz") and bound.warning("x.npz").startswith("x.npz: 1 array")


def test_raw_bits_of_a_bf16_parameter_are_relabelled(module) -> None:
    ins = _ins()
    ins["arg1"] = ins["arg1"].view(np.uint16)
    bound = bind_arguments(module, ins)
    assert bound.args[1].dtype == ml_dtypes.bfloat16
    assert bound.args[1].astype(np.float32).tolist() == [1.0, 2.0, 3.0]
    assert bound.unused == [] and bound.warning() is None


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("arg1"), "no input for parameter 1 'b' (expected key arg1, in1 or b)"),
    (lambda d: d.update(arg0=np.ones((3, 2), np.float32)),
     "input 'arg0' has shape (3, 2), parameter 0 'a' needs f32[2,3]"),
    (lambda d: d.update(arg0=np.ones((2, 3), np.float64)),
     "input 'arg0' has dtype float64, parameter 0 'a' needs f32[2,3] (float32)"),
    (lambda d: d.update(arg1=np.ones(3, np.float32)),
     "input 'arg1' has dtype float32, parameter 1 'b' needs bf16[3] (bfloat16)"),
])
def test_each_bad_input_is_one_line_naming_the_source(module, change, message) -> None:
    ins = _ins()
    change(ins)
    with pytest.raises(EmulationError) as e:
        bind_arguments(module, ins, source="in.npz")
    assert str(e.value) == f"in.npz: {message}"


def test_widen_takes_exactly_narrower_floats_only_when_asked(module) -> None:
    ins = _ins()
    ins["arg0"] = np.ones((2, 3), np.float16)
    with pytest.raises(EmulationError, match="has dtype float16"):
        bind_arguments(module, ins)
    assert bind_arguments(module, ins, widen=True).args[0].dtype == np.float32


def test_a_sequence_is_checked_for_count_shape_and_dtype(module) -> None:
    with pytest.raises(EmulationError, match="takes 2 parameter\\(s\\), got 1 input"):
        bind_arguments(module, [np.ones((2, 3), np.float32)])
    with pytest.raises(EmulationError, match="input '#0' has shape \\(6,\\)"):
        bind_arguments(module, [np.ones(6, np.float32), np.ones(3, ml_dtypes.bfloat16)])


@pytest.fixture
def files(tmp_path):
    src = tmp_path / "m.hlo.txt"
    src.write_text(TEXT)
    ins = tmp_path / "in.npz"
    np.savez(ins, **_ins(), extra=np.zeros(2))
    out = tmp_path / "out.npz"
    r = np.ones((2, 3), np.float32) + np.array([1, 2, 3], np.float32)
    np.savez(out, out0=r)
    return src, ins, out


def test_hlo_run_warns_about_unused_arrays(files, tmp_path, capsys) -> None:
    src, ins, _ = files
    assert main(["hlo-run", str(src), "--inputs", str(ins), "-o", str(tmp_path / "o.npz")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "warning:" in err and "extra" in err


@pytest.mark.parametrize("mode", [[], ["--as-written"]])
def test_verify_warns_about_unused_arrays_on_both_hlo_paths(files, capsys, mode) -> None:
    src, ins, out = files
    code = main(["verify", "--program", str(src), "--inputs", str(ins), "--dump", str(out),
                 *mode])
    captured = capsys.readouterr()
    assert code == 0, captured.out
    assert "not used by any input of the program: extra" in captured.err


@pytest.mark.parametrize("mode", [[], ["--as-written"]])
def test_verify_and_hlo_run_refuse_a_bad_dtype_alike(files, tmp_path, capsys, mode) -> None:
    src, _, out = files
    bad = tmp_path / "bad.npz"
    np.savez(bad, arg0=np.ones((2, 3), np.int32), arg1=np.ones(3, np.float32))
    assert main(["verify", "--program", str(src), "--inputs", str(bad), "--dump", str(out),
                 *mode]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "input 'arg0' has dtype int32, parameter 0 'a'" in err
    assert main(["hlo-run", str(src), "--inputs", str(bad), "-o", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "input 'arg0' has dtype int32, parameter 0 'a'" in err


# -- the program digest of the shared flag-set runs (emulate/pipeline/many.py) --------------------

def _reduce_program(dtype: str, narrow: bool) -> str:
    flag = " narrow_acc" if narrow else ""
    return f"""func @main {{
  tensor @x : input {dtype}[300]
  tensor @y : output {dtype}[1]
^bb0:
  %x = affine_load @x : {dtype}[300]
  %a = reduce.add %x, {dtype} 256.0 dims=[0]{flag} : {dtype}[1]
  affine_store %a, @y
}}
"""


@pytest.mark.parametrize(("dtype", "inert"), [("float32", True), ("bfloat16", False)])
def test_narrow_acc_is_left_out_of_the_digest_only_where_it_changes_nothing(dtype, inert) -> None:
    from pyprecision import ir
    from pyprecision.emulate import run_ir
    from pyprecision.emulate.pipeline.many import _ir_key, narrow_acc_is_inert

    wide, narrow = (ir.parse(_reduce_program(dtype, n)) for n in (False, True))
    inst = next(i for i in narrow.main.instructions() if isinstance(i, ir.ReduceOp))
    assert narrow_acc_is_inert(inst) is inert
    assert (_ir_key(wide) == _ir_key(narrow)) is inert
    assert inst.narrow_acc  # the digest leaves the program as it was
    np_dtype = np.float32 if dtype == "float32" else ml_dtypes.bfloat16
    x = {"x": np.ones(300, np_dtype)}
    same = np.array_equal(run_ir(wide, x)["y"].view(np.uint8), run_ir(narrow, x)["y"].view(np.uint8))
    assert same is inert  # the emulation agrees: inert exactly where the results are equal
