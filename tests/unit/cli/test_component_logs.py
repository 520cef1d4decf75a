"""The extender's and the webhook's log lines carry pod, node, plugin and profile as fields, formatted as the
scheduler's: klog's key=value text and JSON keys."""

from __future__ import annotations

import json
import logging
import re

import pytest

from kubesched.cli import logs
from tests.unit.extender.conftest import pod as ext_pod
from tests.unit.extender.test_reservations import SMALL, bind, bound_service, burst, filter_
from tests.unit.webhook.conftest import call, make_app, pod

KLOG_TAIL = re.compile(r'^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] ("(?:[^"\\]|\\.)*")(.*)$')


def _text(record: logging.LogRecord) -> tuple[str, str]:
    """(message, the fields part) of the klog text line."""
    m = KLOG_TAIL.match(logs.KlogFormatter().format(record))
    assert m, logs.KlogFormatter().format(record)
    return json.loads(m.group(1)), m.group(2)


def _json(record: logging.LogRecord) -> dict[str, object]:
    entry: dict[str, object] = json.loads(logs.JSONFormatter().format(record))
    return entry


def _one(caplog: pytest.LogCaptureFixture, msg: str) -> logging.LogRecord:
    found = [r for r in caplog.records if r.getMessage() == msg]
    assert len(found) == 1, [r.getMessage() for r in caplog.records]
    return found[0]


async def test_extender_bind_lines(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kubesched.extender")
    svc, _ = bound_service()
    first, second, third = burst(3)
    for p in (first, second, third):
        filter_(svc, p)
    assert await bind(svc, first) == ""
    assert await bind(svc, second) == ""
    refused = await bind(svc, third)  # n-small has 2 units: the third no longer fits
    assert "no longer fits" in refused
    bound = [r for r in caplog.records if r.getMessage() == "Successfully bound pod to node"]
    assert len(bound) == 2
    msg, fields = _text(bound[0])
    assert msg == "Successfully bound pod to node"
    assert fields == f' pod="default/{first["metadata"]["name"]}" node="{SMALL}" profile="default-scheduler"'
    entry = _json(_one(caplog, "Bind refused: the pod no longer fits the node"))
    assert entry["pod"] == f"default/{third['metadata']['name']}"
    assert (entry["node"], entry["profile"]) == (SMALL, "default-scheduler")
    assert "Insufficient" in str(entry["reason"])


async def test_extender_preempt_veto_names_pod_and_node(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kubesched.extender")
    svc, _ = bound_service()
    p = ext_pod(1, uid="u-pre", name="pre")
    args = {"Pod": p, "NodeNameToMetaVictims": {"ghost": {"Pods": [{"UID": "v1"}]}}}
    svc.preempt(json.dumps(args).encode())
    _, fields = _text(_one(caplog, "Preempt: node not in the node cache, vetoed"))
    assert fields == ' pod="default/pre" node="ghost" profile="default-scheduler"'


async def test_extender_bad_request_line_names_the_verb(caplog: pytest.LogCaptureFixture) -> None:
    from kubesched.extender.app import Dispatcher

    caplog.set_level(logging.INFO, logger="kubesched.extender")
    svc, _ = bound_service()
    Dispatcher(svc).dispatch("POST", "/filter", b"{not json")
    entry = _json(_one(caplog, "Bad request"))
    assert entry["verb"] == "filter" and "JSON" in str(entry["err"])


async def test_webhook_denial_lines_carry_pod_profile_plugin_and_rule(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kubesched.webhook")
    app = make_app("rules:\n- name: fits\n  feasibility: {action: deny}\n")
    r = await call(app, "/validate", pod("big-one", cpu="32", schedulerName="kubesched"))
    assert r["allowed"] is False
    _, fields = _text(_one(caplog, "Pod can never be scheduled"))
    # TaintToleration rejected the tainted node, NodeResourcesFit the two others: both named, in profile order.
    assert fields == ' pod="team-a/big-one" profile="kubesched" plugin="TaintToleration,NodeResourcesFit" rule="fits"'
    entry = _json(_one(caplog, "Denied pod"))
    assert (entry["pod"], entry["profile"], entry["phase"]) == ("team-a/big-one", "kubesched", "validate")
    assert "Insufficient cpu" in str(entry["reason"])
