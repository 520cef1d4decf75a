"""Every query of the shipped Grafana dashboard names series the code exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched.api.core import Node
from kubesched.cluster.cache import ClusterCache
from kubesched.extender.app import Dispatcher
from kubesched.webhook.metrics import WebhookMetrics
from tests.unit.extender.test_reservations import bind, bound_service, burst, filter_
from tests.unit.scheduler.test_metrics import _run

DASHBOARD = Path(__file__).parents[3] / "deploy" / "grafana" / "kubesched-scheduler.json"
_AGGREGATIONS = {"sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "group"}
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects (labels, ranges, strings, functions left out)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        name, rest = m.group(), expr[m.end() :].lstrip()
        if rest.startswith("(") or name in _AGGREGATIONS or name in _KEYWORDS:
            continue
        names.add(name)
    return names


def test_metric_names_of_an_expression() -> None:
    expr = 'histogram_quantile(0.99, sum by (le, x) (rate(a_bucket{x="y"}[5m]))) / on(x) b_total + max(c)'
    assert metric_names(expr) == {"a_bucket", "b_total", "c"}


def _exported(text: str) -> set[str]:
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


async def test_every_dashboard_query_names_an_exported_series(monkeypatch: pytest.MonkeyPatch) -> None:
    scheduler, _ = await _run(monkeypatch)
    # Set by run.py's leader election (not part of an in-memory run); the live check is the e2e test's.
    scheduler.metrics.master_status.labels("kubesched-scheduler").set(1)
    scheduler_text = scheduler.metrics.render().decode()
    svc, _ = bound_service()
    p = burst(1)[0]
    filter_(svc, p)
    assert await bind(svc, p) == ""
    answer = Dispatcher(svc).dispatch("GET", "/metrics", b"")
    assert isinstance(answer, tuple)
    webhook = WebhookMetrics()
    nodes = ClusterCache()
    nodes.replace_nodes([msgspec.convert({"metadata": {"name": "n"}, "status": {"allocatable": {"x/y": "1"}}}, Node)])
    webhook.follow_allocation(lambda: nodes.table, ["x/y"], requested=True)
    exported = _exported(scheduler_text) | _exported(answer[1].decode()) | _exported(webhook.render().decode())
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in doc["panels"] for t in panel.get("targets", [])]
    assert len(exprs) >= 19
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        missing = names - exported
        assert not missing, f"{expr!r} names {sorted(missing)}, which no component exports"
