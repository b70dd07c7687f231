"""Every command that takes a module takes every form (issue 23): hlo-opt, hlo-run, explain,
verify and opt read .hlo.txt, .hlo.pb, .hlo.pb.gz alike; bad input is exit 2 with one line naming
the file; --neuron-cc-flags / --from-command are the flags they hold."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from pyprecision.tools.cli import main

LOAD = Path(__file__).parent.parent / "data" / "load"
NPZ = Path(__file__).parent.parent / "data" / "models" / "jax-0.10.2" / "scan_rnn.npz"
FORMS = ["hlo.txt", "hlo.pb", "hlo.pb.gz"]


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"pyprecision {argv[0]}: error: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err
    return err


@pytest.mark.parametrize("form", FORMS)
def test_hlo_opt_prints_the_same_module_from_every_form(capsys, form: str) -> None:
    assert main(["hlo-opt", str(LOAD / f"mlp_param.{form}")]) == 0
    assert capsys.readouterr().out == (LOAD / "mlp_param.hlo.txt").read_text()


def test_hlo_run_gives_the_same_bits_from_every_form(tmp_path: Path) -> None:
    outs = []
    for form in FORMS:
        out = tmp_path / f"{form}.npz"
        assert main(["hlo-run", str(LOAD / f"scan_rnn.{form}"), "--inputs", str(NPZ),
                     "-o", str(out)]) == 0
        with np.load(out) as z:
            outs.append({k: z[k].tobytes() for k in z.files})
    assert outs[0] == outs[1] == outs[2] and outs[0]


def test_explain_of_a_proto_equals_explain_of_its_text(capsys) -> None:
    flags = ["--auto-cast", "matmult"]
    assert main(["explain", str(LOAD / "cond_model.hlo.txt"), *flags, "--json"]) == 0
    a = capsys.readouterr().out
    assert main(["explain", str(LOAD / "cond_model.hlo.pb.gz"), *flags, "--json"]) == 0
    b = capsys.readouterr().out
    assert a.replace("cond_model.hlo.txt", "X") == b.replace("cond_model.hlo.pb.gz", "X")


def test_neuron_cc_flags_and_from_command_equal_the_flags_typed(capsys) -> None:
    mod = str(LOAD / "mlp_param.hlo.pb")
    assert main(["explain", mod, "--auto-cast", "matmult", "--target", "gen3", "--json"]) == 0
    typed = capsys.readouterr().out
    assert main(["explain", mod, "--neuron-cc-flags", "--auto-cast=matmult --target=trn2",
                 "--json"]) == 0
    assert capsys.readouterr().out == typed
    line = ("neuronx-cc --target=trn2 compile --framework XLA model.hlo.pb --output m.neff "
            "--auto-cast matmult --verbose=35")
    assert main(["explain", mod, f"--from-command={line}", "--json"]) == 0
    got = capsys.readouterr()
    assert got.out == typed
    assert "skipped: neuronx-cc compile --framework XLA model.hlo.pb --output m.neff" in got.err


def test_hlo_run_from_command_runs_the_pipeline_like_typed_flags(tmp_path: Path) -> None:
    mod, outs = str(LOAD / "scan_rnn.hlo.pb"), []
    for flags in (["--auto-cast", "matmult", "--target", "gen2"],
                  ["--from-command", "neuronx-cc --target=trn1 compile x.pb --auto-cast matmult"]):
        out = tmp_path / f"{len(outs)}.npz"
        assert main(["hlo-run", mod, "--inputs", str(NPZ), "-o", str(out), *flags]) == 0
        with np.load(out) as z:
            outs.append({k: z[k].tobytes() for k in z.files})
    assert outs[0] == outs[1]


@pytest.mark.parametrize("argv, words", [
    (["--from-command", "neuronx-cc --target=trn2 compile", "--target", "gen2"],
     ("conflicting targets",)),
    (["--neuron-cc-flags", "--target=inf1"], ("neuron-cc's",)),
    (["--neuron-cc-flags", "--auto-cast nope"], ("invalid choice",)),
    (["--neuron-cc-flags"], ("needs a value",)),
])
@pytest.mark.parametrize("command", ["explain", "verify", "hlo-run"])
def test_bad_neuron_flags_are_one_line(capsys, command: str, argv: list[str],
                                       words: tuple[str, ...]) -> None:
    mod = str(LOAD / "mlp_param.hlo.pb")
    head = ["verify", "--program", mod] if command == "verify" else [command, mod]
    _one_line_error(capsys, [*head, *argv], *words)


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    pb = (LOAD / "mlp_param.hlo.pb").read_bytes()
    gz = (LOAD / "mlp_param.hlo.pb.gz").read_bytes()
    files = {
        "neff": ("model.neff", b"\x01\x00NEFF?" + bytes(range(256)) * 8, "compiled output"),
        "truncated": ("t.hlo.pb", pb[: len(pb) // 3], "truncated"),
        "other": ("o.pb", (LOAD / "bad" / "compile_options.pb").read_bytes(),
                  "not an HloModuleProto"),
        "gzip": ("g.hlo.pb.gz", gz[: len(gz) // 2], "a gzip that does not unpack"),
        "gzip2": ("gg.hlo.pb.gz", gzip.compress(gz), "a gzip inside a gzip"),
    }
    out = {}
    for key, (name, data, words) in files.items():
        p = tmp / name
        p.write_bytes(data)
        out[key] = (p, words)
    return out


@pytest.mark.parametrize("kind", ["neff", "truncated", "other", "gzip", "gzip2"])
@pytest.mark.parametrize("command", [["hlo-opt"], ["explain"], ["opt"],
                                     ["hlo-run", "--inputs", str(NPZ), "-o", "/nonexistent/o.npz"]])
def test_bad_module_is_exit_2_one_line_naming_the_file(capsys, tmp_path, command, kind) -> None:
    path, words = _bad_inputs(tmp_path)[kind]
    argv = [command[0], str(path), *command[1:]]
    _one_line_error(capsys, argv, str(path), words)


def test_verify_program_bad_proto_is_one_line(capsys, tmp_path) -> None:
    path, words = _bad_inputs(tmp_path)["truncated"]
    _one_line_error(capsys, ["verify", "--program", str(path), "--inputs", str(NPZ), "--dump",
                             str(NPZ)], str(path), words)
