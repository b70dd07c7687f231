"""pytest-benchmark for the cast core, the emulator and re-encode (issue 28): `bench/test_*.py`.

    pytest bench --benchmark-only                          # run them, print the table
    pytest bench --benchmark-only --benchmark-autosave     # and save a baseline
    pytest bench --benchmark-only --benchmark-compare --benchmark-compare-fail=mean:10%
                                                           # compare with the last: fails on a regression

(`--benchmark-only` here also lifts the `--benchmark-disable` of pyproject's addopts, which keeps
the test suite from timing anything; `pytest -q` from the top collects only tests/.) Without
`--benchmark-only` each benchmark runs once, as a test. The baselines are kept per CPU family: unless
`--benchmark-storage` is given, they go to and are compared from `bench/baselines/<family>/`,
<family> from /proc/cpuinfo (`amd-family26-model2` for Zen 5), the CPU's name, family, model and
the flags the kernels dispatch on in each saved file's machine info. A regression is a mean more
than 10 % above the baseline's, on the same family; run it on a quiet machine, or compare runs
made under the same load (the load average is in each file's machine info too)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare  # noqa: E402 - bench/compare.py: the CPU description, shared with compare.py


def cpu_family() -> str:
    """`<vendor>-family<F>-model<M>` of this CPU (from /proc/cpuinfo), 'unknown' elsewhere."""
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]
    except OSError:
        return "unknown"
    info = {k.strip(): v.strip() for k, v in
            (ln.split(":", 1) for ln in first.splitlines() if ":" in ln)}
    vendor = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}.get(info.get("vendor_id", ""), "cpu")
    return f"{vendor}-family{info.get('cpu family', '?')}-model{info.get('model', '?')}"


def pytest_configure(config: Any) -> None:
    """The baselines' folder per CPU family, unless --benchmark-storage names one; --benchmark-only
    enables the benchmarks that addopts disables (pytest-benchmark's own session is made after
    this hook, trylast)."""
    opt = config.option
    if getattr(opt, "benchmark_only", False):
        opt.benchmark_disable = False
    if getattr(opt, "benchmark_storage", None) in (None, "file://./.benchmarks", "./.benchmarks"):
        opt.benchmark_storage = f"file://{HERE / 'baselines' / cpu_family()}"


def pytest_benchmark_update_machine_info(config: Any, machine_info: dict[str, Any]) -> None:
    """The CPU family the baseline belongs to, its kernel flags, the ISA picked and the load."""
    from pyprecision.kernel import isa_auto

    machine_info["cpu_family"] = cpu_family()
    machine_info["cpu_description"] = compare.cpu_family_and_flags().strip(" ()")
    machine_info["pyprecision_isa"] = isa_auto()
    machine_info["loadavg"] = list(os.getloadavg())
