"""The pytest plugin of pyprecision.testing (entry point ``pytest11: pyprecision``).

* fixture ``assert_matches_pyprecision`` — the function of that name;
* marker ``pyprecision_cast(fmt, source=numpy.float64, **options)`` with fixture
  ``pyprecision_cast``: ``pyprecision_cast(fn)`` checks ``fn`` against every marker's format and
  source dtype;
* hypothesis profiles ``pyprecision-ci`` (derandomized, 500 examples, no deadline, no database)
  and ``pyprecision-thorough`` (5 000 examples): ``pytest --hypothesis-profile=pyprecision-ci``.

Loaded by every pytest run where pyprecision is installed, so it imports hypothesis only when it is
there and the checks only when a test asks for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

__all__ = ["register_profiles", "assert_matches_pyprecision", "pyprecision_cast"]

CI_PROFILE = "pyprecision-ci"
THOROUGH_PROFILE = "pyprecision-thorough"


def register_profiles() -> bool:
    """Register the hypothesis profiles (False when hypothesis is not installed)."""
    try:
        from hypothesis import HealthCheck, settings
    except ModuleNotFoundError:
        return False
    settings.register_profile(
        CI_PROFILE,
        max_examples=500,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(THOROUGH_PROFILE, max_examples=5000, deadline=None)
    return True


register_profiles()  # at import: hypothesis reads --hypothesis-profile in pytest_configure


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``pyprecision_cast`` marker."""
    config.addinivalue_line(
        "markers",
        "pyprecision_cast(fmt, source=numpy.float64, **options): the format and source dtype "
        "the pyprecision_cast fixture checks a cast function against",
    )


def _check() -> Callable[..., None]:
    try:
        from pyprecision.testing.check import assert_matches_pyprecision as check
    except ModuleNotFoundError as exc:  # pragma: no cover - hypothesis missing
        if exc.name == "hypothesis":
            raise ImportError(
                "pyprecision's cast checks need hypothesis: pip install 'pyprecision[test]'"
            ) from exc
        raise
    return check


@pytest.fixture
def assert_matches_pyprecision() -> Callable[..., None]:
    """``assert_matches_pyprecision(fn, src, fmt, **options)`` (pyprecision.testing.check)."""
    return _check()


@pytest.fixture
def pyprecision_cast(request: pytest.FixtureRequest) -> Callable[[Callable[..., Any]], None]:
    """A function ``check(fn)`` that runs ``fn`` against every ``pyprecision_cast`` marker."""
    marks = list(request.node.iter_markers("pyprecision_cast"))
    if not marks:
        raise pytest.UsageError(
            "the pyprecision_cast fixture needs @pytest.mark.pyprecision_cast(fmt, source=...)"
        )
    check = _check()

    def run(fn: Callable[..., Any]) -> None:
        __tracebackhide__ = True
        for mark in marks:
            kwargs = dict(mark.kwargs)
            source = kwargs.pop("source", np.float64)
            if not mark.args and "fmt" not in kwargs:
                raise pytest.UsageError("pyprecision_cast needs a format: pyprecision_cast('bf16')")
            fmts = mark.args or (kwargs.pop("fmt"),)
            for fmt in fmts:
                check(fn, source, fmt, **kwargs)

    return run
