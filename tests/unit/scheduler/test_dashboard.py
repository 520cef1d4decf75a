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


_FILTER = {"job": '=~"$job"', "instance": '=~"$instance"'}
_AGGREGATION = re.compile(r"\b(sum|min|max|avg|count|stddev|stdvar|group)\b\s*(by\s*\(([^)]*)\))?\s*\(")


def unfiltered_selectors(expr: str) -> list[str]:
    """Every series selector of ``expr`` that does not filter on both the job and the instance variables."""
    bad = []
    for name in sorted(metric_names(expr)):
        for m in re.finditer(rf"\b{re.escape(name)}\b(\{{[^}}]*\}})?", expr):
            matchers = m.group(1) or ""
            if not all(f"{label}{value}" in matchers for label, value in _FILTER.items()):
                bad.append(m.group(0))
    return bad


def unsplit_aggregations(expr: str) -> list[str]:
    """Every aggregation of ``expr`` that may add series of different jobs together (no `by (job, ...)`)."""
    return [
        m.group(0)
        for m in _AGGREGATION.finditer(expr)
        if m.group(3) is None or "job" not in {x.strip() for x in m.group(3).split(",")}
    ]


def test_the_checks_catch_a_query_that_mixes_jobs() -> None:
    good = 'sum by (job, le) (rate(a_bucket{job=~"$job",instance=~"$instance",x="y"}[5m]))'
    assert unfiltered_selectors(good) == [] and unsplit_aggregations(good) == []
    assert unfiltered_selectors('sum by (job) (a{job=~"$job"})') == ['a{job=~"$job"}']
    assert unfiltered_selectors("max by (job) (a)") == ["a"]
    assert unsplit_aggregations('sum(a{job=~"$job",instance=~"$instance"})') == ["sum("]
    assert unsplit_aggregations('sum by (le) (a{job=~"$job",instance=~"$instance"})') == ["sum by (le) ("]


def test_every_query_filters_on_job_and_instance_and_never_sums_jobs_together() -> None:
    doc = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    for name in ("job", "instance"):
        var = variables[name]
        assert var["type"] == "query", name
        assert var["datasource"]["uid"] == "${datasource}", name
        assert var["query"]["query"].startswith("label_values(") and var["query"]["query"].endswith(f", {name})")
    assert "$job" in variables["instance"]["query"]["query"]  # instances of the jobs picked
    targets = [t for panel in doc["panels"] for t in panel.get("targets", [])]
    assert len(targets) >= 23
    for t in targets:
        assert unfiltered_selectors(t["expr"]) == [], t["expr"]
        assert unsplit_aggregations(t["expr"]) == [], t["expr"]
        assert "{{job}}" in t["legendFormat"], t["expr"]  # two jobs' series are told apart on the graph too
