"""``pyprecision hlo-opt`` and ``pyprecision hlo-run``."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from hlo_testdata import data_file

from pyprecision.tools.cli import main


def test_hlo_opt_without_passes_prints_back_unchanged(tmp_path, capsys) -> None:
    src = data_file("jax-0.4.30", "bnt_bf16.before_optimizations.txt")
    assert main(["hlo-opt", str(src)]) == 0
    assert capsys.readouterr().out == src.read_text()


def test_hlo_opt_runs_passes_in_order_to_file(tmp_path) -> None:
    src = data_file("jax-0.10.2", "dot_s8_s32.hlo.txt")
    out = tmp_path / "o.hlo"
    assert main(["hlo-opt", str(src), "--passes",
                 "neuron-int-matmul-downcast,upcast-all-to-fp32", "-o", str(out)]) == 0
    text = out.read_text()
    assert 'frontend_attributes={auto_cast="none"}' in text and "s32[4,3]{1,0} convert(" in text


def test_hlo_opt_unknown_pass_one_line_error(capsys) -> None:
    src = data_file("jax-0.10.2", "dot_s8_s32.hlo.txt")
    assert main(["hlo-opt", str(src), "--passes", "no-such-pass"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown HLO pass 'no-such-pass'" in err


def test_hlo_opt_malformed_text_one_line_error(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  ROOT x = f32[] bogus(y)\n}\n")
    assert main(["hlo-opt", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:4:24: unknown operand 'y'" in err


def test_hlo_run_matches_xla_outputs(tmp_path) -> None:
    src = data_file("jax-0.10.2", "bf16_mix.hlo.txt")
    npz = data_file("jax-0.10.2", "bf16_mix.npz")
    out = tmp_path / "out.npz"
    assert main(["hlo-run", str(src), "--inputs", str(npz), "-o", str(out)]) == 0
    got, want = np.load(out), np.load(npz)
    names = json.loads(str(got["__dtypes__"]))
    wnames = json.loads(str(want["__dtypes__"]))
    assert names["out0"] == wnames["out0"]
    a = got["out0"]
    b = want["out0"]
    if names["out0"] == "bfloat16":
        a, b = a.view(ml_dtypes.bfloat16).astype(np.float32), b.view(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_allclose(a, b, rtol=2e-2, atol=1e-2)


def test_hlo_run_accepts_arg_keys_and_parameter_names(tmp_path) -> None:
    src = data_file("jax-0.10.2", "dot_s8_s32.hlo.txt")
    z = np.load(data_file("jax-0.10.2", "dot_s8_s32.npz"))
    for keys in (("arg0", "arg1"), ("a.1", "b.1")):
        inp = tmp_path / "in.npz"
        np.savez(inp, **{keys[0]: z["in0"], keys[1]: z["in1"]})
        out = tmp_path / "o.npz"
        assert main(["hlo-run", str(src), "--inputs", str(inp), "-o", str(out)]) == 0
        assert np.array_equal(np.load(out)["out0"], z["out0"])


@pytest.mark.parametrize("bad, words", [
    ({"arg0": np.zeros((4, 9), np.int8), "arg1": np.zeros((8, 3), np.int8)}, "has shape (4, 9)"),
    ({"arg0": np.zeros((4, 8), np.int8)}, "no input for parameter 1"),
    ({"arg0": np.zeros((4, 8), np.float32), "arg1": np.zeros((8, 3), np.int8)}, "dtype float32"),
])
def test_hlo_run_input_mismatch_one_line_error(tmp_path, capsys, bad, words) -> None:
    src = data_file("jax-0.10.2", "dot_s8_s32.hlo.txt")
    inp = tmp_path / "in.npz"
    np.savez(inp, **bad)
    assert main(["hlo-run", str(src), "--inputs", str(inp), "-o", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_hlo_run_unknown_opcode_one_line_error(tmp_path, capsys) -> None:
    src = tmp_path / "m.hlo"
    src.write_text("HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
                   "  ROOT x = f32[2]{0} frobnicate(p)\n}\n")
    inp = tmp_path / "in.npz"
    np.savez(inp, arg0=np.zeros(2, np.float32))
    assert main(["hlo-run", str(src), "--inputs", str(inp), "-o", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "frobnicate" in err


def test_hlo_run_help_documents_keys(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["hlo-run", "--help"])
    out = capsys.readouterr().out
    assert "arg0, arg1" in out and "out0, out1" in out
