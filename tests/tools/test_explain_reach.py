"""explain's error measure (X1, X2), user frames (X3) and plain reasons (X4), on hand-made HLO and on
the real all-MiniLM-L6-v2 (tests/data/models/minilm, scripts/gen_minilm.py)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.explain import explain_hlo_program
from pyprecision.explain.frames import FrameTable, instruction_stack
from pyprecision.explain.numerics import output_error
from pyprecision.explain.reach import reach_masks
from pyprecision.ir import float32, uint8
from pyprecision.tools import cli
from pyprecision.verify import read_inputs

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
MINILM = MODELS / "minilm"

SELECT = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[2,3]{1,0}}

ENTRY main {
  x = f32[4]{0} parameter(0)
  zero = f32[] constant(0)
  z = f32[4]{0} broadcast(zero), dimensions={}
  p = pred[4]{0} compare(x, z), direction=GT
  big = f32[4]{0} exponential(x)
  s = f32[4]{0} select(p, x, big)
  t = f32[2]{0} slice(s), slice={[1:3]}
  ROOT r = f32[2,3]{1,0} broadcast(t), dimensions={0}
}
"""


def test_select_and_slice_pass_only_the_lanes_they_keep() -> None:
    module = hlo.parse(SELECT)
    pred = np.array([1, 0, 1, 0], np.uint8)
    masks = reach_masks(module, lambda path: pred if path == "p" else None)
    assert masks["r"].all() and masks["t"].all()
    assert masks["s"].tolist() == [False, True, True, False]          # slice [1:3]
    assert masks["x"].tolist() == [False, True, True, False]          # true branch lane 2, compare
    assert masks["big"].tolist() == [False, True, False, False]       # false branch, lane 1 only
    # a select whose predicate is unknown is conservative: both branches count in full
    masks = reach_masks(module, lambda path: None)
    assert masks["big"].tolist() == [False, True, True, False]


def test_error_counts_only_the_masked_lanes_on_the_tensor_scale() -> None:
    ref = np.array([1e30, 2.0, 4.0, -1e-30])
    got = np.array([np.inf, 2.0, 4.5, 0.0])
    mask = np.array([False, True, True, False])
    e = output_error(got, ref, float32, mask)
    assert (e.max_abs, e.reached, e.elements, e.nonfinite) == (0.5, 2, 4, 0)
    assert e.scaled == pytest.approx(0.5 / 4.0)
    whole = output_error(got, ref, float32)
    assert whole.nonfinite == 1 and whole.reached == 4
    flips = output_error(np.array([1, 0, 1, 1]), np.array([1, 1, 1, 1]), uint8)
    assert flips.scaled == 0.25          # discrete values: the fraction that differ


def test_no_runtime_warning_on_inf_minus_inf() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = output_error(np.array([np.inf, -np.inf, 1.0]), np.array([np.inf, np.inf, 1.0]), float32)
    assert e.nonfinite == 1 and e.max_abs == 0


def test_location_is_the_users_frame_not_the_helper() -> None:
    module = hlo.parse((MODELS / "jax-0.10.2" / "encoder_block.debug.hlo.txt").read_text())
    table = FrameTable(module)
    dot = module.entry.instruction("dot_general.10")
    stack = instruction_stack(table, dot)
    assert stack[0].text() == "scripts/lower_models.py:40 (MatMul.einsum)"   # the mm helper
    assert stack[-1].function == "<module>"
    user = table.user_frame(stack)
    assert user is not None and user.text() == "scripts/lower_models.py:127 (encoder_layer)"
    attn = table.user_frame(instruction_stack(table, module.entry.instruction("dot_general.12")))
    assert attn is not None and attn.text() == "scripts/lower_models.py:106 (attention)"


@pytest.fixture(scope="module")
def minilm() -> object:
    return explain_hlo_program(str(MINILM / "minilm2.debug.hlo.txt"), ["--auto-cast", "matmult"],
                               inputs=read_inputs(str(MINILM / "minilm2.npz")))


def test_minilm_top_rows_reach_the_output(minilm) -> None:
    errs = minilm.errors
    top = minilm.sorted_rows()[:20]
    assert all(errs[r.key].reached > 0 for r in top)
    assert all(errs[r.key].scaled < 0.1 for r in top)   # no near-zero noise (was max rel ~1e37)
    # erf's polynomial branches: the lanes a select drops are not counted
    erfc = [e for k, e in errs.items() if k.startswith("erfc.") and e.elements > 0]
    assert any(0 < e.reached < e.elements for e in erfc)
    dots = [r for r in minilm.sorted_rows() if r.op == "dot"]
    assert len(dots) == 12 + 4   # 6 projections per layer + 2 attention dots per layer
    for r in dots:
        assert r.operand_dtypes == ("bfloat16", "bfloat16")
        assert r.operand_dtypes_before == ("float32", "float32")
        assert r.location.startswith("scripts/gen_minilm.py:")
        assert "@" not in r.plain and "×" not in r.plain.replace(" × ", "")


def test_cli_top_op_sort_and_json_stack(capsys) -> None:
    d = MODELS / "jax-0.10.2"
    args = ["explain", str(d / "encoder_block.debug.hlo.txt"), "--auto-cast", "matmult",
            "--inputs", str(d / "encoder_block.npz"), "--op", "dot", "--top", "3"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cli.main(args) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert "location" in lines[2] and "operands" in lines[2] and "scaled" in lines[2]
    body = [ln for ln in lines[3:] if ln.startswith("dot_general")]
    assert len(body) == 3 and all("bfloat16 × bfloat16" in ln for ln in body)
    assert "re-encoded" not in out and "(×" not in out
    assert cli.main(args + ["--json", "--sort", "order"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["op"] for r in doc["rows"]] == ["dot"] * 3
    assert doc["rows"][0]["stack"][-1].endswith("(<module>)")
    assert cli.main(args + ["--verbose"]) == 0
    assert "auto-cast-tc-inputs" in capsys.readouterr().out
    assert cli.main(args[:-4] + ["--op", "nosuch"]) == 2
    assert "kinds here:" in capsys.readouterr().err


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    d = MODELS / "jax-0.10.2"
    png = tmp_path / "e.png"
    args = ["explain", str(d / "encoder_block.hlo.txt"), "--auto-cast", "matmult", "--inputs",
            str(d / "encoder_block.npz"), "--plot", str(png), "--top", "1"]
    assert cli.main(args) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
