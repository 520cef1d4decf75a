"""The differential test's generator: seeded, unique names, every feature it promises, valid by the API's rules."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from kubesched.testing.differential.generate import GPU, Knobs, Scenario, generate, started_at


def scenarios(n: int = 12) -> list[Scenario]:
    return [generate(seed, f"t{seed}", "diff", Knobs(pending=30)) for seed in range(n)]


def all_pods(sc: Scenario) -> list[dict[str, Any]]:
    return [p for p, _ in sc.bound] + sc.pending


def test_the_same_seed_gives_the_same_scenario_and_another_seed_another() -> None:
    a, b, c = generate(7, "x", "s"), generate(7, "x", "s"), generate(8, "x", "s")
    assert json.dumps(a.__dict__, sort_keys=True) == json.dumps(b.__dict__, sort_keys=True)
    assert json.dumps(a.pending, sort_keys=True) != json.dumps(c.pending, sort_keys=True)


def test_every_name_carries_the_prefix_and_is_unique() -> None:
    sc = generate(3, "pfx", "s")
    names = [n["metadata"]["name"] for n, _ in sc.nodes]
    names += [p["metadata"]["name"] for p in all_pods(sc)]
    names += [o["metadata"]["name"] for o in sc.namespaces + sc.priority_classes + sc.runtime_classes]
    assert all(name.startswith("pfx-") for name in names)
    assert len(names) == len(set(names))
    assert all(p["metadata"]["namespace"] in {ns["metadata"]["name"] for ns in sc.namespaces} for p in all_pods(sc))


def test_sizes_follow_the_knobs() -> None:
    sc = generate(1, "p", "s", Knobs(nodes=(3, 3), bound=(5, 5), pending=4, namespaces=2))
    assert (len(sc.nodes), len(sc.bound), len(sc.pending), len(sc.namespaces)) == (3, 5, 4, 2)


def test_pods_are_bound_or_pending_for_the_scheduler_named() -> None:
    sc = generate(2, "p", "mine")
    assert all(p["spec"]["nodeName"] in {n["metadata"]["name"] for n, _ in sc.nodes} for p, _ in sc.bound)
    assert all("nodeName" not in p["spec"] for p in sc.pending)
    assert {p["spec"]["schedulerName"] for p in all_pods(sc)} == {"mine"}


def test_bound_pods_have_distinct_increasing_start_times() -> None:
    sc = generate(4, "p", "s")
    times = [status["status"]["startTime"] for _, status in sc.bound]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert started_at(59) < started_at(60) < started_at(3600)


def features(sc: Scenario) -> Counter[str]:
    """What the scenario exercises, by name."""
    seen: Counter[str] = Counter()
    for node, status in sc.nodes:
        seen.update(f"taint {t['effect']}" for t in node["spec"].get("taints", []))
        seen["unschedulable"] += bool(node["spec"].get("unschedulable"))
        seen["extended resource"] += GPU in status["status"]["allocatable"]
    for _, status in sc.bound:
        seen["resize"] += "containerStatuses" in status["status"]
        seen["resize infeasible"] += bool(status["status"].get("conditions"))
    for pod in all_pods(sc):
        spec = pod["spec"]
        seen["init"] += "initContainers" in spec
        seen["sidecar"] += any(c.get("restartPolicy") == "Always" for c in spec.get("initContainers", []))
        seen["overhead"] += "runtimeClassName" in spec
        seen["limits only"] += any(
            "limits" in c.get("resources", {}) and "requests" not in c["resources"] for c in spec["containers"]
        )
        seen["host port"] += any("ports" in c for c in spec["containers"])
        seen["priority"] += "priorityClassName" in spec
    for pod in sc.pending:
        spec = pod["spec"]
        text = json.dumps(spec)
        seen["node selector"] += "nodeSelector" in spec
        for op in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            seen[f"operator {op}"] += f'"operator": "{op}"' in json.dumps(
                spec.get("affinity", {}).get("nodeAffinity", {})
            )
        seen["matchFields"] += "matchFields" in text
        seen["toleration"] += "tolerations" in spec
        for kind in ("podAffinity", "podAntiAffinity"):
            seen[kind] += kind in spec.get("affinity", {})
        seen["namespaceSelector"] += "namespaceSelector" in text
        seen["namespaces"] += '"namespaces"' in text
        seen["affinity matchLabelKeys"] += "matchLabelKeys" in json.dumps(spec.get("affinity", {}))
        for c in spec.get("topologySpreadConstraints", []):
            seen[c["whenUnsatisfiable"]] += 1
            seen["minDomains"] += "minDomains" in c
            seen["nodeAffinityPolicy"] += "nodeAffinityPolicy" in c
            seen["nodeTaintsPolicy"] += "nodeTaintsPolicy" in c
            seen["spread matchLabelKeys"] += "matchLabelKeys" in c
    return seen


def test_a_dozen_seeds_exercise_every_feature() -> None:
    seen: Counter[str] = Counter()
    for sc in scenarios():
        seen += features(sc)
    wanted = [
        "taint NoSchedule", "taint NoExecute", "taint PreferNoSchedule", "unschedulable", "extended resource",
        "resize", "resize infeasible", "init", "sidecar", "overhead", "limits only", "host port", "priority",
        "node selector", "operator In", "operator NotIn", "operator Exists", "operator DoesNotExist",
        "operator Gt", "operator Lt", "matchFields", "toleration", "podAffinity", "podAntiAffinity",
        "namespaceSelector", "namespaces", "affinity matchLabelKeys", "DoNotSchedule", "ScheduleAnyway",
        "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "spread matchLabelKeys",
    ]  # fmt: skip
    assert [w for w in wanted if not seen[w]] == []


def test_what_the_api_server_would_refuse_is_never_generated() -> None:
    for sc in scenarios():
        for pod in sc.pending:
            spec = pod["spec"]
            pairs = [(c["topologyKey"], c["whenUnsatisfiable"]) for c in spec.get("topologySpreadConstraints", [])]
            assert len(pairs) == len(set(pairs))  # one per topologyKey and whenUnsatisfiable
            for c in spec.get("topologySpreadConstraints", []):
                assert "minDomains" not in c or c["whenUnsatisfiable"] == "DoNotSchedule"
                assert all(k in pod["metadata"]["labels"] for k in c.get("matchLabelKeys", []))
            for fields in _match_fields(spec.get("affinity", {}).get("nodeAffinity", {})):
                assert len(fields["values"]) == 1  # metadata.name In/NotIn takes exactly one value


def _match_fields(node_affinity: dict[str, Any]) -> list[dict[str, Any]]:
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    preferred = [p["preference"] for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
    return [f for term in required + preferred for f in term.get("matchFields", [])]
