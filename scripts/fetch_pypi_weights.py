"""Fetch real PyTorch state dicts that a PyPI package ships, for tests/data/torch/.

    python scripts/fetch_pypi_weights.py            # download, extract, write the manifest

facenet-pytorch 2.6.0 (MIT licence, Timothy Esler) ships the MTCNN face-detector weights inside its
wheel as ``facenet_pytorch/data/{pnet,rnet}.pt``: OrderedDicts of float32 tensors saved with torch's
*legacy* (pre-1.6, non-zip) serialization — the format ``torch.load(mmap=True)`` refuses. They are
copied byte for byte; only pip (to download the wheel) and zipfile are used, torch is not needed.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE, VERSION = "facenet-pytorch", "2.6.0"
MEMBERS = ["facenet_pytorch/data/pnet.pt", "facenet_pytorch/data/rnet.pt"]
LICENCE = "facenet_pytorch-2.6.0.dist-info/LICENSE.md"
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "torch"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
             f"{PACKAGE}=={VERSION}"],
            check=True,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        files = {}
        with zipfile.ZipFile(wheel) as zf:
            for m in MEMBERS + [LICENCE]:
                data = zf.read(m)
                name = "LICENSE-facenet-pytorch.md" if m == LICENCE else Path(m).name
                (OUT / name).write_bytes(data)
                files[name] = {"from": m, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        manifest = {"package": PACKAGE, "version": VERSION, "wheel": wheel.name,
                    "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(), "files": files}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {', '.join(files)} to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
