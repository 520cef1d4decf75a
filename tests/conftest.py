"""In CI (CI=true) a skipped test is a failure: every component the tests need must be there."""

from __future__ import annotations

import os

import pytest


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("CI", "").lower() not in ("true", "1"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped:
        print(f"\nCI=true: {skipped} test(s) skipped; in CI a skip is a failure")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
