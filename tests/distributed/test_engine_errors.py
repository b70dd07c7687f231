"""The Dask engine from the command line, and its bad input: an unreachable scheduler, dask not
installed — each one line on stderr, exit 2, nothing written; dask is imported only when asked."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pyprecision.errors import EngineError
from pyprecision.reencode import connect, reencode
from pyprecision.tools.cli import main
from tests.distributed.conftest import ROOT, make_checkpoint, tree_bytes


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_scheduler_is_one_error_after_the_timeout() -> None:
    addr = f"tcp://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="cannot reach the Dask scheduler at tcp://127.0.0.1"), \
            connect(addr, timeout=1):
        pass
    assert time.monotonic() - t0 < 10


def test_cli_unreachable_scheduler_one_line_nothing_written(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    src = make_checkpoint(tmp_path / "in", shards=2)
    code = main(["reencode", str(src), "-o", str(tmp_path / "out"), "--to", "bf16", "-q",
                 "--scheduler", f"tcp://127.0.0.1:{_free_port()}", "--scheduler-timeout", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "cannot reach the Dask scheduler" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


HIDE_DASK = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('dask', 'distributed'):
            raise ImportError('hidden: ' + name)
sys.meta_path.insert(0, Hide())
from pyprecision.tools.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_dask_the_flag_names_the_extra(tmp_path: Path) -> None:
    src = make_checkpoint(tmp_path / "in", shards=2)
    r = subprocess.run([sys.executable, "-c", HIDE_DASK, "reencode", str(src), "-o",
                        str(tmp_path / "out"), "--to", "bf16", "-q", "--dask", "2"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip() == ("pyprecision reencode: error: the Dask engine is not installed: "
                                "pip install pyprecision[dask]")
    assert not (tmp_path / "out").exists()


def test_without_dask_the_one_machine_path_still_works(tmp_path: Path) -> None:
    src = make_checkpoint(tmp_path / "in", shards=2)
    r = subprocess.run([sys.executable, "-c", HIDE_DASK, "reencode", str(src), "-o",
                        str(tmp_path / "out"), "--to", "bf16", "-q"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_the_reencode_command_imports_no_dask_unless_asked(tmp_path: Path) -> None:
    src = make_checkpoint(tmp_path / "in", shards=1)
    code = (f"from pyprecision.tools.cli import main\n"
            f"assert main(['reencode', {str(src)!r}, '-o', {str(tmp_path / 'o')!r}, "
            f"'--to', 'bf16', '-q']) == 0\n"
            "import sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('dask', 'distributed')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       check=True, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_cli_dask_local_cluster_same_bytes_and_a_shard_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            cluster: Any) -> None:
    src = make_checkpoint(tmp_path / "in", shards=3)
    reencode(src, tmp_path / "one", "fp8e4")
    code = main(["reencode", str(src), "-o", str(tmp_path / "out"), "--to", "fp8e4", "-q",
                 "--scheduler", cluster.scheduler_address])
    out = capsys.readouterr().out
    assert code == 0
    assert "shards: 3 encoded, 0 resumed (complete and matching) on 2 Dask workers" in out
    assert tree_bytes(tmp_path / "out") == tree_bytes(tmp_path / "one")


@pytest.mark.slow
def test_cli_dask_n_starts_and_closes_a_local_cluster(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    src = make_checkpoint(tmp_path / "in", shards=2)
    code = main(["reencode", str(src), "-o", str(tmp_path / "out"), "--to", "bf16", "-q",
                 "--dask", "1"])
    assert code == 0
    assert "on 1 Dask workers" in capsys.readouterr().out


def test_cli_scheduler_prints_the_shard_line(tmp_path: Path, cluster: Any,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """--scheduler (like a bare --dask, whose N is 0) ends with the shards line."""
    src = make_checkpoint(tmp_path / "in", shards=2)
    code = main(["reencode", str(src), "-o", str(tmp_path / "out"), "--to", "bf16", "-q",
                 "--scheduler", cluster.scheduler_address])
    assert code == 0
    assert "shards: 2 encoded, 0 resumed" in capsys.readouterr().out


def test_scheduler_and_dask_together_are_refused(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    src = make_checkpoint(tmp_path / "in", shards=1)
    code = main(["reencode", str(src), "-o", str(tmp_path / "out"), "--to", "bf16", "-q",
                 "--dask", "1", "--scheduler", "tcp://127.0.0.1:1"])
    assert code == 2 and "not both" in capsys.readouterr().err


def test_a_scheduler_without_workers_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    import distributed

    import pyprecision.reencode.distributed as dist

    monkeypatch.setattr(dist, "CONNECT_TIMEOUT", 0.5)
    monkeypatch.setattr(dist._workers, "__defaults__", (0.5,))
    src = make_checkpoint(tmp_path / "in", shards=2)
    with distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None) as c, \
            distributed.Client(c) as client, pytest.raises(EngineError, match="has no workers"):
        dist.reencode_distributed(src, tmp_path / "out", "bf16", client=client)
    assert not (tmp_path / "out").exists()
