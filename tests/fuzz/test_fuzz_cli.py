"""Fuzz the command line: every subcommand that reads a file, on mutated files of each kind and
random option values. A command returns 0, 1 or 2 (argparse's own errors exit 2) and never lets
an exception out; an error is one line on stderr; no run may take longer than DEADLINE_MS."""

from __future__ import annotations

import contextlib
import io as _io
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fuzzlib import EXAMPLES, FUZZ, mutations, within_budget
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz_readers import NPY, SAFETENSORS

ROOT = Path(__file__).resolve().parents[2]
PIR = (ROOT / "examples" / "mlp.pir").read_bytes()
HLO = b"HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}\n"
_COUNTER = itertools.count()



def _inputs_seed() -> bytes:
    """Inputs (and a dump) for both seed programs: xT/y for mlp.pir, arg0/out0 for the HLO."""
    buf = _io.BytesIO()
    r = np.random.default_rng(0)
    np.savez(buf, xT=r.standard_normal((4, 2)).astype(np.float32),
             y=np.zeros((2, 3), np.float32), arg0=np.array([1.0, -2.0], np.float32),
             out0=np.array([-1.0, 2.0], np.float32))
    return buf.getvalue()


SEEDS = {".pir": PIR, ".hlo": HLO, ".npy": NPY, ".npz": _inputs_seed(),
         ".safetensors": SAFETENSORS, ".bin": bytes(range(16))}
#: The file kind each command expects (drawn most of the time; any kind otherwise).
NATURAL = {"opt": ".pir", "explain": ".pir", "hlo-opt": ".hlo", "cast": ".npy", "decode": ".bin",
           "verify": ".npy", "verify-program": ".npz", "reencode": ".safetensors",
           "hlo-run": ".npz"}
FORMATS = st.sampled_from(["bf16", "fp16", "fp8e4", "fp8e4m3fn", "fp8e5", "fp32r"]) | \
    st.sampled_from(["nope", "", "FP8"])
VALUES = st.none() | st.sampled_from(["0", "-1", "3", "2147483648", "x", "4,4", "", "1e9", "gen9",
                                      "gen3", "3,4", "12"])


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    """One directory for the module (fresh file names for every input)."""
    with tempfile.TemporaryDirectory(prefix="pp-fuzz-cli-") as d:
        yield Path(d)


def _file(workdir: Path, ext: str, data: bytes) -> str:
    p = workdir / f"f{next(_COUNTER)}{ext}"
    p.write_bytes(data)
    return str(p)


def _argv(command: str, f: str, g: str, out: str, fmt: str, value: str | None) -> list[str]:
    """The command line; ``value`` (None: left out) goes to one numeric or shape option."""
    argv = {
        "opt": ["opt", f],
        "explain": ["explain", f],
        "hlo-opt": ["hlo-opt", f],
        "cast": ["cast", f, "--to", fmt, "-o", out + ".npy", "-q"],
        "decode": ["decode", f, "--from", fmt, "-o", out + ".npy", "-q"],
        "verify": ["verify", "--input", f, "--format", fmt, "--dump", g],
        # --no-diagnosis: the diagnosis re-runs the program under ~20 settings (seconds, by design)
        "verify-program": ["verify", "--program", g, "--inputs", f, "--dump", f, "--no-diagnosis"],
        "reencode": ["reencode", "-q", f, "-o", out + ".safetensors", "--to", fmt],
        "hlo-run": ["hlo-run", g, "--inputs", f, "-o", out + ".npz"],
    }[command]
    option = {"opt": "--target", "cast": "--threads", "decode": "--shape", "verify": "--shape",
              "reencode": "--threads", "explain": "--target"}.get(command)
    if value is not None and option is not None:
        argv += [option, value]
    return argv


def _run(argv: list[str]) -> str:
    from pyprecision.tools.cli import main

    out, err = _io.StringIO(), _io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse: usage and a message, exit 2
            code = e.code
    text = err.getvalue()
    assert "Traceback" not in text, text
    assert code in (0, 1, 2), (argv, code, text)
    if code == 2 and "usage:" not in text:
        assert len(text.strip().splitlines()) == 1 and text.strip().isprintable(), (argv, text)
    return f"exit {code}"


@settings(FUZZ, max_examples=max(EXAMPLES // 2, 20))
@given(st.sampled_from(sorted(NATURAL)), st.data(), FORMATS, VALUES)
def test_fuzz_cli_entry_points(workdir, command, data, fmt, value):
    ext = data.draw(st.sampled_from([NATURAL[command]] * 3 + sorted(SEEDS)))
    seed = SEEDS[ext]
    f = _file(workdir, ext, data.draw(st.just(seed) | mutations(seed, max_edits=3)))
    g_ext = ".pir" if command == "verify-program" and data.draw(st.booleans()) else (
        ".hlo" if command in ("hlo-run", "verify-program") else ".npy")
    g = _file(workdir, g_ext, data.draw(st.just(SEEDS[g_ext]) | mutations(SEEDS[g_ext], 2)))
    out = str(workdir / f"o{next(_COUNTER)}")
    argv = _argv(command, f, g, out, fmt, value)
    within_budget(f"cli {command}", lambda: _run(argv))


def test_valid_seeds_run(workdir):
    """The unmutated seeds succeed, so the fuzz inputs start from working commands."""
    f = _file(workdir, ".npy", NPY)
    _run(["cast", f, "--to", "bf16", "-o", str(workdir / "ok.npy"), "-q"])
    assert np.load(workdir / "ok.npy").shape == (3, 4)
