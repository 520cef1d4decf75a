"""The browser checks can fail: a page that fetches, logs an error or draws an empty chart is caught."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest

from kubesched.scheduler.report.page import Page
from tests.unit.scheduler.report.browser import Browser


def test_a_request_and_a_console_error_are_caught(browser: Browser, tmp_path: Path) -> None:
    path = tmp_path / "fetches.html"
    path.write_text(
        '<!DOCTYPE html><html><body><img src="http://cdn.example.invalid/x.png">'
        "<script>console.error('boom')</script></body></html>"
    )
    opened = browser.open(path)
    assert opened.console_errors and any("boom" in e for e in opened.console_errors)
    assert "http://cdn.example.invalid/x.png" in opened.requests
    with pytest.raises(AssertionError):
        opened.assert_clean(path.resolve().as_uri())


def test_a_chart_without_data_is_caught(browser: Browser, tmp_path: Path) -> None:
    page = Page("empty")
    page.chart(go.Figure(go.Bar(x=[], y=[])), "empty")
    page.chart(go.Figure(go.Bar(x=["a", "b"], y=[3, 1])), "full")
    path = tmp_path / "empty.html"
    path.write_text(page.html())
    opened = browser.open(path)
    opened.assert_clean(path.resolve().as_uri())
    marks = {c["name"]: c["marks"] for c in opened.charts}
    assert marks == {"empty": 0, "full": 2}
    with pytest.raises(AssertionError):
        opened.assert_charts_drawn({"empty", "full"})
