"""In-place pod resize: a bound pod counts at the larger of its spec and what its status reports
(component-helpers' PodRequests with UseStatusResources, as kube-scheduler's NodeInfo counts pods)."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.core.podinfo import PodCompiler, compute_requests


def pod(
    name: str = "p",
    *,
    cpu: str | None = "1",
    status: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    infeasible: bool = False,
    node: str = "",
) -> Pod:
    requests = {"cpu": cpu} if cpu is not None else {}
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": "Running" if node else "Pending"},
    }
    if init is not None:
        body["spec"]["initContainers"] = init
    if status is not None:
        body["status"]["containerStatuses"] = [s for s in status if not s.get("init")]
        body["status"]["initContainerStatuses"] = [
            {k: v for k, v in s.items() if k != "init"} for s in status if s.get("init")
        ]
    if infeasible:
        body["status"]["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    return msgspec.convert(body, Pod)


def reported(actuated: str | None, allocated: str | None = None, name: str = "c", **extra: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"name": name, **extra}
    s["resources"] = {"requests": {"cpu": actuated}} if actuated is not None else {}
    if allocated is not None:
        s["allocatedResources"] = {"cpu": allocated}
    return s


def cpu_of(p: Pod) -> int:
    return compute_requests(p)[0].get("cpu", 0)


def test_a_resize_in_progress_counts_the_larger_of_spec_actuated_and_allocated() -> None:
    assert cpu_of(pod(cpu="1")) == 1000
    assert cpu_of(pod(cpu="1", status=[reported("3")])) == 3000  # shrinking: still running with 3
    assert cpu_of(pod(cpu="1", status=[reported("1", allocated="2")])) == 2000  # admitted 2, not actuated
    assert cpu_of(pod(cpu="4", status=[reported("1", allocated="1")])) == 4000  # growing: the spec asks 4


def test_an_infeasible_resize_counts_what_runs_not_the_spec() -> None:
    assert cpu_of(pod(cpu="8", status=[reported("1", allocated="2")], infeasible=True)) == 2000


def test_a_status_without_resources_changes_nothing() -> None:
    assert cpu_of(pod(cpu="1", status=[{"name": "c"}])) == 1000
    assert cpu_of(pod(cpu="1", status=[reported("5", name="other")])) == 1000  # not this container


def test_a_reported_request_is_no_longer_defaulted_for_the_non_zero_score() -> None:
    requests, nz_cpu, _ = compute_requests(pod(cpu=None, status=[reported("250m")]))
    assert requests["cpu"] == 250 and nz_cpu == 250
    assert compute_requests(pod(cpu=None))[1] == 100  # kube-scheduler's default for a missing cpu request


def test_only_sidecars_among_init_containers_are_resized() -> None:
    sidecar = [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}]
    plain = [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]
    assert cpu_of(pod(cpu="1", init=sidecar, status=[reported("2", name="s", init=True)])) == 3000
    assert cpu_of(pod(cpu="1", init=plain, status=[reported("4", name="i", init=True)])) == 1000


def test_pods_of_one_spec_but_different_resizes_are_compiled_apart() -> None:
    compile = PodCompiler()
    a = compile(pod("a", status=[reported("1")]))
    b = compile(pod("b", status=[reported("3")]))
    c = compile(pod("c", status=[reported("1")]))
    assert a.requests["cpu"] == 1000 and b.requests["cpu"] == 3000
    assert a.shared is c.shared and a.shared is not b.shared


def test_the_cache_recounts_a_bound_pod_when_its_status_reports_a_resize() -> None:
    cache = ClusterCache()
    node = msgspec.convert({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}, Node)
    cache.upsert_node(node)
    cache.upsert_pod(pod("p", cpu="1", node="n"))
    row = cache.table.index["n"]
    assert cache.table.free_at("cpu", row) == 3000
    cache.upsert_pod(pod("p", cpu="1", node="n", status=[reported("3")]))  # the same spec: only the status moved
    assert cache.table.free_at("cpu", row) == 1000
    cache.upsert_pod(pod("p", cpu="1", node="n", status=[reported("1")]))  # the resize down is done
    assert cache.table.free_at("cpu", row) == 3000
