"""A report opened in a real headless browser: Debian's Chromium (scripts/install-chromium), driven by Playwright.

`open_report` loads the file and gives what a reader would see: every console error, uncaught exception,
request (any at all besides the file itself) and failed request, and per chart (``data-chart``) how many marks
it drew with a non-empty area — a chart that drew no bar, no heat map cell, is a chart without data.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("KUBESCHED_CHROMIUM", "/usr/bin/chromium"))
# The machine's network is closed: Chromium's own background connections (updates, sync, QUIC probes) would
# hang or fail, so they are off; the user-data dir is fresh per browser.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Per chart: its plotly marks drawn with an area (bars, heat map images, scatter points), and the values
# (non-null y, or z of a heat map) its traces hold.
MARKS_JS = """() => Array.from(document.querySelectorAll('[data-chart]')).map(el => {
  const marks = Array.from(el.querySelectorAll(
    '.bars .point path, .hm image, .heatmaplayer image, .scatterlayer .point'));
  const drawn = marks.filter(m => { const b = m.getBBox(); return b.width > 0 && b.height > 0; });
  const values = (el.data || []).reduce((sum, t) => sum + [].concat(...(t.z || t.y || []))
    .filter(v => v !== null && v !== undefined).length, 0);
  return {name: el.dataset.chart, plotted: el.classList.contains('js-plotly-plot'), marks: drawn.length,
          traces: (el.data || []).length, values: values};
})"""


@dataclass
class Opened:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    charts: list[dict[str, Any]] = field(default_factory=list)
    evaluate: Callable[[str], Any] = lambda js: None  # JavaScript run in the page, its value returned

    def assert_clean(self, own: str) -> None:
        """No console error, no exception, no request but the file's own, none failed."""
        assert self.console_errors == [], self.console_errors
        assert self.page_errors == [], self.page_errors
        assert [u for u in self.requests if u != own] == []
        assert self.failed_requests == []

    def assert_charts_drawn(self, expected: set[str]) -> None:
        """Exactly the charts ``expected``, each one drawn by plotly with marks."""
        assert {c["name"] for c in self.charts} == expected, self.charts
        for chart in self.charts:
            assert chart["plotted"] and chart["traces"] > 0 and chart["marks"] > 0 and chart["values"] > 0, chart


def chromium_or_skip() -> Path:
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    message = f"{CHROMIUM} is missing (scripts/install-chromium installs Debian's chromium)"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{message} (CI=true: refusing to skip)")
    pytest.skip(message)


class Browser:
    """Chromium on a thread of its own: Playwright's sync API runs an event loop there, so the code under test
    may run its own (asyncio.run) on the test's thread."""

    def __init__(self, pool: ThreadPoolExecutor, context: Any) -> None:
        self.pool = pool
        self.context = context

    def open(self, path: Path) -> Opened:
        return self.pool.submit(self._open, path).result()

    def _open(self, path: Path) -> Opened:
        out = Opened()
        page = self.context.new_page()
        page.on("console", lambda m: out.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: out.page_errors.append(str(e)))
        page.on("request", lambda r: out.requests.append(r.url))
        page.on("requestfailed", lambda r: out.failed_requests.append(f"{r.url}: {r.failure}"))
        page.goto(path.resolve().as_uri(), wait_until="load")
        # plotly draws on load; a chart is done when its div holds plotly's svg.
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('[data-chart]')).every(e => e.querySelector('.main-svg'))",
            timeout=30_000,
        )
        page.wait_for_timeout(300)  # late console errors (a failed fetch after load) are caught too
        out.charts = page.evaluate(MARKS_JS)
        out.evaluate = lambda js: self.pool.submit(page.evaluate, js).result()
        return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="kubesched-chromium-") as profile, ThreadPoolExecutor(1) as pool:

        def start() -> tuple[Any, Any]:
            pw = sync_playwright().start()
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=str(chromium), headless=True, args=ARGS, offline=True
            )
            return pw, context

        pw, context = pool.submit(start).result()
        try:
            yield Browser(pool, context)
        finally:
            pool.submit(context.close).result()
            pool.submit(pw.stop).result()
