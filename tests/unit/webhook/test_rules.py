"""Every rule through the app: the verdicts, the messages, and the patched pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import NODES, call, make_app, node, patched, pod

REQUIRE = """
rules:
- name: custom-label
  requireLabel: {schedulerName: kubesched, label: custom}
- name: tier-label
  requireLabel: {schedulerName: kubesched, label: example.com/tier, value: gold, action: warn}
"""


async def test_require_label_denies_a_pod_of_that_scheduler_without_the_label() -> None:
    app = make_app(REQUIRE)
    r = await call(app, "/validate", pod(schedulerName="kubesched"))
    assert r["allowed"] is False
    assert r["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": 'pods of scheduler "kubesched" must carry the label "custom" (rule custom-label)',
    }
    assert r["warnings"] == [
        'pods of scheduler "kubesched" must carry the label "example.com/tier" with value "gold" (rule tier-label)'
    ]
    assert "patch" not in r


async def test_require_label_value_and_other_schedulers() -> None:
    app = make_app(REQUIRE)
    ok = await call(app, "/validate", pod(labels={"custom": "", "example.com/tier": "gold"}, schedulerName="kubesched"))
    assert ok == {"uid": "uid-1", "allowed": True}
    wrong = await call(
        app, "/validate", pod(labels={"custom": "x", "example.com/tier": "tin"}, schedulerName="kubesched")
    )
    assert wrong["allowed"] is True
    assert wrong["warnings"] == [
        'pods of scheduler "kubesched" must carry the label "example.com/tier" with value "gold", not "tin" '
        "(rule tier-label)"
    ]
    assert await call(app, "/validate", pod()) == {"uid": "uid-1", "allowed": True}  # default-scheduler: not ours


async def test_validating_rules_do_not_run_on_mutate() -> None:
    app = make_app(REQUIRE)
    assert await call(app, "/mutate", pod(schedulerName="kubesched")) == {"uid": "uid-1", "allowed": True}


ROUTE = """
rules:
- name: route
  setScheduler:
    schedulerName: kubesched
    namespaces: [team-a, team-b]
    tolerations: [{key: dedicated, operator: Equal, value: batch, effect: NoSchedule}]
    nodeSelector: {kubernetes.io/os: linux, "example.com/a.b": "x"}
    labels: {custom: "true"}
"""


async def test_set_scheduler_sets_name_tolerations_selector_labels() -> None:
    app = make_app(ROUTE)
    original = pod()
    r = await call(app, "/mutate", original)
    assert r["allowed"] is True
    got = patched(original, r)
    assert got["spec"]["schedulerName"] == "kubesched"
    assert got["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
    ]
    assert got["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux", "example.com/a.b": "x"}
    assert got["metadata"]["labels"] == {"custom": "true"}
    assert got["spec"]["containers"] == original["spec"]["containers"]


async def test_set_scheduler_merges_into_what_the_pod_has() -> None:
    app = make_app(ROUTE)
    original = pod(
        labels={"app": "web", "custom": "no"},
        tolerations=[
            {"key": "other", "operator": "Exists"},
            {"key": "dedicated", "value": "batch", "effect": "NoSchedule"},  # same as the rule's: "" means Equal
        ],
        nodeSelector={"kubernetes.io/os": "windows", "zone": "a"},
    )
    got = patched(original, await call(app, "/mutate", original))
    assert got["spec"]["schedulerName"] == "kubesched"
    assert got["spec"]["tolerations"] == original["spec"]["tolerations"]
    # Keys the pod has keep their values (no force); new keys (`/` escaped in the patch) are added.
    assert got["spec"]["nodeSelector"] == {"kubernetes.io/os": "windows", "zone": "a", "example.com/a.b": "x"}
    assert got["metadata"]["labels"] == {"app": "web", "custom": "no"}


async def test_set_scheduler_leaves_an_explicit_other_scheduler_alone_unless_forced() -> None:
    app = make_app(ROUTE)
    mine = pod(schedulerName="my-own")
    assert await call(app, "/mutate", mine) == {"uid": "uid-1", "allowed": True}
    forced = make_app(ROUTE.replace("schedulerName: kubesched", "schedulerName: kubesched\n    force: true"))
    got = patched(mine, await call(forced, "/mutate", mine, uid="u2"))
    assert got["spec"]["schedulerName"] == "kubesched"
    already = pod(schedulerName="kubesched", labels={"custom": "true"})
    got = patched(already, await call(app, "/mutate", already))
    assert got["spec"]["schedulerName"] == "kubesched" and "tolerations" in got["spec"]


async def test_set_scheduler_force_overwrites_values() -> None:
    app = make_app(ROUTE.replace("schedulerName: kubesched", "schedulerName: kubesched\n    force: true"))
    original = pod(labels={"custom": "no"}, nodeSelector={"kubernetes.io/os": "windows"})
    got = patched(original, await call(app, "/mutate", original))
    assert got["metadata"]["labels"] == {"custom": "true"}
    assert got["spec"]["nodeSelector"]["kubernetes.io/os"] == "linux"


@pytest.mark.parametrize(
    ("selection", "namespace", "labels", "selected"),
    [
        ("namespaces: [team-a]", "team-a", None, True),
        ("namespaces: [team-a]", "team-c", None, False),
        ("matchLabels: {route: kubesched}", "anywhere", {"route": "kubesched"}, True),
        ("matchLabels: {route: kubesched}", "anywhere", {"route": "other"}, False),
        ("namespaces: [team-a]\n    matchLabels: {route: kubesched}", "team-a", {"route": "kubesched"}, True),
        ("namespaces: [team-a]\n    matchLabels: {route: kubesched}", "team-a", None, False),
        ("namespaces: [team-a]\n    matchLabels: {route: kubesched}", "team-b", {"route": "kubesched"}, False),
    ],
)
async def test_set_scheduler_selection(
    selection: str, namespace: str, labels: dict[str, str] | None, selected: bool
) -> None:
    app = make_app(f"rules:\n- setScheduler:\n    schedulerName: kubesched\n    {selection}\n")
    original = pod(labels=labels)
    got = patched(original, await call(app, "/mutate", original, namespace=namespace))
    assert (got["spec"]["schedulerName"] == "kubesched") is selected


async def test_set_scheduler_never_touches_updates() -> None:
    app = make_app("operations: [CREATE, UPDATE]\n" + ROUTE)
    assert await call(app, "/mutate", pod(), operation="UPDATE", oldObject=pod()) == {"uid": "uid-1", "allowed": True}


async def test_set_scheduler_then_require_label_as_the_api_server_runs_them() -> None:
    app = make_app(ROUTE + REQUIRE.replace("rules:\n", ""))
    mutated = patched(pod(), await call(app, "/mutate", pod()))
    r = await call(app, "/validate", mutated)
    assert r["allowed"] is True and "tier-label" in r["warnings"][0]


FEASIBLE = """
rules:
- name: fits
  feasibility: {action: deny}
"""


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"nodeSelector": {"pool": "nowhere"}},
            # TaintToleration runs before NodeAffinity, as upstream: the tainted node reports its taint.
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
            "2 node(s) didn't match Pod's node affinity/selector.",
        ),
        (
            {"nodeSelector": {"pool": "gpu"}},
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
            "2 node(s) didn't match Pod's node affinity/selector.",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]}
                            ]
                        }
                    }
                },
                "tolerations": [{"operator": "Exists"}],
            },
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        ),
        (
            {"containers": [{"name": "c", "resources": {"requests": {"cpu": "32"}}}]},
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.",
        ),
        (
            {"containers": [{"name": "c", "resources": {"requests": {"example.com/fpga": "1"}}}]},
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient example.com/fpga.",
        ),
    ],
)
async def test_feasibility_denies_with_the_schedulers_message(spec: dict[str, object], message: str) -> None:
    app = make_app(FEASIBLE)
    r = await call(app, "/validate", pod(**spec))
    assert r["allowed"] is False
    assert r["status"]["message"] == f"pod can never be scheduled: {message} (rule fits)"


async def test_feasibility_allows_what_fits_somewhere() -> None:
    app = make_app(FEASIBLE)
    tolerates_gpu = [{"key": "gpu", "operator": "Exists"}]
    for spec in (
        {"nodeSelector": {"pool": "general"}},
        {"nodeSelector": {"pool": "gpu"}, "tolerations": tolerates_gpu},
        {"containers": [{"name": "c", "resources": {"requests": {"cpu": "16", "memory": "64Gi"}}}]},
    ):
        assert (await call(app, "/validate", pod(**spec)))["allowed"] is True, spec


async def test_feasibility_ignores_pods_already_running() -> None:
    """A node full of pods is still a node the pod could fit on: requests are compared with allocatable."""
    app = make_app(FEASIBLE, nodes=[node("only", cpu="2")])
    assert (await call(app, "/validate", pod(cpu="2")))["allowed"] is True
    assert (await call(app, "/validate", pod(cpu="2001m")))["allowed"] is False


async def test_feasibility_cordoned_nodes_and_tolerations() -> None:
    app = make_app(FEASIBLE, nodes=[node("cordoned", unschedulable=True)])
    r = await call(app, "/validate", pod())
    assert r["status"]["message"].startswith(
        "pod can never be scheduled: 0/1 nodes are available: 1 node(s) were unschedulable."
    )
    tolerant = pod(
        tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    )
    assert (await call(app, "/validate", tolerant))["allowed"] is True


async def test_feasibility_warn_scheduler_names_node_name_and_no_nodes() -> None:
    app = make_app("rules:\n- feasibility: {action: warn, schedulerNames: [kubesched]}\n")
    assert await call(app, "/validate", pod(cpu="100")) == {"uid": "uid-1", "allowed": True}  # default-scheduler
    r = await call(app, "/validate", pod(cpu="100", schedulerName="kubesched"))
    assert r["allowed"] is True
    assert r["warnings"] == [
        "pod can never be scheduled: 0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 Insufficient cpu. (rule feasibility-0)"
    ]
    placed = pod(cpu="100", schedulerName="kubesched", nodeName="small")
    assert await call(app, "/validate", placed) == {"uid": "uid-1", "allowed": True}
    empty = make_app(FEASIBLE, nodes=[])
    assert await call(empty, "/validate", pod(cpu="100")) == {"uid": "uid-1", "allowed": True}


async def test_feasibility_counts_init_containers_and_overhead_like_the_scheduler() -> None:
    app = make_app(FEASIBLE, nodes=[node("only", cpu="2")])
    spec = {"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]}
    assert (await call(app, "/validate", pod(cpu="1", **spec)))["allowed"] is False
    assert (await call(app, "/validate", pod(cpu="1", overhead={"cpu": "1500m"})))["allowed"] is False


async def test_feasibility_of_an_unparsable_quantity_is_a_warning_not_a_verdict() -> None:
    app = make_app(FEASIBLE)
    r = await call(app, "/validate", pod(cpu="lots"))
    assert r["allowed"] is True and r["warnings"][0].startswith("feasibility not checked:")


def _rules(kind: str, target: str, phase: str = "validate") -> str:
    return f"rules:\n- name: {kind}\n  python: {target}\n  phase: {phase}\n"


async def test_python_rule_from_a_file(tmp_rules: Path) -> None:
    app = make_app(_rules("team", "rules.py:needs_team"), base=tmp_rules)
    r = await call(app, "/validate", pod())
    assert r["status"]["message"] == "alice: every pod needs a team label (rule team)"
    assert (await call(app, "/validate", pod(labels={"team": "a"})))["allowed"] is True


async def test_python_rule_async_and_dry_run(tmp_rules: Path) -> None:
    app = make_app(_rules("dry", "rules.py:warn_dry_run"), base=tmp_rules)
    assert (await call(app, "/validate", pod(), dryRun=True))["warnings"] == ["dry run (rule dry)"]
    assert "warnings" not in await call(app, "/validate", pod(), dryRun=False)


async def test_python_mutating_rule_changes_become_the_patch(tmp_rules: Path) -> None:
    app = make_app(_rules("owner", "rules.py:add_owner", "mutate"), base=tmp_rules)
    original = pod()
    got = patched(original, await call(app, "/mutate", original))
    assert got["metadata"]["annotations"] == {"example.com/owner": "alice"}


async def test_python_validating_rule_cannot_change_the_pod(tmp_rules: Path) -> None:
    text = _rules("scribble", "rules.py:scribble") + "- requireLabel: {schedulerName: nobody, label: x}\n"
    app = make_app(text, base=tmp_rules)
    assert await call(app, "/validate", pod()) == {"uid": "uid-1", "allowed": True}


async def test_python_rule_from_a_module() -> None:
    app = make_app(_rules("mod", "tests.unit.webhook.user_rules:label_free"))
    assert (await call(app, "/validate", pod(labels={"x": "y"})))["status"]["message"] == "no labels allowed (rule mod)"


def test_nodes_fixture_is_what_the_messages_count() -> None:
    assert len(NODES) == 3
