"""Reading and writing torch state dicts (.pt / .pth / .bin): only through
torch.load(weights_only=True, mmap=True) and torch.save, atomically; reencode and verify on them."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (pip install pyprecision[torch]); torch interop untested"
)

import pyprecision as pp  # noqa: E402
from pyprecision.errors import DumpError  # noqa: E402
from pyprecision.io import is_torch_file, open_tensors  # noqa: E402
from pyprecision.tools.cli import main  # noqa: E402

_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t: object) -> np.ndarray:
    n = t.element_size()
    return t.view(_INT[n]).numpy().view(f"u{n}")


def _state_dict() -> dict[str, object]:
    g = torch.Generator().manual_seed(14)
    x = torch.randn(48, 16, generator=g) * 100
    x[0, :4] = torch.tensor([float("nan"), float("inf"), -1e-40, 70000.0])
    return {"w": x, "w_bf16": x.to(torch.bfloat16), "w_f16": x[:8].to(torch.float16),
            "w_f64": x[:4].double(), "fp8": x[:2].to(torch.float8_e5m2),
            "steps": torch.arange(5), "mask": torch.tensor([1, 0], dtype=torch.uint8)}


@pytest.fixture
def pt(tmp_path: Path) -> Path:
    p = tmp_path / "model.pt"
    torch.save(_state_dict(), p)
    return p


def _mapped_files(address: int) -> list[str]:
    """The files this process has mapped at ``address`` (from /proc/self/maps)."""
    found = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        lo, hi = (int(v, 16) for v in parts[0].split("-"))
        if lo <= address < hi and len(parts) == 6:
            found.append(parts[5])
    return found


def test_a_state_dict_reads_as_tensors_mapped_from_the_file(pt: Path) -> None:
    sd = _state_dict()
    store = open_tensors(pt)
    assert list(store) == list(sd)
    for name, t in sd.items():
        info = store[name]
        assert info.kind == "pt" and info.shape == tuple(t.shape) and info.stored == str(t.dtype)
        arr = store.load(name)
        assert not arr.flags.writeable
        np.testing.assert_array_equal(arr.view(f"u{arr.dtype.itemsize}"), _bits(t))
    if Path("/proc/self/maps").exists():  # the bytes are the file's own pages, not a copy
        arr = store.load("w")
        assert str(pt.resolve()) in _mapped_files(arr.__array_interface__["data"][0])


def test_bin_is_torch_only_when_its_bytes_say_so(tmp_path: Path) -> None:
    model = tmp_path / "pytorch_model.bin"
    torch.save({"a": torch.ones(3)}, model)
    raw = tmp_path / "device.bin"
    np.arange(8, dtype=np.uint8).tofile(raw)
    zipped = tmp_path / "other.bin"
    np.savez(zipped.with_suffix(".npz"), a=np.ones(2))
    os.replace(zipped.with_suffix(".npz"), zipped)
    assert is_torch_file(model) and not is_torch_file(raw) and not is_torch_file(zipped)
    assert list(open_tensors(model)) == ["a"]
    assert pp.io.load_dump(raw, dtype="uint8").tolist() == list(range(8))  # still a raw dump


class Payload:
    """An object whose unpickling would write a file: proof that nothing is unpickled."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.target, "w"))


def test_a_file_that_needs_unpickling_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    bad = tmp_path / "evil.pt"
    torch.save({"w": torch.ones(2), "x": Payload(str(tmp_path / "pwned"))}, bad)
    with pytest.raises(DumpError, match=r"evil\.pt: needs full unpickling \(it asks for "
                                        r"(builtins|io)\.open\).*weights_only=True"):
        open_tensors(bad)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("obj,words", [
    (lambda: {"model": {"w": torch.ones(1)}}, "'model' holds a nested dict; pyprecision reads flat"),
    (lambda: {"w": torch.ones(1), "epoch": 3}, "'epoch' holds a int, not a tensor"),
    (lambda: {1: torch.ones(1)}, "key 1 is a int; state dict keys are names"),
    (lambda: [torch.ones(1)], "holds a list, not a state dict"),
    (lambda: torch.ones(2), "holds one tensor, not a state dict"),
    (lambda: {"q": torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)}, "'q' is a quantized"),
    (lambda: {"c": torch.ones(2, dtype=torch.complex32)}, "'c' has dtype torch.complex32"),
])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_what_is_not_a_flat_dict_of_tensors_is_refused_by_key(tmp_path: Path, obj, words) -> None:
    p = tmp_path / "ckpt.pt"
    torch.save(obj(), p)
    with pytest.raises(DumpError, match="ckpt.pt: .*" + words.replace("(", r"\(").replace(")", r"\)")):
        open_tensors(p)


REAL = Path(__file__).resolve().parent.parent / "data" / "torch"


@pytest.mark.parametrize("name", ["pnet.pt", "rnet.pt"])
def test_real_legacy_state_dict_from_a_pypi_wheel(tmp_path: Path, name: str) -> None:
    """facenet-pytorch 2.6.0 ships its MTCNN weights in torch's legacy (pre-1.6) format, which
    ``mmap=True`` refuses: they are read through the weights-only unpickler, into memory, with the
    values torch itself reads, and re-encode to bf16 as torch's own rne cast does."""
    src = REAL / name
    want = torch.load(src, weights_only=True)
    store = open_tensors(src)
    assert list(store) == list(want)
    for k, t in want.items():
        assert np.array_equal(store.load(k), t.numpy()), k
    out = tmp_path / "out.safetensors"
    s = pp.reencode.reencode(src, out, "bf16", verify=True)
    assert s.verify_failures == [] and len(s.tensors) == len(want)
    got = open_tensors(out)
    for k, t in want.items():
        assert np.array_equal(got.load(k).view(np.uint16), _bits(t.to(torch.bfloat16))), k
    assert src.read_bytes()[:2] == b"\x80\x02"  # input untouched, still the legacy format


def test_broken_files_are_clear_errors(tmp_path: Path, pt: Path) -> None:
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    (tmp_path / "cut.pt").write_bytes(pt.read_bytes()[: pt.stat().st_size // 2])
    for name, words in (("empty.pt", "it is empty"),
                        ("junk.pt", "neither a torch.save zip archive"),
                        ("cut.pt", "not a readable PyTorch file")):
        with pytest.raises(DumpError, match=re.escape(words)):
            open_tensors(tmp_path / name)


@pytest.mark.parametrize("fmt", [f.name for f in pp.formats()])
def test_reencode_pt_to_pt_round_trips_through_torch_load(tmp_path: Path, pt: Path, fmt: str) -> None:
    out = tmp_path / "out.pt"
    summary = pp.reencode.reencode(pt, out, fmt, verify=True)
    assert summary.verify_failures == [] and summary.outputs == [str(out)]
    got = torch.load(out, weights_only=True)
    sd = _state_dict()
    assert list(got) == list(sd)
    f = pp.format(fmt)
    want_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32r": torch.float32,
                  "fp8e4": torch.uint8, "fp8e4m3fn": torch.float8_e4m3fn,
                  "fp8e5": torch.float8_e5m2}[fmt]
    for name, t in sd.items():
        if t.is_floating_point():
            assert got[name].dtype == want_dtype
            src = pp.kernel.tensor_as_array(t)
            np.testing.assert_array_equal(_bits(got[name]), pp.encode(src, f))
        else:
            assert got[name].dtype == t.dtype and torch.equal(got[name], t)
    assert open_tensors(out)["w"].format == f.name  # the format survives (fp8e4 as uint8 codes)


def test_a_module_state_dict_loads_back_into_the_module(tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))
    src = tmp_path / "m.pth"
    torch.save(model.state_dict(), src)
    out = tmp_path / "m_bf16.pt"
    assert main(["reencode", str(src), "--to", "bf16", "-o", str(out), "--verify", "-q"]) == 0
    loaded = torch.load(out, weights_only=True)
    assert loaded._metadata["1"] == model.state_dict()._metadata["1"]  # BatchNorm's version kept
    fresh = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))
    fresh.load_state_dict(loaded, strict=True)
    assert torch.equal(fresh[0].weight, model[0].weight.to(torch.bfloat16).float())


def test_safetensors_to_pt_and_pt_to_safetensors(tmp_path: Path, pt: Path) -> None:
    st = tmp_path / "a.safetensors"
    pp.reencode.reencode(pt, st, "fp8e4m3fn", verify=True)
    back = tmp_path / "b.bin"
    s = pp.reencode.reencode(st, back, "bf16", output_format="pt", verify=True)
    assert s.verify_failures == [] and is_torch_file(back)
    d = tmp_path / "dir"
    d.mkdir()
    torch.save({"x": torch.ones(3)}, d / "part1.pt")
    s = pp.reencode.reencode(d, tmp_path / "out", "fp16", output_format="pt", verify=True)
    assert s.outputs == [str(tmp_path / "out" / "part1.pt")]
    assert torch.load(tmp_path / "out" / "part1.pt", weights_only=True)["x"].dtype == torch.float16


def test_the_pt_writer_is_atomic(tmp_path: Path, pt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.pt"
    out.write_bytes(b"precious")
    with pytest.raises(DumpError, match="exists"):
        pp.reencode.reencode(pt, out, "bf16")
    assert out.read_bytes() == b"precious"

    def broken_save(*a: object, **k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(DumpError, match="No space left"):
        pp.reencode.reencode(pt, out, "bf16", overwrite=True)
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt", "out.pt"]  # no temporary


def test_verify_and_list_read_state_dicts(
    tmp_path: Path, pt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.bin"
    assert main(["reencode", str(pt), "--to", "fp8e4", "-o", str(out), "--output-format", "pt",
                 "-q"]) == 0
    capsys.readouterr()
    assert main(["verify", "--input", str(pt), "--input-key", "w", "--dump", str(out),
                 "--dump-key", "w", "--format", "fp8e4", "--show", "0"]) == 0
    assert "result: OK (bit-exact)" in capsys.readouterr().out
    assert main(["reencode", str(pt), "--to", "bf16", "-o", str(tmp_path / "x.pt"), "--list"]) == 0
    assert "w_bf16\tbfloat16[48, 16]\t→ bf16" in capsys.readouterr().out


def test_tied_and_strided_tensors_are_read_by_value(tmp_path: Path) -> None:
    emb = torch.randn(10, 4)
    src = tmp_path / "tied.pt"
    # tied weights share one storage; a transposed view and a slice are stored with their strides
    torch.save({"embed": emb, "lm_head": emb, "t": emb.t(), "row": emb[3]}, src)
    out = tmp_path / "tied_bf16.pt"
    assert pp.reencode.reencode(src, out, "bf16", verify=True).verify_failures == []
    got = torch.load(out, weights_only=True)
    for name, t in {"embed": emb, "lm_head": emb, "t": emb.t(), "row": emb[3]}.items():
        assert torch.equal(got[name], t.to(torch.bfloat16)), name  # float32 -> bf16: torch is rne
