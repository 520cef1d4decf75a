"""A plugin's bug in the dry run (`scheduler run --cluster`): one line per pod with kube-scheduler's message for a
plugin's error, one traceback per bug (not per pod), no retries while nothing changes, and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PLUGINS = '''
import os
from kubesched import plugin


class Buggy(plugin.NodeFilterPlugin):
    """Raises KeyError for every pod: a bug, not a rejection. Counts its calls in $CALLS."""

    name = "Buggy"

    def filter_node(self, state, pod, node):
        with open(os.environ["CALLS"], "a") as calls:
            calls.write(pod.key + "\\n")
        if pod.labels.get("other") == "yes":
            raise ValueError("another bug")
        return {"gpu": 1}["zone"]


PLUGINS = [Buggy]
'''

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
pluginModules: ["buggy.py:PLUGINS"]
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Buggy
"""


def cluster(pods: int) -> dict[str, object]:
    nodes = [
        {"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}
        for i in range(3)
    ]
    items = [
        {
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "ns", "labels": {"other": "yes"} if i == 0 else {}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        for i in range(pods)
    ]
    return {"kind": "List", "items": nodes + items}


def dry_run(tmp_path: Path, pods: int, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    (tmp_path / "buggy.py").write_text(PLUGINS)
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "cluster.json").write_text(json.dumps(cluster(pods)))
    calls = tmp_path / "calls"
    calls.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CALLS": str(calls)}
    args = ["scheduler", "run", "--cluster", str(tmp_path / "cluster.json"), "--config", str(tmp_path / "config.yaml")]
    out = subprocess.run(
        [sys.executable, "-m", "kubesched", *args, *extra], capture_output=True, text=True, env=env, timeout=120
    )
    return out, calls.read_text().splitlines()


def test_a_plugin_s_key_error_is_one_line_per_pod_one_traceback_per_bug_and_exit_3(tmp_path: Path) -> None:
    out, calls = dry_run(tmp_path, 40)
    assert out.returncode == 3, out.stderr[-2000:]
    # Each pod tried once: nothing in the in-memory cluster changed after its failure.
    assert sorted(calls) == sorted(f"ns/p{i}" for i in range(40))
    lines = out.stdout.splitlines()
    assert len(lines) == 41  # a line per pod and the summary
    message = "running \"Buggy\" filter plugin: KeyError: 'zone'"
    assert sum(line.endswith(f"not scheduled: {message}") for line in lines) == 39
    assert lines[0].startswith("ns/p0") and lines[0].endswith(
        'not scheduled: running "Buggy" filter plugin: ValueError: another bug'
    )
    assert lines[-1] == "0/40 pending pod(s) scheduled"
    # Two bugs (KeyError, ValueError): two tracebacks, a summary line each, whatever the number of pods.
    err = out.stderr
    assert err.count("Traceback (most recent call last)") == 2, err
    assert err.count("KeyError: 'zone'\n") == 1 and err.count("ValueError: another bug\n") == 1
    assert f"kubesched: error: {message} (pod ns/p1) and 38 more time(s); traceback above" in err
    assert (
        'kubesched: error: running "Buggy" filter plugin: ValueError: another bug (pod ns/p0); traceback above' in err
    )
    assert len(err.splitlines()) < 40, err  # bounded by the bugs, not the pods (was ~12,000 lines for 7 pods)


def test_the_line_count_does_not_grow_with_the_pods_and_json_output_exits_3_too(tmp_path: Path) -> None:
    few, _ = dry_run(tmp_path, 3)
    many, calls = dry_run(tmp_path, 200, "-o", "json")
    assert len(calls) == 200
    assert few.returncode == many.returncode == 3
    for out in (few, many):  # a traceback per bug (its length varies: sampled cycles time the call), whatever the pods
        assert out.stderr.count("Traceback (most recent call last)") == 2
        assert len(out.stderr.splitlines()) < 40
    assert "and 198 more time(s); traceback above" in many.stderr and "and 1 more time(s)" in few.stderr
    reasons = {p["reason"] for p in json.loads(many.stdout)["placements"]}
    assert reasons == {
        "running \"Buggy\" filter plugin: KeyError: 'zone'",
        'running "Buggy" filter plugin: ValueError: another bug',
    }


ERROR_STATUS = '''
from kubesched import plugin


class Down(plugin.NodeFilterPlugin):
    """Returns an Error status (no exception): an error all the same."""

    name = "Down"

    def filter_node(self, state, pod, node):
        return plugin.Status.error("quota service unreachable")


PLUGINS = [Down]
'''


def test_an_error_status_without_a_raise_exits_3_too_and_names_the_pods(tmp_path: Path) -> None:
    (tmp_path / "buggy.py").write_text(ERROR_STATUS)
    (tmp_path / "config.yaml").write_text(CONFIG.replace("Buggy", "Down"))
    (tmp_path / "cluster.json").write_text(json.dumps(cluster(2)))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    args = ["scheduler", "run", "--cluster", str(tmp_path / "cluster.json"), "--config", str(tmp_path / "config.yaml")]
    out = subprocess.run(
        [sys.executable, "-m", "kubesched", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 3, out.stderr
    assert out.stdout.splitlines()[0] == 'ns/p0  not scheduled: running "Down" filter plugin: quota service unreachable'
    assert out.stderr == "kubesched: error: 2 pod(s) failed with an error status: ns/p0, ns/p1\n"
