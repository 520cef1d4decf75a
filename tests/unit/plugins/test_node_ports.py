from __future__ import annotations

from typing import Any

import pytest

from kubesched.core.podinfo import HostPort
from kubesched.framework.interfaces import CycleState
from kubesched.framework.status import SKIP, Code, Status
from kubesched.plugins.node_ports import NodePorts, conflicts
from kubesched.testing.builders import batch, make_node, make_pod, make_table, results

TAKEN = Status(Code.UNSCHEDULABLE, ("node(s) didn't have free ports for the requested pod ports",))


def port(host_port: int, *, ip: str = "", protocol: str = "") -> dict[str, Any]:
    return {"containerPort": 80, "hostPort": host_port, "hostIP": ip, "protocol": protocol}


def with_ports(name: str, *ports: dict[str, Any]) -> Any:
    return make_pod(name, containers=[{"name": "c", "ports": list(ports)}])


@pytest.mark.parametrize(
    ("wanted", "used", "expected"),
    [
        (HostPort("0.0.0.0", "TCP", 80), HostPort("10.0.0.1", "TCP", 80), True),
        (HostPort("10.0.0.1", "TCP", 80), HostPort("0.0.0.0", "TCP", 80), True),
        (HostPort("10.0.0.1", "TCP", 80), HostPort("10.0.0.1", "TCP", 80), True),
        (HostPort("10.0.0.1", "TCP", 80), HostPort("10.0.0.2", "TCP", 80), False),
        (HostPort("0.0.0.0", "UDP", 80), HostPort("0.0.0.0", "TCP", 80), False),
        (HostPort("0.0.0.0", "TCP", 81), HostPort("0.0.0.0", "TCP", 80), False),
    ],
    ids=["all-vs-ip", "ip-vs-all", "same-ip", "other-ip", "other-protocol", "other-port"],
)
def test_conflicts(wanted: HostPort, used: HostPort, expected: bool) -> None:
    assert conflicts((wanted,), {used}) is expected


def test_host_ports_read_hostip_and_default_protocol() -> None:
    pod = with_ports("p", port(80, ip="10.0.0.1"), port(53, protocol="UDP"), port(0))
    assert pod.host_ports == (HostPort("10.0.0.1", "TCP", 80), HostPort("0.0.0.0", "UDP", 53))


def test_pre_filter_skips_pods_without_host_ports() -> None:
    table = make_table([make_node("a")])
    plugin = NodePorts()
    no_host_port = make_pod(containers=[{"name": "c", "ports": [{"containerPort": 80}]}])
    assert plugin.pre_filter(CycleState(), no_host_port, table).status == SKIP
    assert plugin.pre_filter(CycleState(), with_ports("p", port(80)), table).status.ok


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ([port(8080)], [None, TAKEN, TAKEN, None]),
        ([port(8080, ip="10.0.0.9")], [None, TAKEN, None, None]),
        ([port(8080, ip="10.0.0.1")], [None, TAKEN, TAKEN, None]),
        ([port(8080, protocol="UDP")], [None, None, None, TAKEN]),
        ([port(9090), port(9091)], [None, None, None, None]),
    ],
    ids=["any-ip", "other-ip", "same-ip", "udp", "free-ports"],
)
def test_filter(wanted: list[dict[str, Any]], expected: list[Status | None]) -> None:
    table = make_table(
        [make_node("free"), make_node("all-ips"), make_node("one-ip"), make_node("udp")],
        {
            "free": [make_pod("plain", requests={"cpu": "1"})],
            "all-ips": [with_ports("u1", port(8080))],
            "one-ip": [with_ports("u2", port(8080, ip="10.0.0.1"))],
            "udp": [with_ports("u3", port(8080, protocol="UDP"))],
        },
    )
    verdicts = NodePorts().filter(CycleState(), with_ports("p", *wanted), batch(table))
    assert results(verdicts) == expected


def test_sidecar_ports_count_and_deleted_pods_free_theirs() -> None:
    sidecar = make_pod("s", initContainers=[{"name": "proxy", "restartPolicy": "Always", "ports": [port(15001)]}])
    table = make_table([make_node("a")], {"a": [sidecar]})
    assert results(NodePorts().filter(CycleState(), with_ports("p", port(15001)), batch(table))) == [TAKEN]
    table.remove_pod(0, sidecar.uid)
    assert results(NodePorts().filter(CycleState(), with_ports("p", port(15001)), batch(table))) == [None]
