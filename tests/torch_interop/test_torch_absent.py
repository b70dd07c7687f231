"""torch stays out of the process unless a tensor (or ``like="torch"``) asks for it, and without
torch a request for it is one clear error naming the install. Runs with or without torch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BLOCK = "import sys\nsys.modules['torch'] = None  # as if torch were not installed\n"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=False)


def test_the_numpy_path_never_imports_torch(tmp_path: Path) -> None:
    code = f"""
import numpy as np, pyprecision as pp
x = np.linspace(-3, 3, 11, dtype=np.float32)
pp.encode(x, "bf16"); pp.cast(x, "fp8e4m3fn"); pp.quantize(x, "fp8e5")
pp.decode(pp.encode(x, "fp16"), "fp16"); pp.encode(x, "bf16", like="numpy")
np.save({str(tmp_path / 'w.npy')!r}, x)
pp.reencode.reencode({str(tmp_path / 'w.npy')!r}, {str(tmp_path / 'w.safetensors')!r}, "bf16", verify=True)
pp.io.open_tensors({str(tmp_path / 'w.safetensors')!r})
import sys, json; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')))
"""
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


def test_like_torch_without_torch_is_one_clear_error() -> None:
    code = BLOCK + """
import numpy as np, pyprecision as pp
from pyprecision.errors import CastError
try:
    pp.cast(np.ones(2, np.float32), "bf16", like="torch")
except CastError as e:
    print(e)
"""
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ('like="torch" needs PyTorch, which is not installed: '
                                "pip install pyprecision[torch]")


def test_a_pt_input_without_torch_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    pt = tmp_path / "model.pt"
    pt.write_bytes(b"PK\x03\x04 whatever: torch is never asked")
    code = BLOCK + f"""
from pyprecision.tools.cli import main
sys.exit(main(["reencode", {str(pt)!r}, "--to", "bf16", "-o", {str(tmp_path / 'o.safetensors')!r}]))
"""
    r = _run(code)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"pyprecision reencode: error: {pt}: a PyTorch file; reading it needs "
                        "torch: pip install pyprecision[torch]\n")
    assert not (tmp_path / "o.safetensors").exists()
