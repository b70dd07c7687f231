"""An interrupted distributed re-encode resumes: complete, matching shards are skipped, only the
rest is re-encoded, nothing partial is ever under a final name; a killed worker's task is rerun."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pyprecision.errors import DumpError
from pyprecision.io import INCOMPLETE_MARKER, open_tensors
from pyprecision.reencode import reencode, reencode_distributed
from pyprecision.reencode.resume import RECORDS_DIR
from tests.distributed.conftest import make_checkpoint, tree_bytes

SHARDS = 8


class Stop(Exception):
    """Raised from the progress callback: the driver is interrupted."""


def _idle(client: Any, timeout: float = 30.0) -> None:
    """Wait until no worker thread still runs a task (a cancelled task runs to its end)."""
    end = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < end:
        busy = client.run(lambda dask_worker: len(dask_worker.active_threads))
        quiet = 0 if any(busy.values()) else quiet + 1
        if quiet == 3:  # idle three polls in a row: no cancelled task is about to start
            return
        time.sleep(0.05)
    raise AssertionError("workers stayed busy")


def _interrupt(src: Path, out: Path, client: Any, after: int = 1, **opts: Any) -> set[str]:
    """Run a job and stop its driver after ``after`` shards finished; the shards then on disk."""
    n = [0]

    def progress(_: int) -> None:
        n[0] += 1
        if n[0] >= after:
            raise Stop

    with pytest.raises(Stop):
        reencode_distributed(src, out, "bf16", client=client, progress=progress, **opts)
    _idle(client)
    return {p.name for p in out.glob("*.safetensors")}


def _no_partial(out: Path) -> None:
    """Every file under a final name opens as complete safetensors; no temporaries are left."""
    for p in out.iterdir():
        assert not p.name.endswith(".tmp"), p
        if p.name.endswith(".safetensors"):
            open_tensors(p)  # raises on a truncated file


def _names() -> set[str]:
    return {f"model-{i:05d}-of-{SHARDS:05d}.safetensors" for i in range(1, SHARDS + 1)}


def test_a_rerun_after_an_interruption_encodes_only_the_missing_shards(tmp_path: Path,
                                                                       client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 18)
    out = tmp_path / "out"
    have = _interrupt(src, out, client)
    assert (out / INCOMPLETE_MARKER).exists()  # readers refuse the directory meanwhile
    assert not (out / "model.safetensors.index.json").exists()  # the index only at the end
    with pytest.raises(DumpError, match="incomplete"):
        open_tensors(out)
    _no_partial(out)
    again = reencode_distributed(src, out, "bf16", client=client)
    assert {Path(p).name for p in again.resumed} == have
    assert {Path(p).name for p in again.encoded} == _names() - have
    reencode(src, tmp_path / "one", "bf16")
    assert tree_bytes(out) == tree_bytes(tmp_path / "one")


def _interrupted_with(src: Path, out: Path, client: Any, **opts: Any) -> None:
    """An interrupted job's directory with shards 1-4 complete (records and all), 5-8 missing:
    the driver stops as the last shard finishes (before the index), then 5-8 are taken away."""
    assert _interrupt(src, out, client, after=SHARDS, **opts) == _names()
    for i in range(5, SHARDS + 1):
        name = f"model-{i:05d}-of-{SHARDS:05d}.safetensors"
        (out / name).unlink()
        (out / RECORDS_DIR / f"{name}.json").unlink()


def test_a_changed_input_shard_is_redone_the_unchanged_ones_skipped(tmp_path: Path,
                                                                   client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = tmp_path / "out"
    _interrupted_with(src, out, client)
    other = make_checkpoint(tmp_path / "other", shards=SHARDS, elements=1 << 16, seed=1)
    name2 = f"model-00002-of-{SHARDS:05d}.safetensors"
    os.replace(other / name2, src / name2)  # same names, new values: only the checksum differs
    again = reencode_distributed(src, out, "bf16", client=client)
    assert sorted(Path(p).name for p in again.encoded) == sorted(
        [name2] + [f"model-{i:05d}-of-{SHARDS:05d}.safetensors" for i in range(5, SHARDS + 1)])
    reencode(src, tmp_path / "one", "bf16")
    assert tree_bytes(out) == tree_bytes(tmp_path / "one")


def test_a_shard_whose_record_was_lost_is_redone(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = tmp_path / "out"
    _interrupted_with(src, out, client)
    name3 = f"model-00003-of-{SHARDS:05d}.safetensors"
    (out / RECORDS_DIR / f"{name3}.json").unlink()  # killed between publishing and recording
    again = reencode_distributed(src, out, "bf16", client=client)
    assert name3 in {Path(p).name for p in again.encoded}
    assert len(again.resumed) == 3


def test_other_options_do_not_resume_someone_elses_shards(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = tmp_path / "out"
    _interrupted_with(src, out, client)
    before = tree_bytes(out)
    with pytest.raises(DumpError, match="already exists"):
        reencode_distributed(src, out, "fp16", client=client)
    assert tree_bytes(out) == before  # nothing written
    forced = reencode_distributed(src, out, "fp16", client=client, overwrite=True)
    assert len(forced.encoded) == SHARDS


def test_a_stochastic_job_without_a_seed_resumes_with_its_recorded_seed(tmp_path: Path,
                                                                        client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = tmp_path / "out"
    _interrupted_with(src, out, client, rounding="stochastic")
    rec = json.loads((out / RECORDS_DIR / f"model-00001-of-{SHARDS:05d}.safetensors.json")
                     .read_text())
    again = reencode_distributed(src, out, "bf16", client=client, rounding="stochastic")
    assert again.options["seed"] == rec["options"]["seed"] and len(again.resumed) == 4
    reencode(src, tmp_path / "one", "bf16", rounding="stochastic", seed=rec["options"]["seed"])
    assert tree_bytes(out) == tree_bytes(tmp_path / "one")


def test_stale_temporaries_of_a_killed_writer_are_cleaned(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = tmp_path / "out"
    _interrupted_with(src, out, client)
    stale = out / f".model-00006-of-{SHARDS:05d}.safetensors.pyprecision-99999-abcd.tmp"
    stale.write_bytes(b"half a shard")
    reencode_distributed(src, out, "bf16", client=client)
    assert not stale.exists()
    _no_partial(out)


@pytest.mark.slow
def test_killing_a_worker_mid_job_still_completes_with_the_same_bytes(tmp_path: Path,
                                                                      client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=6, elements=1 << 22)  # 16 MB shards
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
    got = reencode_distributed(src, tmp_path / "out", "bf16", client=client)
    t.join()
    assert killed, "no worker was busy to be killed"
    assert len(got.encoded) == 6
    _no_partial(tmp_path / "out")
    reencode(src, tmp_path / "one", "bf16")
    assert tree_bytes(tmp_path / "out") == tree_bytes(tmp_path / "one")


def test_quick_checksum_resumes_and_sees_a_replaced_input(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = tmp_path / "out"
    _interrupted_with(src, out, client, checksum="quick")
    rec = json.loads((out / RECORDS_DIR / f"model-00001-of-{SHARDS:05d}.safetensors.json")
                     .read_text())
    assert rec["source_checksum"].startswith("quick:")
    name1 = f"model-00001-of-{SHARDS:05d}.safetensors"
    other = make_checkpoint(tmp_path / "other", shards=SHARDS, elements=1 << 16, seed=1)
    os.replace(other / name1, src / name1)
    again = reencode_distributed(src, out, "bf16", client=client, checksum="quick")
    assert name1 in {Path(p).name for p in again.encoded} and len(again.resumed) == 3
    reencode(src, tmp_path / "one", "bf16")
    assert tree_bytes(out) == tree_bytes(tmp_path / "one")


def test_file_sha256_is_the_sha256_of_the_bytes(tmp_path: Path) -> None:
    import hashlib

    from pyprecision.reencode.resume import file_sha256

    for n in (0, 1, (8 << 20) + 3):
        p = tmp_path / f"f{n}"
        data = os.urandom(n)
        p.write_bytes(data)
        assert file_sha256(str(p)) == hashlib.sha256(data).hexdigest()


def test_verify_checks_the_kept_shards_too(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=SHARDS, elements=1 << 16)
    out = tmp_path / "out"
    _interrupted_with(src, out, client)
    again = reencode_distributed(src, out, "bf16", client=client, verify=True)
    assert again.verified and again.verify_failures == [] and len(again.resumed) == 4
    # a kept shard whose bytes were altered after its record (same size, same header) is caught
    _interrupted_with(src, tmp_path / "out2", client)
    name = f"model-00001-of-{SHARDS:05d}.safetensors"
    p = tmp_path / "out2" / name
    data = bytearray(p.read_bytes())
    data[-1] ^= 0x01
    p.write_bytes(bytes(data))
    bad = reencode_distributed(src, tmp_path / "out2", "bf16", client=client, verify=True)
    assert len(bad.verify_failures) == 1 and name in bad.verify_failures[0]


def test_a_second_live_job_into_the_same_directory_is_refused(tmp_path: Path, client: Any) -> None:
    from pyprecision.reencode.resume import JobDirectory

    src = make_checkpoint(tmp_path / "in", shards=2)
    out = tmp_path / "out"
    with JobDirectory(out):  # another job holds the directory
        with pytest.raises(DumpError, match="another run is writing this directory"):
            reencode_distributed(src, out, "bf16", client=client)
        assert not list(out.glob("*.safetensors"))
