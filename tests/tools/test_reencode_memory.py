"""Peak resident memory of a re-encode is about one tensor, not the checkpoint (subprocess)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pyprecision.io import save_safetensors

CHILD = """
import resource, sys
import numpy as np
from pyprecision.reencode import reencode
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if sys.argv[3] == "run":
    reencode(sys.argv[1], sys.argv[2], "bf16", verify=True)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)
"""


@pytest.mark.slow
def test_peak_rss_is_about_one_tensor(tmp_path):
    mib = 1 << 20
    tensor = np.arange(8 * mib, dtype=np.float32)  # 32 MiB each, 6 of them: 192 MiB
    save_safetensors(tmp_path / "m.safetensors", {f"t{i}": tensor + i for i in range(6)})
    del tensor
    grew = int(
        subprocess.run(
            [
                sys.executable,
                "-c",
                CHILD,
                str(tmp_path / "m.safetensors"),
                str(tmp_path / "o.st"),
                "run",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )  # KiB
    # verify holds one input tensor (32 MiB, mapped), its fresh encode (16 MiB) and the output's
    # mapped view (16 MiB); streaming holds chunk buffers. Far below the 192 MiB checkpoint.
    assert grew * 1024 < 96 * mib, f"peak RSS grew by {grew / 1024:.0f} MiB"
