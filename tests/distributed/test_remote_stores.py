"""reencode_distributed against store doubles: the tasks read shards by ranged reads only (and
what the input checksum costs in bytes read), a bucket without write access is one error before
any task runs, and temporary objects a killed writer left are deleted by the next job."""
from __future__ import annotations

import errno
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from pyprecision.errors import DumpError
from pyprecision.io import INCOMPLETE_MARKER, open_tensors
from pyprecision.reencode import reencode, reencode_distributed
from pyprecision.tools.cli import main
from tests.distributed.conftest import distributed, make_checkpoint

MEM = fsspec.filesystem("memory")


class _Own(MemoryFileSystem):
    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        return MemoryFileSystem._strip_protocol(str(path).removeprefix(f"{cls.protocol}://"))


class Counting(_Own):
    """Records every ``cat_file`` (path, start, bytes); refuses to open a file for reading."""

    protocol = "h15count"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]
    reads: ClassVar[list[tuple[str, int | None, int]]] = []

    def cat_file(self, path: str, start: int | None = None, end: int | None = None,
                 **kw: Any) -> bytes:
        data = super().cat_file(path, start, end, **kw)
        Counting.reads.append((self._strip_protocol(path), start, len(data)))
        return data

    def _open(self, path: str, mode: str = "rb", *args: Any, **kw: Any) -> Any:
        if "r" in mode:
            raise AssertionError(f"opened {path} for reading: reads must be ranged")
        return super()._open(path, mode, *args, **kw)


class ReadOnly(_Own):
    """A bucket without write access: every write is PermissionError (as s3fs's AccessDenied)."""

    protocol = "h15ro"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]

    def pipe_file(self, path: str, value: Any, *args: Any, **kw: Any) -> None:
        raise PermissionError(errno.EACCES, "Access Denied (test double)", path)

    def _open(self, path: str, mode: str = "rb", *args: Any, **kw: Any) -> Any:
        if "r" not in mode:
            raise PermissionError(errno.EACCES, "Access Denied (test double)", path)
        return super()._open(path, mode, *args, **kw)


for _cls in (Counting, ReadOnly):
    fsspec.register_implementation(_cls.protocol, _cls, clobber=True)


@pytest.fixture(scope="module")
def mem_client() -> Iterator[Any]:
    """A threads LocalCluster: its workers share this process's in-memory stores."""
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as c, distributed.Client(c) as cl:
        yield cl


@pytest.fixture
def tag() -> Iterator[str]:
    """A fresh prefix name; its objects on every store are removed afterwards."""
    name = f"h15r-{uuid.uuid4().hex[:10]}"
    yield name
    for fs in (MEM, fsspec.filesystem("h15count"), fsspec.filesystem("h15ro")):
        if fs.exists(f"/{name}"):
            fs.rm(f"/{name}", recursive=True)


def _put(fs: Any, local: Path, prefix: str) -> dict[str, int]:
    sizes = {}
    for p in sorted(local.iterdir()):
        MemoryFileSystem.pipe_file(fs, f"{prefix}/{p.name}", p.read_bytes())
        sizes[f"{prefix}/{p.name}"] = p.stat().st_size
    return sizes


@pytest.mark.parametrize(("checksum", "passes"), [("sha256", 2), ("quick", 1)])
def test_tasks_read_shards_by_ranges_and_what_the_checksum_costs(
        tmp_path: Path, mem_client: Any, tag: str, checksum: str, passes: int) -> None:
    fs = fsspec.filesystem("h15count")
    sizes = _put(fs, make_checkpoint(tmp_path / "in", shards=4, elements=1 << 16), f"/{tag}/in")
    Counting.reads.clear()
    reencode_distributed(f"h15count://{tag}/in", f"memory://{tag}/out", "bf16",
                         client=mem_client, checksum=checksum)
    for path, size in sizes.items():
        if not path.endswith(".safetensors"):
            continue
        mine = [(s, n) for p, s, n in Counting.reads if p == path]
        assert all(s is not None for s, _ in mine)  # every read of a shard is ranged
        got = sum(n for _, n in mine)
        # the encode reads the shard once (headers a few times); sha256 reads it once more
        assert passes * size <= got < passes * size + 4096 * 8, (path, got, size)
    reencode(tmp_path / "in", tmp_path / "one", "bf16")
    root = f"/{tag}/out"
    assert {p.rsplit("/", 1)[-1]: MEM.cat_file(p) for p in MEM.find(root)} == {
        p.name: p.read_bytes() for p in (tmp_path / "one").iterdir()}


def test_a_bucket_without_write_access_is_one_error_before_any_task(
        tmp_path: Path, mem_client: Any, tag: str, capsys: pytest.CaptureFixture[str]) -> None:
    src = make_checkpoint(tmp_path / "in", shards=3)
    ran: list[str] = []
    with pytest.raises(DumpError, match=rf"h15ro://{tag}/out: cannot write: permission denied"):
        reencode_distributed(src, f"h15ro://{tag}/out", "bf16", client=mem_client,
                             progress=lambda n: ran.append("task"))
    assert ran == [] and not fsspec.filesystem("h15ro").find(f"/{tag}")
    code = main(["reencode", str(src), "-o", f"h15ro://{tag}/out", "--to", "bf16", "-q",
                 "--scheduler", mem_client.scheduler.address])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "permission denied" in err
    assert "Traceback" not in err


def test_a_killed_writers_temporary_objects_are_deleted_by_the_next_job(
        tmp_path: Path, mem_client: Any, tag: str) -> None:
    make_checkpoint(tmp_path / "in", shards=3)
    src = f"memory://{tag}/in"
    _put(MEM, tmp_path / "in", f"/{tag}/in")
    out = f"/{tag}/out"
    MEM.pipe_file(f"{out}/{INCOMPLETE_MARKER}", b"pid 1\n")  # a killed job's prefix
    stale = f"{out}/.model-00002-of-00003.safetensors.pyprecision-99999-abcd.tmp"
    MEM.pipe_file(stale, b"half a shard")
    deeper = f"{out}/other-job/.x.safetensors.pyprecision-99999-abcd.tmp"  # not this job's
    MEM.pipe_file(deeper, b"someone else's")
    got = reencode_distributed(src, f"memory://{tag}/out", "bf16", client=mem_client)
    assert len(got.encoded) == 3 and not MEM.exists(stale) and MEM.exists(deeper)
    MEM.rm_file(deeper)
    assert sorted(p.rsplit("/", 1)[-1] for p in MEM.find(out)) == [
        "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors", "model.safetensors.index.json"]
    open_tensors(f"memory://{tag}/out")  # a complete checkpoint: no marker left
