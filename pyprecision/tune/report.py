"""What ``tune`` prints: the recommendation in CLI spelling, its error and estimated cost against
``--auto-cast none``'s, the Pareto frontier, the ops adding most error; and the frontier plot."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyprecision.tune.search import Trial, TuneResult

__all__ = ["plot_frontier", "result_lines"]

ESTIMATE_NOTE = ("cost: an estimate of device time from public peak figures (PE multiply-adds over "
                 "peak FLOPS, other ops' bytes over memory bandwidth), not a measurement")


def _us(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds * 1e9:.3f} ns"


def _err(x: float) -> str:
    return f"{x:.3g}"


def _row(t: Trial, base: Trial) -> str:
    ratio = t.cost.total_s / base.cost.total_s if base.cost.total_s > 0 else 1.0
    return f"  {_err(t.error):>10}  {_us(t.cost.total_s):>14}  {ratio:6.3f}x  {t.flags.cli}"


def result_lines(result: TuneResult) -> list[str]:
    """The report as lines of text."""
    rec, base = result.recommended, result.baseline
    emulated = (f"{len(result.trials)} distinct programs emulated" if not result.not_emulated else
                f"{result.programs} distinct programs, {len(result.trials)} emulated (cheapest "
                f"first), {len(result.not_emulated)} not: they cost more than the recommendation")
    lines = [f"budget {result.budget:g} ({result.metric}, worst output), target {result.target}: "
             f"{result.sets_tried} flag sets, {emulated}"]
    lines.append(f"recommended: {rec.flags.cli}")
    lines.append(f"  NEURON_CC_FLAGS=\"{rec.flags.cli}\"")
    lines.append(f"  error {_err(rec.error)} (none: {_err(base.error)}), estimated cost "
                 f"{_us(rec.cost.total_s)} (none: {_us(base.cost.total_s)})")
    lines += [f"note: {n}" for n in result.notes]
    if result.validation_error is not None:
        verdict = "EXCEEDS the budget" if result.validation_exceeds else "within the budget"
        lines.append(f"held-out inputs: error {_err(result.validation_error)}, {verdict}")
    of = " of the programs emulated" if result.not_emulated else ""
    lines.append(f"Pareto frontier (cost, error){of}, cheapest first:")
    lines.append(f"  {'error':>10}  {'est. cost':>14}  {'vs none':>7}  flags")
    lines += [_row(t, base) for t in result.frontier]
    if result.attribution:
        lines.append("ops adding most error under the recommendation (rel-l2 of the op's output vs "
                     "none; added = less its worst operand's):")  # fmt: skip
        lines += [f"  {a.path} ({a.opcode}, {a.dtype}): added {_err(a.added)}, output "
                  f"{_err(a.error)}" + (f"  [{a.source}]" if a.source else "")
                  for a in result.attribution]  # fmt: skip
    lines.append(ESTIMATE_NOTE)
    return lines


def plot_frontier(result: TuneResult, path: str) -> None:
    """Every trial's (estimated cost, error), the frontier joined and the recommendation marked,
    written to ``path`` (PNG) through a temporary name. Imports matplotlib only here."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pyprecision.io import atomic_file

    base = result.baseline.cost.total_s or 1.0
    fig, ax = plt.subplots(figsize=(7, 4.5))
    floor = min((t.error for t in result.trials if t.error > 0), default=1e-12) / 10
    def pt(t: Trial) -> tuple[float, float]:
        return t.cost.total_s / base, max(t.error, floor)
    xs, ys = zip(*(pt(t) for t in result.trials), strict=True)
    ax.scatter(xs, ys, s=14, color="0.6", label="flag sets tried")
    fx, fy = zip(*(pt(t) for t in result.frontier), strict=True)
    ax.plot(fx, fy, "o-", color="C0", label="Pareto frontier")
    rx, ry = pt(result.recommended)
    ax.scatter([rx], [ry], s=90, marker="*", color="C3", zorder=3,
               label=f"recommended: {result.recommended.flags.cli}")
    if result.budget > 0:
        ax.axhline(result.budget, color="C3", linestyle=":", label=f"budget {result.budget:g}")
    ax.set_yscale("log")
    ax.set_xlabel(f"estimated cost vs --auto-cast none ({result.target}; an estimate)")
    ax.set_ylabel(f"error ({result.metric}, worst output; 0 drawn at {floor:.1e})")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    with atomic_file(path, (), overwrite=True) as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
