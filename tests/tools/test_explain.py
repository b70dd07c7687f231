"""``pyprecision explain``: per-op dtype before/after, the deciding pass and gate, per-op error."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pyprecision import ir
from pyprecision.explain import explain
from pyprecision.tools import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HLO = ROOT / "tests" / "data" / "hlo" / "jax-0.4.30"

#: %a has two users, so DTypeMutator cannot absorb the cast %c; %e has one, so %f is absorbed.
MULTI = """\
func @main {
  tensor @x : input float32[2,4]
  tensor @y : output bfloat16[2,4]
  tensor @z : output float32[2,4]
^bb0:
  %x = affine_load @x : float32[2,4]
  %a = add %x, float32 1.5 : float32[2,4]
  %c = cast %a : bfloat16[2,4]
  %d = mul %a, float32 3.0 : float32[2,4]
  %e = exp %x : float32[2,4]
  %f = cast %e : bfloat16[2,4]
  %g = add %f, %c : bfloat16[2,4]
  affine_store %g, @y
  affine_store %d, @z
}
"""

#: a runtime (non-const) broadcast load whose value is cast: the DMA can carry it on gen3 only.
DMA = """\
func @main {
  tensor @r : input float32[1,4]
  tensor @y : output bfloat16[2,4]
^bb0:
  %r = sb_atom_load @r broadcast : float32[2,4]
  %c = cast %r : bfloat16[2,4]
  affine_store %c, @y
}
"""


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("verify_cmd", "explain_cmd"))

    def _run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["explain", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def _rows(ex) -> dict:
    return {r.key: r for r in ex.rows}


def test_mlp_all(tmp_path: Path) -> None:
    rows = _rows(explain(str(EXAMPLES / "mlp.pir"), ["--auto-cast", "all"]))
    assert (rows["%mm"].before, rows["%mm"].after) == ("float32", "bfloat16")
    assert rows["%mm"].decided_by.startswith("auto-cast-fp32: fp32 result narrowed")
    assert "boundary" in rows["%xT"].decided_by
    assert rows["%w"].decided_by.startswith("DTypeMutator gate 6: mutateLoad: weight const-folded")
    assert rows["%bfloat16.w"].after == "-"
    assert "cast-elimination rule 1" in rows["%bfloat16.w"].decided_by


def test_no_passes_for_auto_cast_none() -> None:
    ex = explain(str(EXAMPLES / "mlp.pir"), [])
    assert ex.passes == []
    assert all(r.before == r.after and r.decided_by == "no passes run (--auto-cast none)"
               for r in ex.rows)


def test_gate_4_multi_user_and_absorbed_cast(tmp_path: Path) -> None:
    (tmp_path / "m.pir").write_text(MULTI)
    rows = _rows(explain(str(tmp_path / "m.pir"), ["--auto-cast", "matmult"]))
    assert rows["%a"].after == "float32"
    assert rows["%a"].decided_by.startswith("DTypeMutator gate 4: multi-user")
    assert "cannot absorb it into %a" in rows["%c"].decided_by and rows["%c"].after == "bfloat16"
    assert rows["%e"].after == "bfloat16"
    assert rows["%e"].decided_by.startswith("DTypeMutator (all eight gates passed)")
    assert rows["%f"].after == "-" and "identity cast removed" in rows["%f"].decided_by


def test_gate_8_matmul_psum() -> None:
    rows = _rows(explain(str(EXAMPLES / "transpose_matmul.pir"), ["--auto-cast", "matmult"]))
    assert rows["%xT"].after == "float32"
    assert rows["%xT"].decided_by.startswith("DTypeMutator gate 8: canMutateDstTy is false")


@pytest.mark.parametrize(("target", "after", "reason"), [
    ("gen2", "float32", "DTypeMutator gate 6: mutateLoad: the target has no DMA cast"),
    ("gen3", "bfloat16", "DTypeMutator gate 6: mutateLoad: the DMA carries the cast"),
])
def test_dma_cast_depends_on_target(tmp_path: Path, target: str, after: str, reason: str) -> None:
    (tmp_path / "d.pir").write_text(DMA)
    rows = _rows(explain(str(tmp_path / "d.pir"), ["--auto-cast", "matmult"], target))
    assert rows["%r"].after == after
    assert rows["%r"].decided_by.startswith(reason)


def _mlp_numpy(xT: np.ndarray) -> np.ndarray:
    w = np.asarray(ir.parse((EXAMPLES / "mlp.pir").read_text()).main.get_tensor("w").value, np.float32)
    acc = np.zeros((xT.shape[1], w.shape[1]), np.float32)
    for k in range(xT.shape[0]):
        acc = (acc + (xT[k][:, None] * w[k][None, :]).astype(np.float32)).astype(np.float32)
    return np.maximum(acc + np.float32(0.25), np.float32(0))


def test_errors_against_all_fp32(tmp_path: Path) -> None:
    x = np.random.default_rng(2).standard_normal((4, 2)).astype(np.float32)
    np.savez(tmp_path / "in.npz", xT=x)
    none = explain(str(EXAMPLES / "mlp.pir"), [], inputs=str(tmp_path / "in.npz"))
    assert none.errors and all(e.max_abs == 0 and e.max_ulp == 0 for e in none.errors.values())
    ex = explain(str(EXAMPLES / "mlp.pir"), ["--auto-cast", "all"], inputs=str(tmp_path / "in.npz"))
    from pyprecision.emulate import run_ir
    from pyprecision.frontend import parse_flags
    from pyprecision.passes import run_pipeline

    m = ir.parse((EXAMPLES / "mlp.pir").read_text())
    run_pipeline(m, parse_flags(["--auto-cast", "all"]), "gen2")
    device = run_ir(m, {"xT": x})["y"].astype(np.float64)
    want = float(np.abs(device - _mlp_numpy(x).astype(np.float64)).max())
    assert want > 0
    assert ex.errors["%y"].max_abs == pytest.approx(want, rel=0, abs=0)
    rels = [ex.errors[r.key].scaled for r in ex.sorted_rows() if r.key in ex.errors]
    assert rels == sorted(rels, reverse=True)


def test_cli_table_and_json(run, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", xT=np.ones((4, 2), np.float32))
    code, out, _ = run(str(EXAMPLES / "mlp.pir"), "--auto-cast", "all", "--inputs",
                       str(tmp_path / "in.npz"))
    assert code == 0
    assert "decided by" in out and "max rel" in out and "%mm" in out
    code, out, _ = run(str(EXAMPLES / "mlp.pir"), "--auto-cast", "all", "--json")
    doc = json.loads(out)
    assert doc["mode"] == "all" and doc["passes"][0] == "auto-cast-fp32"
    row = next(r for r in doc["rows"] if r["name"] == "%mm")
    assert row["before"] == "float32" and row["after"] == "bfloat16" and row["error"] is None
    assert set(row) >= {"name", "op", "before", "after", "decided_by", "reasons", "error"}


def test_cli_compare(run, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", x=np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32))
    prog = EXAMPLES / "transpose_matmul.pir"
    inputs = ir.parse(prog.read_text()).main.inputs
    np.savez(tmp_path / "in.npz", **{t.name: np.random.default_rng(0).standard_normal(t.shape)
                                     .astype(np.float32) for t in inputs})
    code, out, _ = run(str(prog), "--inputs", str(tmp_path / "in.npz"), "--compare",
                       "--auto-cast all", "--auto-cast matmult --target gen3")
    assert code == 0
    assert "A: --auto-cast all" in out and "B: --auto-cast matmult --target gen3" in out
    assert "A after" in out and "B after" in out and "A scaled" in out
    code, out, _ = run(str(prog), "--json", "--compare", "--auto-cast all", "--auto-cast matmult")
    doc = json.loads(out)
    assert doc["a"]["mode"] == "all" and doc["b"]["mode"] == "matmult-bf16"
    a = {r["name"]: r["after"] for r in doc["a"]["rows"]}
    b = {r["name"]: r["after"] for r in doc["b"]["rows"]}
    assert a["%y"] == "bfloat16" and b["%y"] == "float32"


def test_hlo_rows(run) -> None:
    code, out, _ = run(str(HLO / "bf16_mix.hlo.txt"), "--as-written", "--passes",
                       "upcast-all-to-fp32", "--json")
    doc = json.loads(out)
    assert code == 0
    add = next(r for r in doc["rows"] if r["name"] == "add.14")
    assert (add["before"], add["after"]) == ("bf16", "f32")
    assert add["decided_by"] == "upcast-all-to-fp32: bf16 → f32"


@pytest.mark.parametrize(("argv", "message"), [
    (["nope.pir"], "no such file"),
    ([str(EXAMPLES / "mlp.pir"), "--passes", "upcast-all-to-fp32"],
     "--passes and --as-written apply to HLO"),
    ([str(HLO / "bf16_mix.hlo.txt"), "--as-written", "--target", "gen3"],
     "--as-written explains the HLO passes only"),
    ([str(EXAMPLES / "mlp.pir"), "--compare", "--auto-cast sometimes", "--auto-cast all"],
     "sometimes"),
    ([str(EXAMPLES / "mlp.pir"), "--inputs", "missing.npz"], "no such file"),
])
def test_bad_inputs_exit_2(run, argv: list[str], message: str) -> None:
    code, _, err = run(*argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyprecision explain: error: "), err
    assert message in lines[0]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.pir")
                                        if p.name != "big_10k.pir"))
@pytest.mark.parametrize("flags", [["--auto-cast", "all"], ["--auto-cast", "matmult"],
                                   ["--auto-cast", "all", "--auto-cast-type", "fp8_e4m3"]])
def test_every_example_explains(name: str, flags: list[str]) -> None:
    ex = explain(str(EXAMPLES / name), flags)
    assert ex.rows and all(r.reasons for r in ex.rows)
    module = ir.parse((EXAMPLES / name).read_text())
    n_before = sum(len(list(f.instructions())) for f in module.functions)
    assert sum(r.before != "-" or r.op in ("opaque", "call") for r in ex.rows) >= n_before
    # every op of the program before the passes has exactly one row
    assert len({r.key for r in ex.rows}) == len(ex.rows)


def test_bf16_inputs_saved_by_numpy_as_void(tmp_path: Path) -> None:
    import ml_dtypes

    x = np.random.default_rng(3).standard_normal((4, 2)).astype(ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", xT=x)  # numpy writes |V2
    with np.load(tmp_path / "in.npz") as z:
        assert z["xT"].dtype.kind == "V"
    ex = explain(str(EXAMPLES / "mlp.pir"), ["--auto-cast", "all"], inputs=str(tmp_path / "in.npz"))
    assert ex.errors is not None
    assert ex.errors["%xT"].max_abs == 0  # bf16 data is exact in the bf16 input


def test_reasons_come_from_the_log(tmp_path: Path) -> None:
    """Every row of the examples is explained from the passes' provenance log (nothing derived),
    and each row's recorded decisions name the pass that made them."""
    (tmp_path / "m.pir").write_text(MULTI)
    for prog, flags in [(EXAMPLES / "mlp.pir", ["--auto-cast", "all"]),
                        (EXAMPLES / "mlp.pir", ["--auto-cast", "matmult"]),
                        (tmp_path / "m.pir", ["--auto-cast", "matmult"])]:
        ex = explain(str(prog), flags, "gen3")
        assert not any(r.derived for r in ex.rows) and not ex.notes
        for r in ex.rows:
            assert all(d.pass_name in ex.passes for d in r.decisions)
    rows = _rows(explain(str(tmp_path / "m.pir"), ["--auto-cast", "matmult"]))
    (gate,) = [d for d in rows["%a"].decisions if d.rule.startswith("gate")]
    assert (gate.pass_name, gate.rule, gate.state) == ("dtype-mutator", "gate 4", "mismatch")
    doc = explain(str(tmp_path / "m.pir"), ["--auto-cast", "matmult"]).to_json()
    a = next(r for r in doc["rows"] if r["name"] == "%a")
    assert {"pass": "dtype-mutator", "rule": "gate 4", "state": "mismatch",
            "message": "multi-user: dst is read 2 times, not exactly once"} in a["decisions"]


E4M3FN = """\
func @main {
  tensor @x : input float8e4m3fn[2,2]
  tensor @y : output float32[2,2]
^bb0:
  %x = affine_load @x : float8e4m3fn[2,2]
  %f = cast %x : float32[2,2]
  affine_store %f, @y
}
"""


def test_uncovered_pass_falls_back_to_derived(tmp_path: Path) -> None:
    """The fp8e4m3fn relabelling has no provenance hook: its changes are re-derived from snapshots,
    marked derived, and a note says so."""
    (tmp_path / "e.pir").write_text(E4M3FN)
    ex = explain(str(tmp_path / "e.pir"), ["--auto-cast", "none",
                                           "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3"])
    assert ex.passes == ["fp8e4m3fn-as-fp8e4"]
    rows = _rows(ex)
    assert rows["%x"].after == "float8e4" and rows["%x"].derived
    assert rows["%x"].decided_by.startswith("fp8e4m3fn-as-fp8e4:")
    assert any("not covered by the passes' provenance log" in n for n in ex.notes)
