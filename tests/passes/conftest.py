"""The pass tests verify the IR before the first pass and after every pass (decision P20), so a
pass that breaks the IR is named by the test that catches it."""
from __future__ import annotations

import pytest

from pyprecision.pass_manager import VERIFY_EACH_PASS_ENV


@pytest.fixture(autouse=True)
def _verify_each_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VERIFY_EACH_PASS_ENV, "1")
