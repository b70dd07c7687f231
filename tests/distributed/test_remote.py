"""reencode_distributed on URLs (issue 15: "usually in object storage"): file:// on the process
LocalCluster behaves exactly as a path; memory:// on a threads LocalCluster (memory:// is per
process) writes the bytes reencode() writes into memory://, resumes from records that are
objects, never leaves a partial object under a final name; a URL without its backend, or without
fsspec, is one line and nothing written."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from pyprecision.errors import DumpError
from pyprecision.io import INCOMPLETE_MARKER, open_tensors
from pyprecision.reencode import reencode, reencode_distributed
from pyprecision.reencode.resume import RECORDS_DIR
from tests.distributed.conftest import ROOT, distributed, make_checkpoint, tree_bytes

MEM = fsspec.filesystem("memory")
SHARDS = 6


class Stop(Exception):
    """Raised from the progress callback: the driver is interrupted."""


def _names(n: int = SHARDS) -> set[str]:
    return {f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)}


def _stop_after(k: int) -> Any:
    seen = [0]

    def progress(_: int) -> None:
        seen[0] += 1
        if seen[0] >= k:
            raise Stop

    return progress


def _idle(client: Any, timeout: float = 30.0) -> None:
    """Wait until no worker thread still runs a task (a cancelled task runs to its end)."""
    end = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < end:
        busy = client.run(lambda dask_worker: len(dask_worker.active_threads))
        quiet = 0 if any(busy.values()) else quiet + 1
        if quiet == 3:
            return
        time.sleep(0.05)
    raise AssertionError("workers stayed busy")


# --- file:// on the process cluster ----------------------------------------------------------


def test_file_urls_give_the_one_machine_bytes(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=4)
    reencode(src, tmp_path / "one", "fp8e4", rounding="stochastic", seed=3)
    got = reencode_distributed(f"file://{src}", f"file://{tmp_path / 'many'}", "fp8e4",
                               client=client, rounding="stochastic", seed=3)
    assert tree_bytes(tmp_path / "many") == tree_bytes(tmp_path / "one")
    # file:// is the path it names: the summary names paths, as reencode() does
    assert sorted(got.encoded) == sorted(str(tmp_path / "many" / n) for n in _names(4))


def test_file_urls_resume_only_the_missing_shards(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = f"file://{tmp_path / 'out'}"
    with pytest.raises(Stop):
        reencode_distributed(f"file://{src}", out, "bf16", client=client,
                             progress=_stop_after(2))
    _idle(client)
    have = {p.name for p in (tmp_path / "out").glob("*.safetensors")}
    assert (tmp_path / "out" / INCOMPLETE_MARKER).exists() and 2 <= len(have) <= SHARDS
    again = reencode_distributed(f"file://{src}", out, "bf16", client=client)
    assert {Path(p).name for p in again.resumed} == have
    assert {Path(p).name for p in again.encoded} == _names() - have
    reencode(src, tmp_path / "one", "bf16")
    assert tree_bytes(tmp_path / "out") == tree_bytes(tmp_path / "one")


def test_file_urls_survive_a_killed_worker(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 21)  # 8 MB shards
    pids = client.run(os.getpid)
    killed: list[str] = []

    def killer() -> None:
        end = time.monotonic() + 20
        while time.monotonic() < end and not killed:
            busy = client.run(lambda dask_worker: len(dask_worker.active_threads))
            for addr, n in busy.items():
                if n:
                    os.kill(pids[addr], signal.SIGKILL)
                    killed.append(addr)
                    return
            time.sleep(0.01)

    t = threading.Thread(target=killer)
    t.start()
    got = reencode_distributed(f"file://{src}", f"file://{tmp_path / 'out'}", "bf16",
                               client=client)
    t.join()
    assert killed, "no worker was busy to be killed"
    assert len(got.encoded) == SHARDS
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]
    reencode(src, tmp_path / "one", "bf16")
    assert tree_bytes(tmp_path / "out") == tree_bytes(tmp_path / "one")


# --- memory:// on a threads cluster ----------------------------------------------------------


@pytest.fixture(scope="module")
def mem_client() -> Iterator[Any]:
    """A LocalCluster(processes=False) of 2 workers: they share this process's memory://."""
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as c, distributed.Client(c) as cl:
        yield cl


@pytest.fixture
def bucket() -> Iterator[str]:
    """A fresh memory:// prefix, removed afterwards."""
    name = f"/h15r-{uuid.uuid4().hex[:10]}"
    yield f"memory://{name}"
    if MEM.exists(name):
        MEM.rm(name, recursive=True)


def _upload(local: Path, prefix: str) -> str:
    for p in sorted(local.iterdir()):
        MEM.pipe_file(f"{prefix}/{p.name}", p.read_bytes())
    return prefix


def _objects(prefix: str) -> dict[str, bytes]:
    root = MEM._strip_protocol(prefix).rstrip("/")
    if not MEM.exists(root):
        return {}
    return {p[len(root) + 1:]: MEM.cat_file(p) for p in sorted(MEM.find(root))}


def _no_partial(prefix: str) -> None:
    """No temporary object is left, and every shard under a final name opens complete."""
    for name in _objects(prefix):
        assert not name.endswith(".tmp"), name
        if name.endswith(".safetensors"):
            open_tensors(f"{prefix}/{name}")  # raises on a truncated object


@pytest.mark.parametrize("opts", [{}, {"rounding": "stochastic", "seed": 5, "scale": "amax"}],
                         ids=["rne", "stochastic-amax"])
def test_memory_urls_give_the_bytes_reencode_writes_there(tmp_path: Path, mem_client: Any,
                                                          bucket: str, opts: dict[str, Any]
                                                          ) -> None:
    src = _upload(make_checkpoint(tmp_path / "in", shards=4), f"{bucket}/in")
    reencode(src, f"{bucket}/one", "fp8e5", **opts)
    got = reencode_distributed(src, f"{bucket}/many", "fp8e5", client=mem_client, **opts)
    assert _objects(f"{bucket}/many") == _objects(f"{bucket}/one")
    assert sorted(_objects(f"{bucket}/many")) == sorted(
        [*_names(4), "model.safetensors.index.json"])  # no marker, records, temporaries
    assert got.outputs[-1] == f"{bucket}/many/model.safetensors.index.json"
    assert set(got.placement.values()) <= set(mem_client.scheduler_info()["workers"])


def test_memory_urls_resume_from_records_that_are_objects(tmp_path: Path, mem_client: Any,
                                                          bucket: str) -> None:
    src = _upload(make_checkpoint(tmp_path / "in", shards=SHARDS), f"{bucket}/in")
    out = f"{bucket}/out"
    with pytest.raises(Stop):
        reencode_distributed(src, out, "bf16", client=mem_client, progress=_stop_after(2))
    _idle(mem_client)
    objs = _objects(out)
    have = {n for n in objs if n.endswith(".safetensors")}
    assert INCOMPLETE_MARKER in objs and "model.safetensors.index.json" not in objs
    assert {f"{RECORDS_DIR}/{n}.json" for n in have} <= set(objs)
    rec = json.loads(objs[f"{RECORDS_DIR}/{sorted(have)[0]}.json"])
    blob = objs[sorted(have)[0]]
    assert rec["output_size"] == len(blob) and rec["source_checksum"] == "sha256:" + hashlib.sha256(
        MEM.cat_file(f"{src}/{sorted(have)[0]}")).hexdigest()
    again = reencode_distributed(src, out, "bf16", client=mem_client)
    assert {p.rsplit("/", 1)[-1] for p in again.resumed} == have
    assert {p.rsplit("/", 1)[-1] for p in again.encoded} == _names() - have
    reencode(src, f"{bucket}/one", "bf16")
    assert _objects(out) == _objects(f"{bucket}/one")


def test_quick_checksum_of_an_object_sees_it_replaced(tmp_path: Path, mem_client: Any,
                                                      bucket: str) -> None:
    src = _upload(make_checkpoint(tmp_path / "in", shards=SHARDS), f"{bucket}/in")
    out = f"{bucket}/out"
    with pytest.raises(Stop):
        reencode_distributed(src, out, "bf16", client=mem_client, checksum="quick",
                             progress=_stop_after(SHARDS))
    _idle(mem_client)
    first = sorted(_names())[0]
    rec = json.loads(_objects(out)[f"{RECORDS_DIR}/{first}.json"])
    assert rec["source_checksum"].startswith(f"quick:{rec['source_size']}:")
    other = make_checkpoint(tmp_path / "other", shards=SHARDS, seed=1)  # same header, new values
    MEM.pipe_file(MEM._strip_protocol(f"{src}/{first}"), (other / first).read_bytes())
    again = reencode_distributed(src, out, "bf16", client=mem_client, checksum="quick")
    assert [p.rsplit("/", 1)[-1] for p in again.encoded] == [first]
    assert len(again.resumed) == SHARDS - 1
    reencode(src, f"{bucket}/one", "bf16")
    assert _objects(out) == _objects(f"{bucket}/one")


def _failing_load(shard: str) -> None:
    """In this process (the threads cluster's workers): reading ``shard``'s second tensor fails,
    after its first tensor was already written to the spool."""
    import pyprecision.reencode.distributed as dist

    real = dist._write_file

    def write(store: Any, fin: str, *args: Any, **kw: Any) -> Any:
        if not fin.endswith(shard):
            return real(store, fin, *args, **kw)
        load, n = store.load, [0]

        def flaky(name: str) -> Any:
            n[0] += 1
            if n[0] == 2:
                raise OSError(5, "injected read failure")
            return load(name)

        store.load = flaky
        return real(store, fin, *args, **kw)

    dist._write_file = write  # type: ignore[assignment]
    dist._real = real  # type: ignore[attr-defined]


def test_a_failing_task_leaves_nothing_partial_and_the_rerun_completes(
        tmp_path: Path, mem_client: Any, bucket: str) -> None:
    import pyprecision.reencode.distributed as dist

    src = _upload(make_checkpoint(tmp_path / "in", shards=4, elements=1 << 16), f"{bucket}/in")
    out = f"{bucket}/out"
    _failing_load("model-00003-of-00004.safetensors")
    try:
        with pytest.raises(OSError, match="injected read failure"):
            reencode_distributed(src, out, "bf16", client=mem_client, retries=0)
    finally:
        dist._write_file = dist._real  # type: ignore[attr-defined]
    _idle(mem_client)
    objs = _objects(out)
    assert "model-00003-of-00004.safetensors" not in objs
    assert "model.safetensors.index.json" not in objs and INCOMPLETE_MARKER in objs
    _no_partial(out)
    again = reencode_distributed(src, out, "bf16", client=mem_client)
    assert "memory:" in again.encoded[0] and len(again.encoded) + len(again.resumed) == 4
    reencode(src, f"{bucket}/one", "bf16")
    assert _objects(out) == _objects(f"{bucket}/one")


def test_sha256_of_an_object_is_the_sha256_of_its_bytes(bucket: str) -> None:
    from pyprecision.reencode.resume import file_sha256

    for n in (0, 5, (8 << 20) + 3):
        data = os.urandom(n)
        MEM.pipe_file(MEM._strip_protocol(f"{bucket}/f{n}"), data)
        assert file_sha256(f"{bucket}/f{n}") == hashlib.sha256(data).hexdigest()


# --- bad input -------------------------------------------------------------------------------


def test_a_url_without_its_backend_is_one_error_nothing_written(tmp_path: Path,
                                                                mem_client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=2)
    with pytest.raises(DumpError, match=r"s3:// file system is not installed: pip install s3fs"):
        reencode_distributed("s3://bucket/ckpt/", tmp_path / "out", "bf16", client=mem_client)
    with pytest.raises(DumpError, match=r"pip install s3fs"):
        reencode_distributed(src, "s3://bucket/out/", "bf16", client=mem_client)
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


HIDE_FSSPEC = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'fsspec':
            raise ImportError('hidden: ' + name)
sys.meta_path.insert(0, Hide())
from pyprecision.tools.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_cli_without_fsspec_a_url_is_one_line_naming_the_extra(tmp_path: Path,
                                                               cluster: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=2)
    r = subprocess.run([sys.executable, "-c", HIDE_FSSPEC, "reencode", str(src), "-o",
                        "memory://nowhere/out", "--to", "bf16", "-q", "--scheduler",
                        cluster.scheduler_address], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "needs fsspec, which is not installed: pip install pyprecision[cloud]" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_a_model_folder_into_memory_is_what_reencode_writes_there(tmp_path: Path,
                                                                  mem_client: Any,
                                                                  bucket: str) -> None:
    import shutil

    src = tmp_path / "tiny-bert"
    shutil.copytree(ROOT / "tests" / "data" / "hf" / "tiny-bert", src)
    one = reencode(src, f"{bucket}/one", "bf16")
    many = reencode_distributed(src, f"{bucket}/many", "bf16", client=mem_client)
    assert _objects(f"{bucket}/many") == _objects(f"{bucket}/one")
    assert "config.json" in _objects(f"{bucket}/many")
    assert [p.rsplit("/", 1)[-1] for p in many.copied] == [
        p.rsplit("/", 1)[-1] for p in one.copied]
