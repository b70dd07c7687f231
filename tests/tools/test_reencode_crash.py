"""Issue 13 items 3-5: kill -9 at random points of a multi-shard reencode, two concurrent writers,
a full disk. Nothing under a final name is ever partial or from two runs, inputs stay
byte-identical, and the next run leaves no stale temporaries. Each trial takes about a second."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import pyprecision.io.atomic as atomic_mod
import pyprecision.io.safetensors as st_mod
from pyprecision.errors import DumpError
from pyprecision.io import INCOMPLETE_MARKER, open_tensors, save_safetensors
from pyprecision.reencode import reencode

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from pyprecision.tools.cli import main; sys.exit(main())"
SHARDS = 4
#: Trials per test; raise it for a long run (docs/io.md: "Crash and race tests").
TRIALS = int(os.environ.get("PYPRECISION_CRASH_TRIALS", "0")) or None


def _checkpoint(tmp: Path, n: int = 1 << 20) -> Path:
    """SHARDS shards of 2 float32 tensors of n elements each, and their index."""
    d = tmp / "ckpt"
    d.mkdir()
    r = np.random.default_rng(13)
    wmap = {}
    for i in range(SHARDS):
        shard = f"model-{i + 1:05d}-of-{SHARDS:05d}.safetensors"
        ts = {f"l{i}.{k}": r.standard_normal(n).astype(np.float32) for k in "ab"}
        save_safetensors(d / shard, ts)
        wmap.update(dict.fromkeys(ts, shard))
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wmap}))
    return d


def _sha(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _spawn(src: Path, out: Path, to: str, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", CLI, "reencode", "-q", str(src), "-o", str(out), "--to", to]
    return subprocess.Popen(
        [*argv, "--threads", "1", *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _finals(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if not p.name.startswith("."))


def _temporaries(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


def _reference(tmp: Path, src: Path, to: str) -> dict[str, bytes]:
    ref = tmp / f"ref-{to}"
    reencode(src, ref, to, threads=1)
    return {p.name: p.read_bytes() for p in _finals(ref)}


def _assert_only_whole_files_of(out: Path, refs: list[dict[str, bytes]]) -> dict[str, bytes]:
    """Every final name in ``out`` holds the bytes one reference run wrote, all from the same run;
    returns that run's reference (or {} if nothing was published)."""
    finals = {p.name: p.read_bytes() for p in _finals(out)}
    if not finals:
        return {}
    owners = [r for r in refs if all(r.get(k) == v for k, v in finals.items())]
    assert owners, f"files under final names are partial or mixed: {sorted(finals)}"
    return owners[0]


def test_kill_at_random_points_of_a_multi_shard_run(tmp_path):
    src = _checkpoint(tmp_path)
    before = _sha(src)
    ref = _reference(tmp_path, src, "bf16")
    t0 = time.perf_counter()  # one whole run, to spread the kills over its length
    assert _spawn(src, tmp_path / "timed", "bf16").wait(60) == 0
    whole = time.perf_counter() - t0
    rng = random.Random(1313)
    outcomes, states = [], []
    for trial in range(TRIALS or 6):
        out = tmp_path / f"out{trial}"
        proc = _spawn(src, out, "bf16")
        time.sleep(rng.uniform(0.05, 0.95) * whole)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcomes.append(proc.returncode)
        assert _sha(src) == before, "an input changed"
        if not out.exists():
            states.append("nothing")
            continue
        got = _assert_only_whole_files_of(out, [ref])
        states.append(f"{len(_finals(out))} published, {len(_temporaries(out))} temporaries")
        complete = (
            got == ref
            and not (out / INCOMPLETE_MARKER).exists()
            and sorted(p.name for p in _finals(out)) == sorted(ref)
        )
        if not complete:  # an interrupted directory never opens as a (smaller) checkpoint
            with pytest.raises(DumpError, match="incomplete output|no .safetensors"):
                open_tensors(out)
        # the next run (with --force, since shards may already be published) cleans up
        again = _spawn(src, out, "bf16", "--force")
        assert again.wait(60) == 0, again.stderr.read() if again.stderr else ""
        assert _temporaries(out) == [] and not (out / INCOMPLETE_MARKER).exists()
        assert {p.name: p.read_bytes() for p in _finals(out)} == ref
        assert len(open_tensors(out)) == 2 * SHARDS
    print("kill trials:", list(zip(outcomes, states, strict=True)))
    assert -signal.SIGKILL in outcomes, "no trial was killed mid-run; the timing is off"


def test_two_concurrent_writers_of_one_file(tmp_path):
    src_dir = _checkpoint(tmp_path, n=1 << 19)
    src = src_dir / "model-00001-of-00004.safetensors"
    before = _sha(src_dir)
    refs = {}
    for to in ("bf16", "fp16"):
        refs[to] = tmp_path / f"ref-{to}.safetensors"
        reencode(src, refs[to], to, threads=1)
    for trial in range(TRIALS or 4):
        out = tmp_path / f"out{trial}.safetensors"
        procs = {to: _spawn(src, out, to) for to in ("bf16", "fp16")}
        codes = {to: p.wait(60) for to, p in procs.items()}
        errs = {to: p.stderr.read().decode() if p.stderr else "" for to, p in procs.items()}
        winners = [to for to, c in codes.items() if c == 0]
        assert len(winners) == 1, (codes, errs)
        loser = next(to for to in codes if to not in winners)
        assert codes[loser] == 2 and "already exists" in errs[loser], errs[loser]
        assert out.read_bytes() == refs[winners[0]].read_bytes()
        assert _temporaries(tmp_path) == []
    assert _sha(src_dir) == before


def test_two_concurrent_writers_of_one_directory(tmp_path):
    src = _checkpoint(tmp_path, n=1 << 18)
    before = _sha(src)
    refs = [_reference(tmp_path, src, to) for to in ("bf16", "fp16")]
    for trial in range(TRIALS or 3):
        out = tmp_path / f"out{trial}"
        procs = [_spawn(src, out, to) for to in ("bf16", "fp16")]
        codes = [p.wait(60) for p in procs]
        errs = [p.stderr.read().decode() if p.stderr else "" for p in procs]
        assert sorted(codes) == [0, 2], (codes, errs)
        assert any(m in errs[codes.index(2)] for m in ("another run", "already exists")), errs
        got = _assert_only_whole_files_of(out, refs)
        assert got == refs[codes.index(0)]
        assert sorted(p.name for p in _finals(out)) == sorted(got)
        assert _temporaries(out) == [] and not (out / INCOMPLETE_MARKER).exists()
    assert _sha(src) == before


def _full_disk_after(monkeypatch, calls: int) -> None:
    """os.pwrite in the safetensors writer fails with ENOSPC after ``calls`` successful writes."""
    real, left = os.pwrite, [calls]

    def pwrite(fd, data, offset):
        if left[0] == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        left[0] -= 1
        return real(fd, data, offset)

    monkeypatch.setattr(st_mod.os, "pwrite", pwrite)


@pytest.mark.parametrize("calls", [0, 3, 5])
def test_disk_full_names_the_file_and_leaves_nothing(tmp_path, monkeypatch, calls):
    src = _checkpoint(tmp_path, n=1 << 12)
    before = _sha(src)
    _full_disk_after(monkeypatch, calls)
    out = tmp_path / "out"
    with pytest.raises(
        DumpError,
        match=r"out/model-0000\d-of-00004\.safetensors: cannot write: No "
        r"space left on device",
    ):
        reencode(src, out, "bf16", chunk_elements=1 << 11)
    assert not out.exists(), sorted(os.listdir(out))
    assert _sha(src) == before


def test_disk_full_at_fsync_names_the_file(tmp_path, monkeypatch):
    src = _checkpoint(tmp_path, n=1 << 10)
    one = src / "model-00001-of-00004.safetensors"

    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic_mod.os, "fsync", fsync)
    for out in (tmp_path / "one.safetensors", tmp_path / "one.npz"):
        with pytest.raises(DumpError, match=rf"{out.name}: cannot write: No space left"):
            reencode(one, out, "bf16")
        assert not out.exists() and _temporaries(tmp_path) == []


def test_disk_full_in_an_existing_directory_keeps_what_was_there(tmp_path, monkeypatch):
    src = _checkpoint(tmp_path, n=1 << 10)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    _full_disk_after(monkeypatch, 2)
    with pytest.raises(DumpError, match="No space left"):
        reencode(src, out, "bf16")
    assert sorted(os.listdir(out)) == ["notes.txt"]


def test_stale_temporaries_of_a_killed_writer_are_removed_by_the_next_run(tmp_path):
    src = _checkpoint(tmp_path, n=1 << 10)
    one = src / "model-00001-of-00004.safetensors"
    stale = tmp_path / ".out.safetensors.pyprecision-999999-abcd.tmp"
    stale.write_bytes(b"x" * 1000)
    foreign = tmp_path / ".out.safetensors.somebody-else.tmp"
    foreign.write_bytes(b"y")
    reencode(one, tmp_path / "out.safetensors", "bf16")
    assert not stale.exists()
    assert foreign.exists(), "only temporaries of our own naming are removed"


def test_live_writers_temporary_is_kept(tmp_path):
    import fcntl

    from pyprecision.io import clean_stale_temporaries

    live = tmp_path / ".x.safetensors.pyprecision-1-live.tmp"
    fd = os.open(live, os.O_CREAT | os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert clean_stale_temporaries(tmp_path) == []
        assert live.exists()
    finally:
        os.close(fd)
    assert clean_stale_temporaries(tmp_path) == [str(live)]
