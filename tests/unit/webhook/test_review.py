"""The AdmissionReview contract: the reply's shape, which requests are judged, and every class of bad input."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kubesched.webhook.review import reply

from .conftest import call, make_app, pod, review, send

CONFIG = """
operations: [CREATE]
rules:
- name: route
  setScheduler: {schedulerName: kubesched, namespaces: [team-a]}
- name: label
  requireLabel: {schedulerName: kubesched, label: custom}
- name: fits
  feasibility: {action: warn}
"""


def test_reply_shape() -> None:
    allowed = json.loads(reply("u", warnings=["w"], patch=[{"op": "add", "path": "/a", "value": 1}]))
    assert allowed == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "u",
            "allowed": True,
            "warnings": ["w"],
            "patch": base64.b64encode(b'[{"op":"add","path":"/a","value":1}]').decode(),
            "patchType": "JSONPatch",
        },
    }
    denied = json.loads(reply("u", allowed=False, message="no", patch=[{"op": "add", "path": "/a", "value": 1}]))
    # A denial never carries a patch, and always a status the API server renders (code 403, reason Forbidden).
    assert denied["response"] == {
        "uid": "u",
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": "no"},
    }


async def test_validate_never_returns_a_patch_and_mutate_only_when_something_changed() -> None:
    app = make_app(CONFIG)
    v = await call(app, "/validate", pod(cpu="100"))
    assert v["allowed"] is True and "patch" not in v and "patchType" not in v
    assert "Insufficient cpu" in v["warnings"][0]
    assert await call(app, "/mutate", pod(), namespace="elsewhere") == {"uid": "uid-1", "allowed": True}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"kind": {"group": "", "version": "v1", "kind": "Service"}}, "other kinds"),
        ({"kind": {"group": "apps", "version": "v1", "kind": "Deployment"}}, "other groups"),
        ({"subResource": "status"}, "pods/status"),
        ({"subResource": "binding", "object": {"kind": "Binding", "apiVersion": "v1"}}, "pods/binding"),
        ({"operation": "DELETE", "object": None, "oldObject": pod(schedulerName="kubesched")}, "DELETE"),
        ({"operation": "CONNECT", "object": {"kind": "PodExecOptions"}}, "CONNECT"),
        ({"operation": "UPDATE", "oldObject": pod(schedulerName="kubesched")}, "UPDATE when not configured"),
    ],
)
async def test_requests_not_judged_are_allowed_untouched(change: dict[str, Any], why: str) -> None:
    app = make_app(CONFIG)
    body = review(pod(schedulerName="kubesched", cpu="100"))
    body["request"].update(change)
    for path in ("/validate", "/mutate"):
        r = await send(app, "POST", path, json.dumps(body).encode())
        assert r.status_code == 200, (why, r.text)
        assert r.json()["response"] == {"uid": "uid-1", "allowed": True}, why


async def test_update_is_judged_when_configured() -> None:
    app = make_app("operations: [CREATE, UPDATE]\n" + CONFIG.replace("operations: [CREATE]\n", ""))
    r = await call(app, "/validate", pod(schedulerName="kubesched"), operation="UPDATE", oldObject=pod())
    assert r["allowed"] is False and "custom" in r["status"]["message"]


async def test_dry_run_is_judged_the_same() -> None:
    app = make_app(CONFIG)
    for dry in (True, False):
        r = await call(app, "/validate", pod(schedulerName="kubesched"), dryRun=dry, uid=f"uid-{dry}")
        assert r["allowed"] is False


async def test_all_denials_and_warnings_are_reported_together() -> None:
    app = make_app(CONFIG + "- name: must-fit\n  feasibility: {action: deny}\n")
    r = await call(app, "/validate", pod(schedulerName="kubesched", cpu="100"))
    message = r["status"]["message"]
    assert message.startswith('pods of scheduler "kubesched" must carry the label "custom" (rule label); ')
    assert message.endswith("2 Insufficient cpu. (rule must-fit)")
    assert r["warnings"][0].endswith("(rule fits)")


def _envelope(request: Any, api_version: str = "admission.k8s.io/v1", kind: str = "AdmissionReview") -> bytes:
    return json.dumps({"apiVersion": api_version, "kind": kind, "request": request}).encode()


GOOD_REQUEST = review(pod())["request"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "empty request body"),
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "invalid AdmissionReview: Expected `object`, got `array`"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": 7}', "`$.request`"),
        (_envelope(GOOD_REQUEST, api_version="admission.k8s.io/v1beta1"), "got admission.k8s.io/v1beta1"),
        (_envelope(GOOD_REQUEST, kind="ConversionReview"), "kind AdmissionReview, got"),
        (json.dumps({"kind": "AdmissionReview", "request": GOOD_REQUEST}).encode(), "(no apiVersion)"),
        (_envelope(None), "has no request"),
        (_envelope({**GOOD_REQUEST, "uid": ""}), "request.uid is missing"),
        (_envelope({k: v for k, v in GOOD_REQUEST.items() if k != "uid"}), "request.uid is missing"),
        (_envelope({**GOOD_REQUEST, "uid": 12}), "`$.request.uid`"),
        (_envelope({k: v for k, v in GOOD_REQUEST.items() if k != "kind"}), "request.kind is missing"),
        (_envelope({**GOOD_REQUEST, "object": None}), "request.object is null or missing"),
        (_envelope({k: v for k, v in GOOD_REQUEST.items() if k != "object"}), "request.object is null or missing"),
        (_envelope({**GOOD_REQUEST, "object": [1]}), "request.object is a JSON list"),
        (_envelope({**GOOD_REQUEST, "object": {"apiVersion": "v1", "kind": "Service"}}), "is v1/Service, not a v1 Pod"),
        (
            _envelope({**GOOD_REQUEST, "object": {"spec": {"containers": "c"}}}),
            "not a valid Pod: Expected `array | null`, got `str` - at `request.object.spec.containers`",
        ),
        (_envelope({**GOOD_REQUEST, "dryRun": "yes"}), "`$.request.dryRun`"),
    ],
)
async def test_malformed_requests_get_400_and_the_server_keeps_serving(body: bytes, says: str) -> None:
    app = make_app(CONFIG)
    for path in ("/validate", "/mutate"):
        r = await send(app, "POST", path, body)
        assert r.status_code == 400, r.text
        # A metav1.Status, so that the API server shows the message to whoever created the object.
        assert r.headers["content-type"] == "application/json"
        status = r.json()
        assert says in status["message"]
        assert {k: status[k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "BadRequest",
            "code": 400,
        }
    assert (await call(app, "/validate", pod()))["allowed"] is True


async def test_http_errors_and_health() -> None:
    app = make_app(CONFIG)
    assert (await send(app, "POST", "/admit")).status_code == 404
    assert "/validate, /mutate" in (await send(app, "POST", "/admit")).text
    wrong = await send(app, "GET", "/validate")
    assert wrong.status_code == 405 and "POST" in wrong.text
    big = json.dumps(review(pod(labels={f"k{i}": "v" * 60 for i in range(2000)}))).encode()
    too_big = await send(app, "POST", "/validate", big)
    assert too_big.status_code == 413 and "--max-body-bytes" in too_big.text
    assert (await send(app, "GET", "/healthz")).text == "ok"
    assert (await send(app, "GET", "/readyz")).status_code == 200
    await call(app, "/validate", pod(schedulerName="kubesched"))
    metrics = (await send(app, "GET", "/metrics")).text
    assert 'kubesched_webhook_requests_total{code="200",path="/validate"}' in metrics
    assert 'kubesched_webhook_requests_total{code="413",path="/validate"}' in metrics
    assert 'kubesched_webhook_rule_verdicts_total{rule="label",verdict="denied"}' in metrics
    assert "kubesched_webhook_nodes 3.0" in metrics


async def test_readyz_waits_for_the_nodes() -> None:
    app = make_app(CONFIG)
    app.routes.cache.synced.clear()
    r = await send(app, "GET", "/readyz")
    assert r.status_code == 503 and "not synced" in r.text


async def test_failing_user_rules_are_500(tmp_rules: Any) -> None:
    for target, says in (("boom", "rule b failed: RuntimeError: rule bug"), ("wrong", "rule b returned str")):
        app = make_app(f"rules:\n- name: b\n  python: rules.py:{target}\n", base=tmp_rules)
        r = await send(app, "POST", "/validate", json.dumps(review(pod())).encode())
        assert r.status_code == 500 and says in r.json()["message"] and r.json()["reason"] == "InternalError"


def _nested_review(levels: int, where: str) -> bytes:
    obj = pod()
    if where == "unknown field of the pod":
        obj["metadata"]["zzz"] = "X"
    elif where == "known field of the pod":
        obj["metadata"]["labels"] = "X"
    body = review(obj)
    if where == "unknown field of the review":
        body["request"]["zzz"] = "X"
    return json.dumps(body).replace('"X"', "[" * levels + "]" * levels).encode()


@pytest.mark.parametrize("levels", [300, 1000, 100_000])
@pytest.mark.parametrize("where", ["unknown field of the pod", "known field of the pod", "unknown field of the review"])
async def test_deeply_nested_json_is_400_naming_the_problem(levels: int, where: str) -> None:
    app = make_app(CONFIG)
    app.routes.max_body = 1024 * 1024
    for path in ("/validate", "/mutate"):
        r = await send(app, "POST", path, _nested_review(levels, where))
        if where == "unknown field of the review" and levels == 300:
            assert r.status_code == 200, r.text  # skipped by the decoder, never walked
            continue
        assert r.status_code == 400, r.text
        if levels >= 1000:
            assert "levels deep, deeper than the decoder's limit" in r.text, r.text
        elif where == "known field of the pod":
            assert "request.object.metadata.labels" in r.text or "nested deeper than 100 levels" in r.text, r.text
        else:
            assert "JSON nested deeper than 100 levels in request.object" in r.text, r.text
    assert (await call(app, "/validate", pod()))["allowed"] is True
