"""Bursts on a managed resource: the real kube-scheduler v1.35.4 binding through our extender (bindVerb).

kube-scheduler binds in the background, so the next pod's filter reaches the extender before the watch
reports the last binding. With the reservation ledger the extender counts the pods it bound at once;
binds that no longer fit answer `Error`, and kube-scheduler retries those pods.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.testing.controlplane import ControlPlane
from kubesched.testing.faultproxy import FaultProxy
from kubesched.testing.waiting import wait_until

from .extender_harness import RES, Extender, generated_config, grant_extender_rbac, make_pod, scheduler

pytestmark = pytest.mark.controlplane

HOT = "burst-hot"  # labelled, 2 units: the only node that admits the pods
NOLABEL = "burst-nolabel"  # plenty of units but no `custom` label


@pytest.fixture
def burst_nodes(control_plane: ControlPlane) -> Iterator[None]:
    control_plane.create_node(
        HOT, labels={"custom": "true"}, allocatable={"cpu": "8", "memory": "32Gi", "pods": "110", RES: "2"}
    )
    control_plane.create_node(NOLABEL, allocatable={"cpu": "8", "memory": "32Gi", "pods": "110", RES: "16"})
    yield
    for name in (HOT, NOLABEL):
        control_plane.delete_node(name)


def _retried(cp: ControlPlane, ext: Extender, refused: int) -> None:
    """Make kube-scheduler try the ``refused`` pods again, and wait until it has.

    Pods the extender refused wait in kube-scheduler's unschedulable queue for a cluster event (or its
    5-minute flush): a node change is one. Each try asks the extender's /filter (the resource is
    ignoredByScheduler, so kube-scheduler's own filters pass), so the /filter counter shows the tries.
    """

    def filters() -> float:
        return ext.metric("kubesched_extender_requests_total", verb="filter", code="200")

    base = filters()
    pokes = [0.0]

    def tried() -> bool:
        if time.monotonic() - pokes[-1] > 5:  # again, in case a pod was still backing off at the last one
            pokes.append(time.monotonic())
            cp.api("PATCH", f"/api/v1/nodes/{NOLABEL}", {"metadata": {"labels": {"retry": str(len(pokes))}}})
        return filters() >= base + refused

    wait_until(tried, f"{refused} more /filter requests (the refused pods tried again)", within=60)


def _placement(cp: ControlPlane, ns: str) -> dict[str, str]:
    pods = cp.api("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}


def _failed_scheduling(cp: ControlPlane, ns: str, name: str) -> list[str]:
    items = cp.api("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]
    return [e.get("note", "") for e in items if e["regarding"]["name"] == name and e["reason"] == "FailedScheduling"]


def _create_all(cp: ControlPlane, ns: str, names: list[str]) -> None:
    for name in names:
        cp.api("POST", f"/api/v1/namespaces/{ns}/pods", make_pod(name, 1))


def test_a_burst_binds_exactly_what_the_node_holds(
    control_plane: ControlPlane, kube_namespace: str, burst_nodes: None, tmp_path: Path
) -> None:
    cp, ns = control_plane, kube_namespace
    ext = Extender(grant_extender_rbac(cp), tmp_path).start()
    try:
        config = generated_config(tmp_path, ext.url, "--bind-verb", "bind")
        with scheduler(cp, config, "burst"):
            names = [f"burst-{i}" for i in range(6)]
            _create_all(cp, ns, names)
            # Two pods bound, and every other reported unschedulable by the extender.
            wait_until(
                lambda: (
                    sum(1 for n in _placement(cp, ns).values() if n) == 2
                    and all(
                        node or any("Insufficient " + RES in n for n in _failed_scheduling(cp, ns, name))
                        for name, node in _placement(cp, ns).items()
                    )
                ),
                "two bound, the others refused",
                within=90,
            )
            # kube-scheduler tries the refused pods again: once it has, nothing more may have landed.
            _retried(cp, ext, len(names) - 2)
            placed = _placement(cp, ns)
            bound = sorted(n for n, node in placed.items() if node)
            assert [placed[n] for n in bound] == [HOT, HOT], placed
            for name in set(names) - set(bound):
                notes = _failed_scheduling(cp, ns, name)
                assert any("Insufficient " + RES in n for n in notes), (name, notes)
            assert ext.metric("kubesched_extender_reservations_held") <= 2
            # Whether the 4 were refused by bind (their filter ran before a reservation) or by filter
            # (after one) depends on kube-scheduler's timing; either way both binds were reserved first.
            assert ext.metric("kubesched_extender_reservations_total") == 2

            # A bound pod goes: exactly one more gets its unit.
            cp.api("DELETE", f"/api/v1/namespaces/{ns}/pods/{bound[0]}", params={"gracePeriodSeconds": "0"})
            wait_until(lambda: sum(1 for n in _placement(cp, ns).values() if n) == 2, "one more pod bound", within=60)
            _retried(cp, ext, len(names) - 3)  # the pods still refused are tried again: no third one lands
            assert sum(1 for n in _placement(cp, ns).values() if n) == 2, _placement(cp, ns)
            wait_until(
                lambda: ext.metric("kubesched_extender_reservations_held") == 0, "reservations confirmed", within=60
            )
    finally:
        ext.stop()


def test_a_failed_binding_post_releases_the_reservation(
    control_plane: ControlPlane, kube_namespace: str, burst_nodes: None, tmp_path: Path
) -> None:
    """The extender reaches kube-apiserver through a fault proxy; binding POSTs fail while it refuses."""
    cp, ns = control_plane, kube_namespace
    kubeconfig = grant_extender_rbac(cp)
    host, port = cp.url.removeprefix("https://").rsplit(":", 1)
    with FaultProxy(host, int(port)) as proxy:
        proxied = tmp_path / "proxied.kubeconfig"
        proxied.write_text(kubeconfig.read_text().replace(cp.url, f"https://{proxy.address}"))
        ext = Extender(proxied, tmp_path).start()
        try:
            with scheduler(cp, generated_config(tmp_path, ext.url, "--bind-verb", "bind"), "bindfault"):
                proxy.refuse()
                _create_all(cp, ns, ["f-0", "f-1"])
                released = "kubesched_extender_reservations_released_total"
                wait_until(lambda: ext.metric(released) >= 2, "binds failed and released", within=60)
                assert ext.metric("kubesched_extender_reservations_held") == 0
                assert _placement(cp, ns) == {"f-0": "", "f-1": ""}
                started = time.monotonic()
                proxy.heal()
                # Both fit (2 units): a released reservation must not hold one back.
                wait_until(lambda: all(_placement(cp, ns).values()), "both pods bound", within=60)
                recovery = time.monotonic() - started
                assert set(_placement(cp, ns).values()) == {HOT}
                print(f"recovered {recovery:.1f}s after the API server came back")
        finally:
            ext.stop()


def test_a_lost_bind_answer_keeps_the_reservation_and_never_over_commits(
    control_plane: ControlPlane, kube_namespace: str, burst_nodes: None, tmp_path: Path
) -> None:
    """Answers from kube-apiserver to the extender are cut while a burst binds: a POST sent on a connection
    that was open before the cut is applied by the server, its answer lost, and the extender cannot read the
    pod back, so it keeps the reservation; kube-scheduler (told `Error`) tries the pods again. A new
    connection cannot even finish its TLS handshake (the server's first answer is cut), so those binds are
    known not to have been sent and are released. How many POSTs get through depends on how many kept-alive
    connections the extender had (one or two); either way the node's 2 units are never exceeded, during the
    outage or after, and no Binding is sent twice."""
    cp, ns = control_plane, kube_namespace
    kubeconfig = grant_extender_rbac(cp)
    host, port = cp.url.removeprefix("https://").rsplit(":", 1)
    with FaultProxy(host, int(port)) as proxy:
        proxied = tmp_path / "proxied.kubeconfig"
        proxied.write_text(kubeconfig.read_text().replace(cp.url, f"https://{proxy.address}"))
        ext = Extender(proxied, tmp_path).start()
        try:
            with scheduler(cp, generated_config(tmp_path, ext.url, "--bind-verb", "bind"), "cutbind"):
                proxy.cut_answers()  # the extender's watches, reads and binding POSTs: every answer lost
                names = [f"c-{i}" for i in range(4)]
                _create_all(cp, ns, names)
                wait_until(lambda: any(_placement(cp, ns).values()), "a pod bound by the server", within=60)
                outage_end = time.monotonic() + 8
                pokes = 0
                while time.monotonic() < outage_end:
                    if time.monotonic() > outage_end - 8 + 2 * pokes:
                        # A node change moves the pods the extender rejected: kube-scheduler tries them again.
                        pokes += 1
                        cp.api("PATCH", f"/api/v1/nodes/{NOLABEL}", {"metadata": {"labels": {"poke": str(pokes)}}})
                    placed = _placement(cp, ns)
                    assert sum(1 for n in placed.values() if n) <= 2, ("over-committed during the outage", placed)
                    time.sleep(0.2)  # the outage's length is the behaviour: checked all along
                during = sorted(n for n, node in _placement(cp, ns).items() if node)
                held = "kubesched_extender_reservations_held"
                assert ext.metric(held) == len(during), during  # kept while unknown
                proxy.heal()
                healed = time.monotonic()
                wait_until(lambda: ext.metric(held) == 0, "reservations confirmed by the watch", within=60)
                took = time.monotonic() - healed
                print(f"\nRELIABILITY extender bind answer lost ({len(during)}) -> confirmed: {took:.1f} s")
                wait_until(lambda: sum(1 for n in _placement(cp, ns).values() if n) == 2, "two pods bound", within=90)
                wait_until(
                    lambda: all(
                        node or any("Insufficient " + RES in n for n in _failed_scheduling(cp, ns, name))
                        for name, node in _placement(cp, ns).items()
                    ),
                    "the other pods refused",
                    within=60,
                )
                _retried(cp, ext, len(names) - 2)  # the refused pods tried again: nothing more may have landed
                placed = _placement(cp, ns)
                assert sorted(n for n in placed.values() if n) == [HOT, HOT], placed
                # Each Binding whose answer was lost was POSTed once, never again (no 409).
                log = ext.log.read_text()
                for name in during:
                    assert log.count(f"binding pod {ns}/{name} to node {HOT}: the answer was lost") == 1, log
                assert "already assigned" not in log, log
        finally:
            ext.stop()
