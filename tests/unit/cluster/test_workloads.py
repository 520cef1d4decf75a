"""kube-scheduler's DefaultSelector: what PodTopologySpread's default constraints select by."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.core import LabelSelector, LabelSelectorRequirement, Pod, ReplicationController, Service, Workload
from kubesched.cluster.workloads import Workloads
from kubesched.core.podinfo import PodCompiler, PodInfo
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_pod


def pod(labels: dict[str, str], owner: tuple[str, str, str] | None = None, controller: bool = True) -> PodInfo:
    meta: dict[str, Any] = {}
    if owner is not None:
        api_version, kind, name = owner
        meta["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": name, "controller": controller}]
    return make_pod("p", namespace="ns", uid="u", labels=labels, meta=meta, containers=[{"name": "c"}])


def service(name: str, selector: dict[str, str] | None, namespace: str = "ns") -> Service:
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"selector": selector}}, Service
    )


def workload(name: str, selector: dict[str, Any]) -> Workload:
    return msgspec.convert({"metadata": {"name": name, "namespace": "ns"}, "spec": {"selector": selector}}, Workload)


def test_services_selecting_the_pod_are_merged_and_others_left_out() -> None:
    w = Workloads()
    w.services.replace(
        [
            service("web", {"app": "web"}),
            service("tier", {"tier": "front"}),
            service("nil", None),  # selects nothing
            service("other", {"app": "db"}),
            service("elsewhere", {"app": "web"}, namespace="other"),
        ]
    )
    assert w.default_selector(pod({"app": "web", "tier": "front"})) == LabelSelector(
        match_labels={"app": "web", "tier": "front"}
    )
    assert w.default_selector(pod({"app": "api"})) is None
    w.services.delete(service("web", None))
    w.services.delete(service("tier", None))
    assert w.default_selector(pod({"app": "web", "tier": "front"})) is None


def test_the_controller_owner_adds_its_selector() -> None:
    w = Workloads()
    w.services.upsert(service("web", {"app": "web"}))
    w.replica_sets.upsert(workload("web-1", {"matchLabels": {"app": "web", "hash": "1"}}))
    w.stateful_sets.upsert(workload("db", {"matchExpressions": [{"key": "app", "operator": "Exists"}]}))
    w.controllers.upsert(
        msgspec.convert(
            {"metadata": {"name": "rc", "namespace": "ns"}, "spec": {"selector": {"rc": "x"}}}, ReplicationController
        )
    )
    labels = {"app": "web", "hash": "1", "rc": "x"}
    rs = w.default_selector(pod(labels, ("apps/v1", "ReplicaSet", "web-1")))
    assert rs == LabelSelector(
        match_labels={"app": "web"},
        match_expressions=[
            LabelSelectorRequirement("app", "In", ["web"]),
            LabelSelectorRequirement("hash", "In", ["1"]),
        ],
    )
    ss = w.default_selector(pod({"x": "y"}, ("apps/v1", "StatefulSet", "db")))
    assert ss == LabelSelector(match_expressions=[LabelSelectorRequirement("app", "Exists")])
    rc = w.default_selector(pod({"rc": "x"}, ("v1", "ReplicationController", "rc")))
    assert rc == LabelSelector(match_labels={"rc": "x"})
    # Not the controller, unknown, or of another kind: nothing added.
    assert w.default_selector(pod({"x": "y"}, ("apps/v1", "ReplicaSet", "web-1"), controller=False)) is None
    assert w.default_selector(pod({"x": "y"}, ("apps/v1", "ReplicaSet", "gone"))) is None
    assert w.default_selector(pod({"x": "y"}, ("apps/v1", "Deployment", "web"))) is None


def test_a_selector_that_does_not_parse_adds_nothing() -> None:
    w = Workloads()
    w.replica_sets.upsert(workload("bad", {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}))
    assert w.default_selector(pod({"a": "b"}, ("apps/v1", "ReplicaSet", "bad"))) is None


def test_pods_become_unsignable_once_default_constraints_apply_to_them() -> None:
    w = Workloads()
    fw = (
        build_default(lambda name: Handle(scheduler_name=name, default_selector=w.default_selector))
        .profiles["default-scheduler"]
        .framework
    )
    compile = PodCompiler()
    raw = msgspec.convert(
        {
            "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c"}]},
        },
        Pod,
    )
    first = compile(raw)
    assert fw.sign(first) is not None
    w.services.upsert(service("web", {"app": "web"}))  # now they spread: the same spec is no longer signable
    assert fw.sign(compile(raw)) is None
