"""`extender serve --watch-pods auto`: pods are watched unless every plugin of the policy declares it reads none."""

from __future__ import annotations

from kubesched.framework.policy import Policy
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.policies import load, needs_pods, pod_blindness, pod_readers


def _policy(*names: str) -> Policy:
    return Policy(name="p", profile=ProfileSpec(plugins=tuple(PluginRef(n) for n in names)))


def test_pod_blind_plugins_need_no_pods() -> None:
    blind = _policy("NodeUnschedulable", "TaintToleration", "NodeAffinity")
    assert pod_readers(blind) == [] and not needs_pods(blind) and pod_blindness(blind) is None


def test_a_plugin_that_reads_pods_makes_the_extender_watch_them() -> None:
    spread = _policy("NodeUnschedulable", "PodTopologySpread", "InterPodAffinity")
    assert pod_readers(spread) == ["PodTopologySpread", "InterPodAffinity"]
    assert needs_pods(spread)
    warning = pod_blindness(spread)
    assert warning is not None and "PodTopologySpread, InterPodAffinity may read the pods" in warning


def test_managed_resources_need_pods_even_with_pod_blind_plugins() -> None:
    policy = load("custom-label")
    assert pod_readers(policy) == ["ExtendedResourceFit"] and needs_pods(policy)
