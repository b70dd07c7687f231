"""``pyprecision verify --dump URL_DIR_OR_GLOB``: dumps, inputs and reports on memory:// (and
file://) give the same table and the same per-dump reports as the local run, on every engine."""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from pyprecision.errors import DumpError
from pyprecision.tools.cli import main
from pyprecision.verify import find_dumps
from tests.distributed.conftest import distributed
from tests.distributed.test_verify_many import CORES, _dumps

MEM = fsspec.filesystem("memory")
ARGS = ("--format", "bf16", "--no-diagnosis")


@pytest.fixture
def bucket() -> Iterator[str]:
    """A fresh memory:// prefix, removed afterwards."""
    name = f"/h15r-v-{uuid.uuid4().hex[:10]}"
    yield f"memory://{name}"
    if MEM.exists(name):
        MEM.rm(name, recursive=True)


def _upload(local: Path, prefix: str) -> str:
    for p in sorted(local.iterdir()):
        MEM.pipe_file(MEM._strip_protocol(f"{prefix}/{p.name}"), p.read_bytes())
    return prefix


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _table(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if not ln.startswith("reports:")]


def _reports(docs: dict[str, bytes]) -> dict[str, Any]:
    """Each report without the dump's and input's names (which differ by where they live)."""
    got = {}
    for name, blob in docs.items():
        d = json.loads(blob)
        got[name] = {k: v for k, v in d.items() if k not in ("dump", "input")}
    return got


def test_a_url_directory_gives_the_local_table_and_reports(tmp_path: Path, bucket: str,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    inp, dumps = _dumps(tmp_path, bad={1: 2})
    code, out, _ = _run(capsys, "--input", str(inp), "--dump", str(dumps), "--jobs", "1",
                        "--json-dir", str(tmp_path / "r"), *ARGS)
    local = _reports({p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()})
    rin, rdumps = _upload(inp, f"{bucket}/in"), _upload(dumps, f"{bucket}/dumps")
    for jobs in ("1", "2"):
        rcode, rout, err = _run(capsys, "--input", rin, "--dump", rdumps, "--jobs", jobs,
                                "--json-dir", f"{bucket}/r{jobs}", *ARGS)
        assert (rcode, _table(rout)) == (code, _table(out)) == (1, _table(out)), err
        root = MEM._strip_protocol(f"{bucket}/r{jobs}")
        objs = {p.rsplit("/", 1)[-1]: MEM.cat_file(p) for p in MEM.find(root)}
        assert _reports(objs) == local
        assert json.loads(objs["core1.npy.json"])["dump"] == f"{rdumps}/core1.npy"
    assert f"reports: {bucket}/r2/<dump>.json ({CORES} files)" in rout


def test_a_url_glob_selects_the_dumps(tmp_path: Path, bucket: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    inp, dumps = _dumps(tmp_path)
    rin, rdumps = _upload(inp, f"{bucket}/in"), _upload(dumps, f"{bucket}/dumps")
    MEM.pipe_file(MEM._strip_protocol(f"{bucket}/dumps/sub/core1.npy"), b"not a match")
    code, out, _ = _run(capsys, "--input", rin, "--dump", f"{rdumps}/core[13].npy", "--json",
                        "--jobs", "1", *ARGS)
    doc = json.loads(out)
    assert code == 0 and [d["dump"] for d in doc["dumps"]] == [
        f"{rdumps}/core1.npy", f"{rdumps}/core3.npy"]
    with pytest.raises(DumpError, match="no dump files"):
        find_dumps(f"{rdumps}/nothing*.npy")


def test_file_url_glob_is_the_local_glob(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    inp, dumps = _dumps(tmp_path, bad={3: 1})
    code, out, _ = _run(capsys, "--input", str(inp), "--dump", str(dumps / "*.npy"), "--jobs",
                        "1", *ARGS)
    ucode, uout, _ = _run(capsys, "--input", f"file://{inp}", "--dump",
                          f"file://{dumps}/*.npy", "--jobs", "1", *ARGS)
    assert (ucode, uout) == (code, out) == (1, out)


def test_url_dumps_on_a_dask_cluster_give_the_same_reports(tmp_path: Path, bucket: str,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    inp, dumps = _dumps(tmp_path, bad={0: 1})
    rin, rdumps = _upload(inp, f"{bucket}/in"), _upload(dumps, f"{bucket}/dumps")
    code, out, _ = _run(capsys, "--input", rin, "--dump", rdumps, "--jobs", "1", *ARGS)
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as c:  # memory:// is per process
        dcode, dout, err = _run(capsys, "--input", rin, "--dump", rdumps, "--scheduler",
                                c.scheduler_address, *ARGS)
    assert (dcode, dout) == (code, out) == (1, out), err
