"""`kubesched scheduler run --cluster` (the embedded default) and `kubesched plugins list`, bad input included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main

EXAMPLE = Path(__file__).parents[3] / "examples" / "cluster.yaml"
CONFIG = Path(__file__).parents[3] / "examples" / "scheduler-config.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_cluster_is_scheduled_and_explained_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "scheduler", "run", "--cluster", str(EXAMPLE), "-o", "json")
    assert code == 0
    placed = {p["pod"]: p for p in json.loads(out)["placements"]}
    assert set(placed["shop/web-0"]) == {"pod", "node", "reason"}
    assert placed["shop/db-0"]["node"] == "node-a"  # nodeSelector disktype=ssd
    assert placed["ml/trainer-0"]["node"] == "node-c"  # tolerates the gpu taint
    assert placed["ops/critical-0"]["node"] == "node-b"  # after preempting jobs/batch-0
    huge = placed["ml/huge-0"]
    assert huge["node"] is None and huge["reason"].startswith("0/4 nodes are available: ")
    assert all((p["node"] is None) == (p["reason"] is not None) for p in placed.values())


def test_text_output_says_where_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "scheduler", "run", "--cluster", str(EXAMPLE))
    assert code == 0
    assert "shop/db-0       -> node-a" in out
    assert "ml/huge-0       not scheduled: 0/4 nodes are available:" in out
    assert "jobs/batch-0 preempted" in out
    assert out.rstrip().endswith("5/7 pending pod(s) scheduled")


def test_batching_can_be_switched_off_with_kube_schedulers_flag(capsys: pytest.CaptureFixture[str]) -> None:
    for gates in ("OpportunisticBatching=false", "OpportunisticBatching=true"):
        code, out, err = run(
            capsys, "scheduler", "run", "--cluster", str(EXAMPLE), "-o", "json", "--feature-gates", gates
        )
        assert code == 0, err
        assert {p["pod"]: p["node"] for p in json.loads(out)["placements"]}["shop/db-0"] == "node-a"


def test_the_example_configuration_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "scheduler", "run", "--cluster", str(EXAMPLE), "--config", str(CONFIG), "-o", "json")
    assert code == 0, err
    assert any(p["node"] for p in json.loads(out)["placements"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cluster", "/no/such/file.yaml"], "cannot read"),
        (["--cluster", "{cluster}", "--kubeconfig", "x"], "--cluster schedules in memory"),
        (["--cluster", "{cluster}", "--config", "/no/such.yaml"], "--config: no such file"),
        (
            ["--cluster", "{cluster}", "--config", "{bad}"],
            'profiles[0].plugins.filter.enabled[0].name: plugin "Nope" does not exist',
        ),
        (["--cluster", "{cluster}", "--config", "{bad}"], "not in valid range [0-100]"),
        (["--cluster", "{bad_cluster}"], "unsupported kind 'Deployment'"),
        (["--reload-interval", "0"], "--reload-interval: must be positive"),
        (["--cluster", "{cluster}", "--feature-gates", "Nope=true"], "unrecognized feature gate: Nope"),
        (["--cluster", "{cluster}", "--feature-gates", "OpportunisticBatching"], "missing bool value"),
        (["--cluster", "{cluster}", "--feature-gates", "OpportunisticBatching=maybe"], "must be true or false"),
    ],
)
def test_bad_input_ends_with_a_message_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "percentageOfNodesToScore": 300,
                "profiles": [{"schedulerName": "x", "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}],
            }
        )
    )
    bad_cluster = tmp_path / "cluster.yaml"
    bad_cluster.write_text("kind: Deployment\nmetadata: {name: d}\n")
    subst = {"{cluster}": str(EXAMPLE), "{bad}": str(bad), "{bad_cluster}": str(bad_cluster)}
    code, out, err = run(capsys, "scheduler", "run", *[subst.get(a, a) for a in argv])
    assert code == 2 and out == ""
    assert err.startswith("kubesched: error: ") and message in err
    assert "Traceback" not in err


def test_plugins_list_shows_points_and_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugin = tmp_path / "mine.py"
    plugin.write_text(
        "from typing import ClassVar\nfrom kubesched.framework.interfaces import FilterPlugin\n"
        "class Mine(FilterPlugin):\n    name: ClassVar[str] = 'Mine'\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "pluginModules": ["mine.py:Mine"],
            }
        )
    )
    code, out, _ = run(capsys, "plugins", "list", "--config", str(config), "-o", "json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["plugins"]}
    assert rows["Mine"]["source"] == f"module {tmp_path}/mine.py:Mine" and rows["Mine"]["extensionPoints"] == ["filter"]
    assert rows["DefaultPreemption"]["extensionPoints"] == ["preEnqueue", "postFilter"]
    assert rows["PrioritySort"]["source"] == "built-in"
    code, out, _ = run(capsys, "plugins", "list")
    assert code == 0 and out.splitlines()[0].split() == ["NAME", "EXTENSION", "POINTS", "SOURCE"]


def test_a_replicasets_pods_in_a_cluster_file_are_spread_by_the_default_constraints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def node(name: str, zone: str, cpu: str) -> dict[str, Any]:
        labels = {"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}
        alloc = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
        return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc}}

    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "controller": True}
    pods = [
        {
            "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": "shop", "labels": {"app": "web"}, "ownerReferences": [owner]},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
        }
        for i in range(8)
    ]
    replicaset = {
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    counts = {}
    for name, objects in (("spread", [replicaset]), ("alone", [])):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all([node("big", "z1", "64"), node("small", "z2", "8"), *objects, *pods]))
        code, out, err = run(capsys, "scheduler", "run", "--cluster", str(path), "-o", "json")
        assert code == 0, err
        placed = [p["node"] for p in json.loads(out)["placements"]]
        counts[name] = {n: placed.count(n) for n in ("big", "small")}
    # As kube-scheduler spreads a ReplicaSet's pods (its e2e twin compares both schedulers on this layout).
    assert counts["spread"] == {"big": 4, "small": 4}
    assert counts["alone"]["big"] >= 6  # without the ReplicaSet, nothing derives a selector: LeastAllocated wins


# A user plugin module that counts its own executions and its plugin's instances (a line each) beside itself.
COUNTED_PLUGIN = """
from pathlib import Path
from typing import ClassVar

from kubesched.framework.interfaces import FilterPlugin
from kubesched.framework.status import Verdicts

LOG = Path(__file__).with_suffix(".log")
with LOG.open("a") as log:
    log.write("imported\\n")


class Counted(FilterPlugin):
    name: ClassVar[str] = "Counted"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        with LOG.open("a") as log:
            log.write(f"built for {self.handle.scheduler_name}\\n")

    def filter(self, state, pod, nodes):
        return Verdicts.all_pass(len(nodes))
"""


def test_a_user_plugin_module_is_imported_and_built_once_at_start_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "counted.py").write_text(COUNTED_PLUGIN)
    config = tmp_path / "sched.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "pluginModules": ["counted.py:Counted"],
                "profiles": [
                    {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "Counted"}]}}}
                ],
            }
        )
    )
    code, out, err = run(capsys, "scheduler", "run", "--cluster", str(EXAMPLE), "--config", str(config), "-o", "json")
    assert code == 0, err
    assert any(p["node"] for p in json.loads(out)["placements"])
    # Read, checked and built once: before, the command built it to check it and the scheduler again.
    assert (tmp_path / "counted.log").read_text().splitlines() == ["imported", "built for default-scheduler"]


def test_a_broken_configuration_lists_the_files_and_the_plugins_problems_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('broken on purpose')\n")
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 101\npluginModules: [broken.py:Nothing]\n"
    )
    code, _, err = run(capsys, "scheduler", "run", "--cluster", str(EXAMPLE), "--config", str(config))
    assert code == 2
    assert "(2 problems)" in err and "percentageOfNodesToScore" in err
    assert "RuntimeError: broken on purpose" in err


def _pod(name: str, namespace: str, priority: int = 0, node: str = "", **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": spec.pop("labels", {})},
        "spec": {
            "nodeName": node,
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            **spec,
        },
    }


def test_a_cluster_file_brings_pod_disruption_budgets_and_namespaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Preemption spares the pod a PodDisruptionBudget protects; a namespaceSelector term sees the file's
    # namespace labels. Before, both kinds were refused ("unsupported kind").
    node = {"kind": "Node", "metadata": {"name": "n", "labels": {"zone": "z"}}}
    node["status"] = {"allocatable": {"cpu": "3", "pods": "10"}}
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "namespaceSelector": {"matchLabels": {"team": "data"}},
                    "topologyKey": "zone",
                }
            ]
        }
    }
    objects = [
        node,
        {"kind": "Namespace", "metadata": {"name": "data", "labels": {"team": "data"}}},
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "p"}}},
        },
        _pod("db", "data", 2000, "n", labels={"app": "db"}),  # not a victim: more important
        _pod("protected", "ns", 5, "n", labels={"app": "p"}),
        _pod("other", "ns", 20, "n"),
        _pod("high", "ns", 1000, affinity=affinity),
    ]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(objects))
    code, out, err = run(capsys, "scheduler", "run", "--cluster", str(cluster), "-o", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["placements"] == [{"pod": "ns/high", "node": "n", "reason": None}]
    assert [p["pod"] for p in result["preemptions"]] == ["ns/other"]
