"""Fixtures of the integration tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _collect_garbage_after_each_test() -> Iterator[None]:
    """A connection or file a test leaks is reported (warnings are errors) in that test, not in whichever later
    test the garbage collector happens to run in (the integration tests hold sockets, pipes and processes)."""
    yield
    gc.collect()
