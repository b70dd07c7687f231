"""The pytest plugin (entry point pytest11 ``pyprecision``): fixtures, the marker, the hypothesis
profiles, and tracebacks without pyprecision.testing's frames — run in a child pytest."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "pyprecision.testing.plugin"

USER_TESTS = '''
import ml_dtypes
import numpy as np
import pytest


def rne_bf16(x):
    u = x.view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    q = (((u >> 16) & 0x8000) | 0x7FC0).astype(np.uint16)
    return np.where((u & 0x7FFFFFFF) > 0x7F800000, q, r)


def test_fixture_passes(assert_matches_pyprecision):
    assert_matches_pyprecision(rne_bf16, np.float32, "bf16", max_examples=50)


def test_fixture_fails_on_truncation(assert_matches_pyprecision):
    assert_matches_pyprecision(lambda x: (x.view(np.uint32) >> 16).astype(np.uint16),
                               np.float32, "bf16", max_examples=100, max_size=4)


@pytest.mark.pyprecision_cast("fp16", source=np.int16, max_examples=30)
@pytest.mark.pyprecision_cast(fmt="bf16", source=np.uint8, max_examples=30)
def test_marker_runs_every_format(pyprecision_cast):
    pyprecision_cast(lambda x: x.astype(np.float16) if x.dtype == np.int16
                     else x.astype(ml_dtypes.bfloat16))


def test_marker_is_required(pyprecision_cast):
    pass


def test_profile_is_active():
    from hypothesis import settings
    assert settings.default.derandomize and settings.default.database is None
'''


def _plugin_args() -> list[str]:
    """-p the plugin unless this environment already loads it through its entry point."""
    loaded = any(ep.value == PLUGIN for ep in metadata.entry_points(group="pytest11"))
    return [] if loaded else ["-p", PLUGIN]


def test_pyproject_declares_the_entry_point() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"pyprecision": PLUGIN}


@pytest.fixture
def user_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider",
                                         "--hypothesis-profile=pyprecision-ci", "-rA")


def test_user_tests_through_the_plugin_and_tracebacks(user_run: pytest.RunResult) -> None:
    out = user_run.stdout.str()
    user_run.assert_outcomes(passed=3, failed=1, errors=1)
    for name in ("test_fixture_passes", "test_marker_runs_every_format",
                 "test_profile_is_active"):
        assert f"PASSED test_user.py::{name}" in out
    assert "FAILED test_user.py::test_fixture_fails_on_truncation" in out
    assert "differ in their bf16 bits" in out and "index  actual" in out
    assert "needs @pytest.mark.pyprecision_cast" in out
    # the failure's traceback shows the user's frames, not pyprecision.testing's
    start = out.index("test_fixture_fails_on_truncation ___")
    failure = out[start:out.index("short test summary")]
    assert "test_user.py" in failure
    for frame in ("pyprecision/testing/assertions.py", "pyprecision/testing/check.py"):
        assert frame not in failure, frame


def test_profiles_register_without_pytest_options() -> None:
    from hypothesis import settings

    from pyprecision.testing.plugin import CI_PROFILE, THOROUGH_PROFILE, register_profiles

    assert register_profiles()
    ci = settings.get_profile(CI_PROFILE)
    assert ci.derandomize and ci.deadline is None and ci.database is None
    assert settings.get_profile(THOROUGH_PROFILE).max_examples == 5000
    assert sys.modules["pyprecision.testing.plugin"].__doc__
