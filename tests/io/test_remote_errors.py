"""Bad input with URLs (issue 15): fsspec missing, a backend missing, an unknown protocol, a store
without write access — each one clear line (a DumpError; at the command line one line on stderr and
exit code 2), nothing written."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
from test_remote_fs import fresh_bucket, objects, write_checkpoints

from pyprecision.errors import DumpError
from pyprecision.io import CLOUD_EXTRA, atomic_file, load_dump, open_tensors, read_text
from pyprecision.reencode import reencode
from pyprecision.tools.cli import main

MEM = fsspec.filesystem("memory")


@pytest.fixture
def bucket() -> Iterator[str]:
    """A fresh memory:// prefix, removed afterwards."""
    yield from fresh_bucket()


def _run_without_fsspec(body: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\nsys.modules['fsspec'] = None\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_without_fsspec_a_url_is_one_error_naming_the_extra(tmp_path: Path) -> None:
    r = _run_without_fsspec(
        """
        from pyprecision.errors import DumpError
        from pyprecision.io import open_tensors, read_raw, read_text, save_safetensors
        import numpy as np
        for call in (lambda: open_tensors("s3://bucket/model.safetensors"),
                     lambda: read_raw("memory://x.bin", "float32"),
                     lambda: read_text("gs://b/p.pir"),
                     lambda: save_safetensors("memory://o.safetensors", {"a": np.zeros(1)})):
            try:
                call()
            except DumpError as exc:
                print(exc)
        """
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4
    for line, url in zip(
        lines,
        [
            "s3://bucket/model.safetensors",
            "memory://x.bin",
            "gs://b/p.pir",
            "memory://o.safetensors",
        ],
        strict=True,
    ):
        assert (
            line == f"{url}: reading and writing URLs needs fsspec, which is not installed: "
            f"{CLOUD_EXTRA}"
        )
    assert CLOUD_EXTRA == "pip install pyprecision[cloud]"


def test_without_fsspec_the_command_line_says_one_line(tmp_path: Path) -> None:
    r = _run_without_fsspec(
        """
        from pyprecision.tools.cli import main
        raise SystemExit(main(["reencode", "s3://b/m.safetensors", "-o", "out.safetensors",
                               "--to", "bf16", "-q"]))
        """
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "pyprecision reencode: error: s3://b/m.safetensors: reading and writing URLs needs "
        "fsspec, which is not installed: pip install pyprecision[cloud]"
    ]
    assert r.stdout == ""


@pytest.mark.parametrize(
    ("url", "package"),
    [
        ("s3://b/m.safetensors", "s3fs"),
        ("gs://b/m.safetensors", "gcsfs"),
        ("hf://org/model/m.safetensors", "huggingface_hub"),
    ],
)
def test_a_url_whose_backend_is_missing_names_the_package(url: str, package: str) -> None:
    pytest.importorskip("fsspec")
    try:
        __import__(package)
    except ImportError:
        pass
    else:
        pytest.skip(f"{package} is installed here")
    with pytest.raises(DumpError) as info:
        open_tensors(url)
    msg = str(info.value)
    assert msg.startswith(
        f"{url}: the {url.split(':')[0]}:// file system is not installed: pip install {package}"
    )
    assert "\n" not in msg


def test_a_builtin_protocol_missing_its_dependencies_names_them() -> None:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("aiohttp is installed here")
    with pytest.raises(DumpError) as info:
        open_tensors("https://example.com/m.safetensors")
    msg = str(info.value)
    assert msg.startswith(
        "https://example.com/m.safetensors: the https:// file system needs packages that are "
        "not installed: "
    )
    assert "aiohttp" in msg and "pip install fsspec" not in msg and "\n" not in msg


def test_an_unknown_protocol_is_one_line() -> None:
    for call in (
        lambda: open_tensors("nope://b/m.safetensors"),
        lambda: load_dump("nope://b/x.bin", dtype="float32"),
        lambda: read_text("nope://p.pir"),
    ):
        with pytest.raises(DumpError, match=r"^nope://\S+: unknown URL protocol 'nope'"):
            call()
    with (
        pytest.raises(DumpError, match=r"^nope://o\.bin: unknown URL protocol"),
        atomic_file("nope://o.bin"),
    ):
        pass


def test_cli_errors_are_one_line_and_write_nothing(
    tmp_path: Path, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    local = write_checkpoints(tmp_path)
    cases = [
        (
            ["reencode", "nope://b/m.safetensors", "-o", f"{bucket}/o.safetensors"],
            "unknown URL protocol",
        ),
        (
            ["reencode", str(local["safetensors"]), "-o", "romem://ro/o.safetensors"],
            "permission denied",
        ),
        (["reencode", str(local["sharded"]), "-o", "romem://ro/out"], "permission denied"),
        (
            ["reencode", f"{bucket}/missing.safetensors", "-o", f"{bucket}/o.safetensors"],
            "no such file",
        ),
    ]
    for argv, what in cases:
        assert main([*argv, "--to", "bf16", "-q"]) == 2
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert (
            len(lines) == 1
            and what in lines[0]
            and lines[0].startswith("pyprecision reencode: error: ")
        )
        assert out == ""
    assert objects(MEM, bucket) == [] and objects(fsspec.filesystem("romem"), "/ro") == []


def test_a_store_without_write_access_fails_before_encoding(tmp_path: Path) -> None:
    local = write_checkpoints(tmp_path)
    seen: list[int] = []
    with pytest.raises(DumpError, match="cannot write: permission denied"):
        reencode(local["safetensors"], "romem://ro/o.safetensors", "bf16", progress=seen.append)
    assert seen == []  # not one chunk was encoded
