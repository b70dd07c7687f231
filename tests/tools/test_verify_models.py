"""verify on real JAX models (tests/data/models/jax-0.10.2), issue 25's "done when": a dump made
with the right flags, its transcendental results moved a few ULP (standing in for a device's own
exp/tanh/rsqrt approximations), passes with the default transcendental tolerance and fails with
``--exact``; with wrong flags the diagnosis names the right set first, with a margin. Also: the
shared flag-set runs give the bits of independent runs, and intermediate dumps locate the first
op where device and emulation part."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyprecision import hlo
from pyprecision.emulate import bind_arguments, compile_hlo, run_compiled, run_flag_sets
from pyprecision.frontend import parse_flags
from pyprecision.ir.compute import UnaryOp
from pyprecision.tools.cli import main
from pyprecision.verify import verify_program
from pyprecision.verify.divergence import hlo_values

MODELS = Path(__file__).resolve().parents[1] / "data" / "models" / "jax-0.10.2"
RIGHT = ["--auto-cast", "matmult"]
#: the IR unary kinds a device computes with its own approximation
TRANSCENDENTAL_KINDS = {"exp", "log", "tanh", "erf", "rsqrt", "sqrt", "sigmoid", "log1p", "expm1"}


def _files(name: str) -> tuple[Path, Path]:
    return MODELS / f"{name}.hlo.txt", MODELS / f"{name}.npz"


def _device_outputs(name: str, flags: list[str], ulps: int = 4, trace: bool = False):
    """Emulate under ``flags`` with every transcendental result moved ``ulps`` float32 ULP
    (alternating sign), as a device's approximations would: the outputs (and with ``trace`` the
    HLO values by instruction name)."""
    text, npz = _files(name)
    m = hlo.parse(text.read_text())
    compiled = compile_hlo(m, parse_flags(flags))
    with np.load(npz) as z:
        args = bind_arguments(compiled.hlo_module, dict(z), widen=True).args
    orig = UnaryOp.evaluate

    def moved(self, ev):
        y = orig(self, ev)
        if self.kind in TRANSCENDENTAL_KINDS and self.result.dtype.is_float:
            y = np.asarray(y, np.float64)
            sign = np.where(np.arange(y.size).reshape(y.shape) % 3 == 0, -1.0, 1.0)
            return ev.num.round_to(y * (1 + sign * ulps * 2.0**-23), self.result.dtype)
        return y

    UnaryOp.evaluate = moved
    try:
        if trace:
            return hlo_values(compiled, args)
        return run_compiled(compiled, args)
    finally:
        UnaryOp.evaluate = orig


@pytest.fixture(scope="module", params=["encoder_block", "scan_rnn"])
def device_dump(request, tmp_path_factory):
    outs = _device_outputs(request.param, RIGHT)
    path = tmp_path_factory.mktemp(request.param) / "device.npz"
    np.savez(path, **{f"out{i}": o for i, o in enumerate(outs)})
    return request.param, path


def test_right_flags_pass_with_the_transcendental_tolerance_and_fail_exact(device_dump) -> None:
    name, dump = device_dump
    text, npz = _files(name)
    check = verify_program(str(text), str(npz), str(dump), flags=RIGHT, run_diagnosis=False)
    assert sum(r.comparison.mismatches for _, r in check.reports) > 0  # the dump is not bit-equal
    assert check.ok, [r.distance().describe() for _, r in check.reports]
    assert all(r.tolerance.why.startswith("transcendental (") for _, r in check.reports)
    exact = verify_program(str(text), str(npz), str(dump), flags=RIGHT, exact=True,
                           run_diagnosis=False)
    assert not exact.ok


def test_wrong_flags_fail_and_the_diagnosis_names_the_right_set_first(device_dump) -> None:
    name, dump = device_dump
    text, npz = _files(name)
    check = verify_program(str(text), str(npz), str(dump), flags=["--auto-cast", "none"])
    assert not check.ok
    diag = check.diagnosis
    best = diag.ranking[0]
    assert best.setting.flags[:2] == ("--auto-cast", "matmult")  # the user's spelling
    assert diag.margin() is not None and diag.margin() >= 10
    assert f"{' '.join(best.setting.flags)} is " in diag.summary()
    assert diag.emulations < diag.tried  # identical programs emulated once
    assert diag.given is not None and diag.given.setting.flags == ("--auto-cast", "none")
    assert diag.given_margin() >= 10
    assert "closer than the flags given, --auto-cast none (" in diag.summary()


def test_diagnosis_summary_on_the_command_line(tmp_path, capsys) -> None:
    dump = tmp_path / "device.npz"
    np.savez(dump, out0=_device_outputs("encoder_block", RIGHT)[0])
    text, npz = _files("encoder_block")
    code = main(["verify", "--program", str(text), "--inputs", str(npz), "--dump", str(dump),
                 "--auto-cast", "none", "--show", "1"])
    out = capsys.readouterr().out
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("diagnosis: "))
    assert "closest: --auto-cast matmult (relative L2" in line
    assert "--auto-cast matmult is " in line and "× closer than" in line
    assert "--fp32-cast matmult --fast-math" not in line.split(";")[0]
    assert "tolerance:   transcendental (" in out and "distance:    median" in out


CONFIGS = [["--auto-cast", "none"], RIGHT, ["--auto-cast", "all"],
           ["--auto-cast", "matmult", "--auto-cast-type", "fp16",
            "--disable-mixed-precision-accumulation"],
           ["--auto-cast", "matmult", "--fast-math", "no-fast-relayout"],
           ["--fp32-cast", "matmult", "--fast-math", "no-fast-relayout"],
           ["--auto-cast", "none", "--disable-mixed-precision-accumulation"]]


def test_shared_runs_give_the_bits_of_independent_runs() -> None:
    text, npz = _files("encoder_block")
    m = hlo.parse(text.read_text())
    with np.load(npz) as z:
        ins = dict(z)
    configs = [parse_flags(f) for f in CONFIGS]
    shared = run_flag_sets(m, configs, ins)
    assert shared.unused_inputs == ["out0", "ref_bf16mm_out0"]
    for config, run in zip(configs, shared.runs, strict=True):
        compiled = compile_hlo(m, config)
        alone = run_compiled(compiled, bind_arguments(compiled.hlo_module, ins).args)
        assert run.error is None and len(run.outputs) == len(alone)
        for a, b in zip(run.outputs, alone, strict=True):
            assert a.dtype == b.dtype
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    # sets 4 and 5 spell one program two ways; set 6 differs from set 0 only by narrow_acc on
    # float32 reductions (float32 accumulation either way): each pair is emulated once
    assert shared.runs[5].same_as == 4 and shared.runs[6].same_as == 0
    assert shared.emulations == len(CONFIGS) - 2


def test_intermediates_name_the_first_op_outside_its_tolerance(tmp_path) -> None:
    rows, values = _device_outputs("encoder_block", RIGHT, ulps=3, trace=True)
    text, npz = _files("encoder_block")
    opcode = {path: inst.opcode for path, inst in rows}
    dumps = {p: np.asarray(v) for p, v in values.items() if opcode.get(p) != "parameter"}
    order = [p for p, _ in rows if p in dumps]
    exp = next(p for p in order if opcode[p] == "exponential")
    dot = next(p for p in order[order.index(exp):] if opcode[p] == "dot")
    moved = dumps[dot].astype(np.float32).copy()
    moved.reshape(-1)[0] = moved.reshape(-1)[0] * np.float32(1.5) + np.float32(1)
    dumps[dot] = moved
    inter = tmp_path / "inter.npz"
    np.savez(inter, **{p.replace("/", "__"): v for p, v in dumps.items() if "/" not in p})
    dump = tmp_path / "dev.npz"
    np.savez(dump, out0=_device_outputs("encoder_block", RIGHT, ulps=3)[0])
    check = verify_program(str(text), str(npz), str(dump), flags=RIGHT, run_diagnosis=False,
                           intermediates=str(inter))
    div = check.extra["divergence"]
    # the moved exponential is within the transcendental tolerance: the dot is the first
    assert (div.name, div.opcode, div.failing) == (dot, "dot", 1)
    assert div.checked > 1 and div.unknown == []
    strict = verify_program(str(text), str(npz), str(dump), flags=RIGHT, run_diagnosis=False,
                            intermediates=str(inter), exact=True)
    first_moved = strict.extra["divergence"]
    assert first_moved.name is not None and order.index(first_moved.name) <= order.index(exp)
