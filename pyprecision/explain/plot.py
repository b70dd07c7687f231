"""``explain --plot PNG``: each op's error against the all-fp32 run, in program order, coloured by the
dtype the op runs in after the passes (matplotlib, imported only when asked for)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pyprecision.errors import PyPrecisionError

__all__ = ["plot_explanation"]


def plot_explanation(result: Any, path: str | Path) -> None:
    """Write the PNG; needs the per-op errors (``explain --inputs``)."""
    if result.errors is None:
        raise PyPrecisionError("--plot needs --inputs (it draws each op's measured error)")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PyPrecisionError("--plot needs matplotlib, which is not installed "
                               "(pip install 'pyprecision[plot]')") from None  # fmt: skip
    rows = [(i, r) for i, r in enumerate(result.rows)
            if r.key in result.errors and result.errors[r.key].reached != 0]
    dtypes = sorted({r.after for _, r in rows})
    colours = {d: plt.get_cmap("tab10")(k % 10) for k, d in enumerate(dtypes)}
    fig, ax = plt.subplots(figsize=(max(8.0, min(24.0, len(result.rows) / 8)), 4.2))
    for d in dtypes:
        pts = [(i, result.errors[r.key].scaled) for i, r in rows if r.after == d]
        ax.scatter([p[0] for p in pts], [max(p[1], 1e-12) if math.isfinite(p[1]) else 1.0
                                         for p in pts], s=10, color=colours[d], label=d)  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("op, in program order")
    ax.set_ylabel("max |error| / max |fp32 value|, on what reaches an output")
    ax.set_title(f"{Path(result.program).name} [{' '.join(result.flags)}]")
    ax.legend(title="runs in", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
