"""The thread cap (pyprecision.kernel.threads, docs/decisions/kernel.md K10): threads= >
thread_limit (run_hlo's threads=, the CLI's --threads) > PYPRECISION_THREADS > the cores this
process may run on; a bad value is one CastError line (CLI: exit 2)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from pyprecision._core import lib

import pyprecision as pp
from pyprecision.errors import CastError
from pyprecision.kernel import _args, default_threads, thread_limit
from pyprecision.tools import cli

HLO = """HloModule dot
ENTRY main {
  a = f32[40,33]{1,0} parameter(0)
  b = f32[33,70]{1,0} parameter(1)
  ROOT d = f32[40,70]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("PYPRECISION_THREADS", raising=False)
    return monkeypatch


def test_default_is_the_affinity_mask_in_python_and_in_c(no_env: pytest.MonkeyPatch) -> None:
    cores = len(os.sched_getaffinity(0))
    assert default_threads() == cores
    assert lib.pp_cpu_count() == min(cores, 64)


def test_env_then_limit_then_argument(no_env: pytest.MonkeyPatch) -> None:
    no_env.setenv("PYPRECISION_THREADS", " 3 ")
    assert default_threads() == 3 and _args.threads_arg(None) == 3
    with thread_limit(2):
        assert default_threads() == 2
        with thread_limit(1):
            assert _args.threads_arg(None) == 1
        assert _args.threads_arg(None) == 2
        assert _args.threads_arg(5) == 5  # the call's own argument wins
    assert default_threads() == 3


@pytest.mark.parametrize("value,match", [
    ("abc", "PYPRECISION_THREADS='abc': not an integer"),
    ("0", "PYPRECISION_THREADS='0': a thread count must be from 1"),
    ("-2", "PYPRECISION_THREADS='-2': a thread count must be from 1"),
    ("99999", "must be from 1 to 4096"),
])
def test_bad_env_is_one_line_in_every_parallel_part(no_env: pytest.MonkeyPatch, value: str,
                                                    match: str) -> None:
    """The cast core and the dot both read the cap, so both refuse a bad one."""
    no_env.setenv("PYPRECISION_THREADS", value)
    x = np.ones((4, 4), np.float32)
    for call in (lambda: pp.cast(x, "bf16"), lambda: pp.kernel.pe_dot(x, x),
                 lambda: pp.decode(np.zeros(3, np.uint16), "bf16")):
        with pytest.raises(CastError, match=match) as info:
            call()
        assert "\n" not in str(info.value)
    with thread_limit(2):  # an explicit limit does not read the variable
        assert pp.kernel.pe_dot(x, x).shape == (4, 4)


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "2"])
def test_bad_limit(bad: object) -> None:
    with pytest.raises(CastError, match="threads"), thread_limit(bad):  # type: ignore[arg-type]
        pass


def test_run_hlo_threads_gives_the_same_bits(no_env: pytest.MonkeyPatch) -> None:
    m = pp.hlo.parse(HLO)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 33)).astype(np.float32)
    b = rng.standard_normal((33, 70)).astype(np.float32)
    (one,) = pp.emulate.run_hlo(m, [a, b], threads=1)
    (two,) = pp.emulate.run_hlo(m, [a, b], threads=2)
    assert one.tobytes() == two.tobytes()
    with pytest.raises(CastError, match="threads must be from 1"):
        pp.emulate.run_hlo(m, [a, b], threads=0)


@pytest.fixture
def hlo_files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "m.hlo.txt").write_text(HLO)
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "in.npz", arg0=rng.standard_normal((40, 33)).astype(np.float32),
             arg1=rng.standard_normal((33, 70)).astype(np.float32))
    return tmp_path / "m.hlo.txt", tmp_path / "in.npz"


def test_cli_threads(no_env: pytest.MonkeyPatch, hlo_files: tuple[Path, Path], tmp_path: Path,
                     capsys: pytest.CaptureFixture[str]) -> None:
    module, inputs = hlo_files
    outs = []
    for n in ("1", "2"):
        out = tmp_path / f"o{n}.npz"
        assert cli.main(["hlo-run", str(module), "--inputs", str(inputs), "-o", str(out),
                         "--threads", n]) == 0
        outs.append(np.load(out)["out0"].tobytes())
    assert outs[0] == outs[1]
    no_env.setenv("PYPRECISION_THREADS", "abc")
    for argv in (["hlo-run", str(module), "--inputs", str(inputs), "-o", str(tmp_path / "x.npz")],
                 ["explain", str(module)]):
        capsys.readouterr()
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "PYPRECISION_THREADS='abc'" in err, err
    assert not (tmp_path / "x.npz").exists()
    # --threads wins over the variable, is exported to worker processes for the command, and
    # the caller's environment is restored after it
    seen = []
    import pyprecision.tools.hlo_cmd as hlo_cmd

    run_run = hlo_cmd.run_run

    def spy(args: object) -> int:
        seen.append((os.environ.get("PYPRECISION_THREADS"), default_threads()))
        return run_run(args)  # type: ignore[arg-type]

    no_env.setattr(hlo_cmd, "run_run", spy)
    assert cli.main(["hlo-run", str(module), "--inputs", str(inputs), "-o",
                     str(tmp_path / "y.npz"), "--threads", "1"]) == 0
    assert seen == [("1", 1)]
    assert os.environ["PYPRECISION_THREADS"] == "abc"


@pytest.mark.parametrize("command", ["hlo-run", "verify", "explain"])
def test_cli_threads_zero_is_a_usage_error(command: str, hlo_files: tuple[Path, Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main([command, "--threads", "0", str(hlo_files[0])])
    assert info.value.code == 2
    assert "0 threads: expected 1 to 4096" in capsys.readouterr().err
