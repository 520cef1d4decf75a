"""kubesched's one validator against kube-scheduler itself: it refuses each file kube-scheduler refuses and
accepts each one it accepts (our extensions aside). kube-scheduler builds every profile before it needs the
API server, so a kubeconfig pointing nowhere is enough (`--write-config-to`, kubesched.testing.scheduler)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.config.check import validate_file
from kubesched.scheduler.profiles.manager import PluginSource
from kubesched.testing import build
from kubesched.testing.scheduler import SchedulerConfigError, check_with_binary
from kubesched.versions import Release

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""
HEAD = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}{client}}}
leaderElection: {{leaderElect: false}}
"""
FILES = {
    "valid": "profiles: [{schedulerName: s}]\n",
    "unknown-field": "profiles:\n- schedulerName: s\n  plugins:\n    score:\n      enabled:\n"
    "      - {name: NodeResourcesFit, wieght: 3}\n",
    "unknown-plugin": "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n      enabled: [{name: NodeResourceFit}]\n",  # noqa: E501 - test data on one line
    "bad-strategy": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeResourcesFit\n"
    "    args: {scoringStrategy: {type: MostAlocated}}\n",
    "duplicate-key": "parallelism: 2\nparallelism: 3\n",
    "unknown-args-field": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - {name: NodeResourcesFit, args: {bogus: 1}}\n",  # noqa: E501 - test data on one line
    "args-for-an-unknown-plugin": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - {name: NotAPlugin, args: {x: 1}}\n",  # noqa: E501 - test data on one line
    "upstream-plugin-kubesched-lacks": "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n"
    "      enabled: [{name: VolumeBinding}]\n",
    "hard-weight": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - {name: InterPodAffinity, args: {hardPodAffinityWeight: 101}}\n",  # noqa: E501 - test data on one line
    "spread": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
    "      defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]\n",
    "duplicate-profile": "profiles: [{schedulerName: s}, {schedulerName: s}]\n",
    "queue-sort-differs": "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n"
    "      disabled: [{name: '*'}]\n      enabled: [{name: PrioritySort}]\n",
    "percentage": "percentageOfNodesToScore: 101\n",
    "parallelism": "parallelism: 0\n",
    "two-binders": "extenders:\n- {urlPrefix: 'http://a', bindVerb: bind}\n- {urlPrefix: 'http://b', bindVerb: bind}\n",
    "preemption": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: DefaultPreemption\n"
    "    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}\n",
    "wrong-type": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - {name: InterPodAffinity, args: {hardPodAffinityWeight: x}}\n",  # noqa: E501 - test data on one line
    "api-version": "apiVersion: kubescheduler.config.k8s.io/v1beta3\n",
    "no-profiles": "profiles: []\n",
    "burst-zero": "#client: , burst: 0\n",
    "qps-zero": "#client: , qps: 0\n",
    "burst-negative": "#client: , burst: -1\n",
    "weight-outside-score": "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n"
    "      enabled: [{name: NodeName, weight: 3}]\n",
    "negative-weight": "profiles:\n- schedulerName: s\n  plugins:\n    score:\n"
    "      enabled: [{name: ImageLocality, weight: -2}]\n",
    "nameless-plugin-config": "profiles:\n- schedulerName: s\n  pluginConfig: [{args: {x: 1}}]\n",
    "removed-plugin": "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n      enabled: [{name: EBSLimits}]\n",
    "enabled-twice": "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n"
    "      enabled: [{name: NodeName}, {name: NodeName}]\n",
    "not-a-score-plugin": "profiles:\n- schedulerName: s\n  plugins:\n    score:\n      enabled: [{name: NodeName}]\n",
    "enabled-star": "profiles:\n- schedulerName: s\n  plugins:\n    filter:\n      enabled: [{name: '*'}]\n",
    "lease-shorter-than-renew": "leaderElection: {leaderElect: true, leaseDuration: 5s, renewDeadline: 10s}\n",
    "rtcr-shape": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
    "      scoringStrategy:\n        type: RequestedToCapacityRatio\n"
    "        requestedToCapacityRatio: {shape: [{utilization: 50, score: 5}, {utilization: 10, score: 1}]}\n",
    "node-affinity": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: NodeAffinity\n    args:\n"
    "      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
    "          nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Near, values: [a]}]}]\n",
    "volume-binding-shape": "profiles:\n- schedulerName: s\n  pluginConfig:\n  - name: VolumeBinding\n"
    "    args: {shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]}\n",
}


@pytest.fixture(scope="module")
def scheduler_binary(control_plane_binaries: build.Binaries) -> Path:
    return control_plane_binaries.kube_scheduler


@pytest.mark.all_kubernetes_versions
@pytest.mark.parametrize("case", sorted(FILES))
def test_kubesched_refuses_what_kube_scheduler_refuses(
    case: str, scheduler_binary: Path, kubernetes_version: Release, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    body = FILES[case]
    client = body.removeprefix("#client: ").strip() if body.startswith("#client: ") else ""
    head = HEAD.format(kubeconfig=kubeconfig, client=client)
    for key in ("apiVersion:", "leaderElection:"):
        if body.startswith(key) or f"\n{key}" in body:
            head = "\n".join(line for line in head.splitlines() if not line.startswith(key)) + "\n"
    path = tmp_path / f"{case}.yaml"
    path.write_text(head + body)
    try:
        check_with_binary(scheduler_binary, path)
        reason = ""
    except SchedulerConfigError as err:
        reason = str(err)
    verdict = validate_file(path, PluginSource(entry_points=lambda: ()), release=kubernetes_version)
    ours = "\n".join(str(e) for e in verdict.errors)
    assert bool(ours) == bool(reason), f"kube-scheduler: {reason or 'accepts'}\nkubesched: {ours or 'accepts'}"
