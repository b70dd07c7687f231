"""``pyprecision verify --dump DIR|GLOB``: one check per dump (matched to its input by stem), in
parallel (serial, a process pool or Dask give the same reports), one table, per-dump JSON."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from pyprecision.errors import DumpError
from pyprecision.tools.cli import main
from pyprecision.verify import find_dumps, match_inputs

CORES = 4


def _dumps(tmp_path: Path, bad: dict[int, int] | None = None) -> tuple[Path, Path]:
    """in/coreK.npy (float32) and dumps/coreK.npy (their bf16 codes, by ml_dtypes), with
    ``bad[k]`` codes of core k flipped in their lowest bit."""
    rng = np.random.default_rng(3)
    (tmp_path / "in").mkdir()
    (tmp_path / "dumps").mkdir()
    for k in range(CORES):
        x = rng.standard_normal((16, 32)).astype(np.float32)
        codes = x.astype(ml_dtypes.bfloat16).view(np.uint16).copy()
        for i in range((bad or {}).get(k, 0)):
            codes.reshape(-1)[i] ^= 1
        np.save(tmp_path / "in" / f"core{k}.npy", x)
        np.save(tmp_path / "dumps" / f"core{k}.npy", codes)
    return tmp_path / "in", tmp_path / "dumps"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_dump_is_checked_against_its_own_input(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    inp, dumps = _dumps(tmp_path, bad={2: 3})
    code, out, _ = _run(capsys, "--input", str(inp), "--dump", str(dumps), "--format", "bf16",
                        "--jobs", "2", "--json-dir", str(tmp_path / "reports"),
                        "--no-diagnosis")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["dump", "input", "elements", "mismatches", "max", "ulp", "result"]
    rows = {ln.split()[0]: ln.split() for ln in lines[1:1 + CORES]}
    assert rows["core2.npy"][1:4] == ["core2.npy", "512", "3"] and rows["core2.npy"][-1] == "FAIL"
    assert all(rows[f"core{k}.npy"][3] == "0" and rows[f"core{k}.npy"][-1] == "OK"
               for k in (0, 1, 3))
    assert "4 dumps: 3 OK, 1 FAIL, 0 ERROR" in out
    rep = json.loads((tmp_path / "reports" / "core2.npy.json").read_text())
    assert rep["ok"] is False and rep["report"]["mismatches"] == 3
    assert rep["input"].endswith("core2.npy")
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        f"core{k}.npy.json" for k in range(CORES)]


def test_a_glob_selects_the_dumps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp, dumps = _dumps(tmp_path)
    code, out, _ = _run(capsys, "--input", str(inp), "--dump", str(dumps / "core[13].npy"),
                        "--format", "bf16", "--jobs", "1", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True
    assert [Path(d["dump"]).name for d in doc["dumps"]] == ["core1.npy", "core3.npy"]


def test_serial_pool_and_dask_give_the_same_reports(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    cluster: Any) -> None:
    inp, dumps = _dumps(tmp_path, bad={0: 1, 3: 5})
    docs = []
    for engine in (["--jobs", "1"], ["--jobs", "2"], ["--scheduler", cluster.scheduler_address]):
        d = tmp_path / f"r{len(docs)}"
        code, _, _ = _run(capsys, "--input", str(inp), "--dump", str(dumps), "--format", "bf16",
                          "--json-dir", str(d), *engine)
        assert code == 1
        docs.append({p.name: json.loads(p.read_text()) for p in d.iterdir()})
    assert docs[0] == docs[1] == docs[2]
    assert docs[2]["core3.npy.json"]["report"]["mismatches"] == 5


def test_a_dump_without_an_input_is_one_error_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp, dumps = _dumps(tmp_path)
    (inp / "core1.npy").unlink()
    code, out, err = _run(capsys, "--input", str(inp), "--dump", str(dumps), "--format", "bf16",
                          "--json-dir", str(tmp_path / "reports"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "core1.npy: no input named core1.*" in err
    assert not (tmp_path / "reports").exists()


def test_an_unreadable_dump_is_an_error_row_and_the_others_still_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp, dumps = _dumps(tmp_path)
    (dumps / "core2.npy").write_bytes(b"\x93NUMPY broken")
    code, out, _ = _run(capsys, "--input", str(inp), "--dump", str(dumps), "--format", "bf16")
    assert code == 2
    row = next(ln for ln in out.splitlines() if ln.startswith("core2.npy"))
    assert "ERROR:" in row
    assert "4 dumps: 3 OK, 0 FAIL, 1 ERROR" in out


def test_one_input_file_for_every_dump(tmp_path: Path) -> None:
    inp, dumps = _dumps(tmp_path)
    pairs = match_inputs(find_dumps(str(dumps)), str(inp / "core0.npy"))
    assert [Path(i).name for i, _ in pairs] == ["core0.npy"] * CORES


def test_matching_refuses_an_ambiguous_stem_and_an_empty_glob(tmp_path: Path) -> None:
    inp, dumps = _dumps(tmp_path)
    np.save(inp / "core0.bin.npy", np.zeros(1, np.float32))  # stem core0.bin: not ambiguous
    (inp / "core0.bin").write_bytes(b"")  # stem core0: ambiguous with core0.npy
    with pytest.raises(DumpError, match="several inputs match it"):
        match_inputs(find_dumps(str(dumps)), str(inp))
    with pytest.raises(DumpError, match="no dump files"):
        find_dumps(str(dumps / "nothing*.npy"))


def test_program_checks_over_many_dumps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.tools.test_verify_program import MLP, _mlp_reference

    (tmp_path / "inputs").mkdir()
    (tmp_path / "dumps").mkdir()
    rng = np.random.default_rng(5)
    for k in range(3):
        xT = rng.standard_normal((4, 2)).astype(np.float32)
        np.savez(tmp_path / "inputs" / f"core{k}.npz", xT=xT)
        y = _mlp_reference(xT)  # numpy, independent of the emulator
        if k == 1:
            y = y.copy()
            y.reshape(-1)[0] = np.nextafter(y.reshape(-1)[0], np.float32(np.inf))
        np.savez(tmp_path / "dumps" / f"core{k}.npz", y=y)
    code, out, _ = _run(capsys, "--program", str(MLP), "--inputs", str(tmp_path / "inputs"),
                        "--dump", str(tmp_path / "dumps"), "--jobs", "2", "--json-dir",
                        str(tmp_path / "r"), "--no-diagnosis")
    assert code == 1
    assert "3 dumps: 2 OK, 1 FAIL, 0 ERROR" in out
    rep = json.loads((tmp_path / "r" / "core1.npz.json").read_text())
    assert rep["kind"] == "program" and rep["report"]["mismatches"] == 1
    assert rep["report"]["max_ulp"] == 1
