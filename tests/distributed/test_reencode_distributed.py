"""reencode_distributed on a real LocalCluster (2 processes): the same bytes as reencode(), the
index last, one task per shard, progress over the whole job."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyprecision.errors import DumpError
from pyprecision.io import INCOMPLETE_MARKER, open_tensors
from pyprecision.reencode import reencode, reencode_distributed
from pyprecision.reencode.resume import RECORDS_DIR
from tests.distributed.conftest import make_checkpoint, tree_bytes

OPTIONS = [
    {"to": "bf16"},
    {"to": "fp8e4", "rounding": "stochastic", "seed": 7, "scale": "amax"},
    {"to": "fp8e5", "saturate": True, "exclude": ("*.bias",)},
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: o["to"])
def test_distributed_output_is_byte_identical_to_one_machine(tmp_path: Path, client: Any,
                                                             opts: dict[str, Any]) -> None:
    src = make_checkpoint(tmp_path / "in", shards=5)
    opts = dict(opts)
    to = opts.pop("to")
    one = reencode(src, tmp_path / "one", to, **opts)
    many = reencode_distributed(src, tmp_path / "many", to, client=client, **opts)
    assert tree_bytes(tmp_path / "many") == tree_bytes(tmp_path / "one")
    assert sorted(tree_bytes(tmp_path / "one")) == sorted(
        [f"model-{i:05d}-of-00005.safetensors" for i in range(1, 6)]
        + ["model.safetensors.index.json"])  # no marker, no records left behind
    assert len(many.encoded) == 5 and many.resumed == []
    assert many.bytes_out == one.bytes_out and many.total("nan") == one.total("nan")
    assert [t.name for t in many.tensors] == [t.name for t in one.tensors]


def test_tasks_run_on_both_workers_and_progress_counts_every_input_byte(tmp_path: Path,
                                                                       client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=6, elements=1 << 18)
    seen: list[int] = []
    got = reencode_distributed(src, tmp_path / "out", "bf16", client=client, progress=seen.append)
    store = open_tensors(src)
    assert len(seen) == 6 and sum(seen) == sum(t.nbytes for t in store.values())
    assert got.workers == 2
    assert set(got.placement.values()) <= set(client.scheduler_info()["workers"])
    assert sorted(got.placement) == sorted(got.encoded)


def test_single_file_input_is_one_task_with_the_same_bytes(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=1) / "model-00001-of-00001.safetensors"
    reencode(src, tmp_path / "one.safetensors", "fp16")
    got = reencode_distributed(src, tmp_path / "many.safetensors", "fp16", client=client)
    assert (tmp_path / "many.safetensors").read_bytes() == (tmp_path / "one.safetensors").read_bytes()
    assert got.encoded == [str(tmp_path / "many.safetensors")]


def test_verify_runs_on_the_workers(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=3)
    got = reencode_distributed(src, tmp_path / "out", "fp8e4", client=client, verify=True)
    assert got.verified and got.verify_failures == []


def test_a_directory_of_shards_without_an_index(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=3)
    (src / "model.safetensors.index.json").unlink()
    reencode(src, tmp_path / "one", "bf16")
    reencode_distributed(src, tmp_path / "many", "bf16", client=client)
    assert tree_bytes(tmp_path / "many") == tree_bytes(tmp_path / "one")


def test_an_existing_output_not_made_by_this_job_is_refused_and_nothing_written(
        tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=3)
    out = tmp_path / "out"
    out.mkdir()
    (out / "model-00002-of-00003.safetensors").write_bytes(b"somebody else's")
    with pytest.raises(DumpError, match="already exists"):
        reencode_distributed(src, out, "bf16", client=client)
    assert sorted(p.name for p in out.iterdir()) == ["model-00002-of-00003.safetensors"]
    assert (out / "model-00002-of-00003.safetensors").read_bytes() == b"somebody else's"


def test_force_redoes_every_shard(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=3)
    reencode_distributed(src, tmp_path / "out", "bf16", client=client)
    again = reencode_distributed(src, tmp_path / "out", "bf16", client=client, overwrite=True)
    assert len(again.encoded) == 3 and again.resumed == []
    reencode(src, tmp_path / "one", "bf16")
    assert tree_bytes(tmp_path / "out") == tree_bytes(tmp_path / "one")


def test_a_finished_job_leaves_no_marker_and_no_records(tmp_path: Path, client: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=2)
    reencode_distributed(src, tmp_path / "out", "bf16", client=client)
    assert not (tmp_path / "out" / INCOMPLETE_MARKER).exists()
    assert not (tmp_path / "out" / RECORDS_DIR).exists()
    # the output opens as a checkpoint and decodes to the one-machine values
    a = open_tensors(tmp_path / "out")
    assert np.array_equal(np.asarray(a.load("layer1.steps")), np.arange(8))


def test_a_model_folder_is_copied_as_by_the_one_machine_path(tmp_path: Path, client: Any) -> None:
    import shutil

    from tests.distributed.conftest import ROOT

    src = tmp_path / "tiny-bert"
    shutil.copytree(ROOT / "tests" / "data" / "hf" / "tiny-bert", src)
    one = reencode(src, tmp_path / "one", "bf16")
    many = reencode_distributed(src, tmp_path / "many", "bf16", client=client)
    assert tree_bytes(tmp_path / "many") == tree_bytes(tmp_path / "one")
    assert "config.json" in tree_bytes(tmp_path / "many")
    assert many.notes == one.notes and many.skipped == one.skipped
    assert sorted(Path(p).name for p in many.copied) == sorted(Path(p).name for p in one.copied)


def _flaky(flag: str) -> None:
    """On a worker: the next shard write fails once (the first worker to claim ``flag`` fails)."""
    import pyprecision.reencode.distributed as dist

    real = getattr(dist, "_real_write_file", dist._write_file)
    dist._real_write_file = real  # type: ignore[attr-defined]

    def write(*args: Any, **kw: Any) -> Any:
        try:
            os.mkdir(flag)  # atomic: exactly one attempt in the cluster fails
        except FileExistsError:
            return real(*args, **kw)
        raise OSError(5, "injected transient failure")

    dist._write_file = write  # type: ignore[assignment]


def _restore() -> None:
    import pyprecision.reencode.distributed as dist

    dist._write_file = getattr(dist, "_real_write_file", dist._write_file)  # type: ignore[assignment]


@pytest.mark.parametrize("retries", [0, 2])
def test_a_failed_task_is_retried(tmp_path: Path, client: Any, retries: int) -> None:
    src = make_checkpoint(tmp_path / "in", shards=3)
    client.run(_flaky, str(tmp_path / "failed-once"))
    try:
        if retries == 0:
            with pytest.raises(OSError, match="injected transient failure"):
                reencode_distributed(src, tmp_path / "out", "bf16", client=client, retries=0)
            assert not (tmp_path / "out" / "model.safetensors.index.json").exists()
        else:
            got = reencode_distributed(src, tmp_path / "out", "bf16", client=client, retries=2)
            assert len(got.encoded) == 3
            reencode(src, tmp_path / "one", "bf16")
            assert tree_bytes(tmp_path / "out") == tree_bytes(tmp_path / "one")
    finally:
        client.run(_restore)
    assert (tmp_path / "failed-once").is_dir()  # the failure did happen


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shards=st.integers(1, 5),
       to=st.sampled_from(["bf16", "fp16", "fp8e4", "fp8e5", "fp8e4m3fn", "fp32r"]),
       rounding=st.sampled_from(["rne", "rtz", "stochastic"]),
       seed=st.integers(0, 2**63 - 1), saturate=st.booleans())
def test_property_any_shards_format_and_rounding_give_the_one_machine_bytes(
        client: Any, shards: int, to: str, rounding: str, seed: int, saturate: bool) -> None:
    import tempfile

    opts: dict[str, Any] = {"rounding": rounding, "saturate": saturate}
    if rounding == "stochastic":
        opts["seed"] = seed
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        src = make_checkpoint(d / "in", shards=shards, elements=2048, seed=seed % 1000)
        reencode(src, d / "one", to, **opts)
        reencode_distributed(src, d / "many", to, client=client, **opts)
        assert tree_bytes(d / "many") == tree_bytes(d / "one")
