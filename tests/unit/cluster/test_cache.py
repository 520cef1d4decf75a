"""The cluster cache: an assumed pod's bound echo is confirmed, not counted again; other updates re-count."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.core import Pod
from kubesched.cluster.cache import ClusterCache
from kubesched.core.podinfo import compile_pod
from kubesched.testing.builders import make_node, make_pod_object


def pod(name: str, node: str = "", cpu: str = "500m", **extra: Any) -> Pod:
    spec = extra.pop("spec", {})
    return make_pod_object(name, namespace="ns", requests={"cpu": cpu}, node_name=node, meta=extra, **spec)


def bound(p: Pod, node: str) -> Pod:
    return msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=node))


def cache_with(*nodes: str) -> ClusterCache:
    cache = ClusterCache()
    cache.replace_nodes([make_node(n) for n in nodes])
    # Build the usage columns first, so the tests see them kept current pod by pod.
    cache.table.requested("cpu")
    cache.table.free("cpu")
    cache.table.pod_count()
    return cache


def cpu(cache: ClusterCache, node: str) -> int:
    return int(cache.table.requested("cpu")[cache.table.index[node]])


def test_the_echo_of_an_assumed_pod_confirms_it_in_place() -> None:
    cache = cache_with("a", "b")
    free = int(cache.table.free("cpu")[0])
    pending = pod("p")
    cache.assume(compile_pod(pending), "a")
    generation = cache.table.generation
    echo = bound(pending, "a")

    with pytest.MonkeyPatch.context() as patch:
        for method in ("add_pod", "remove_pod"):  # not counted again: confirmed where it was assumed
            patch.setattr(cache.table, method, lambda *_: pytest.fail("the assumed pod was counted again"))
        cache.upsert_pod(echo)
    assert not cache.is_assumed("uid-p")
    assert cache.pod_node("uid-p") == "a"
    held = cache.pod("uid-p")
    assert held is not None and held.pod is echo  # the newer object, for plugins that read it
    assert cpu(cache, "a") == 500 and int(cache.table.free("cpu")[0]) == free - 500
    assert cache.table.pod_count()[0] == 1
    assert cache.table.generation > generation
    cache.delete_pod("uid-p")
    assert cpu(cache, "a") == 0 and int(cache.table.free("cpu")[0]) == free


def test_an_echo_on_another_node_moves_the_pod() -> None:
    cache = cache_with("a", "b")
    pending = pod("p")
    cache.assume(compile_pod(pending), "a")
    cache.upsert_pod(bound(pending, "b"))
    assert cache.pod_node("uid-p") == "b" and not cache.is_assumed("uid-p")
    assert (cpu(cache, "a"), cpu(cache, "b")) == (0, 500)


def test_changed_requests_are_counted_anew() -> None:
    cache = cache_with("a")
    cache.upsert_pod(pod("p", "a"))
    cache.upsert_pod(pod("p", "a", cpu="2"))
    assert cpu(cache, "a") == 2000


def test_a_status_or_label_update_of_a_bound_pod_keeps_its_count() -> None:
    cache = cache_with("a")
    cache.upsert_pod(pod("p", "a"))
    relabelled = pod("p", "a", labels={"app": "x"})
    cache.upsert_pod(relabelled)
    held = cache.pod("uid-p")
    assert held is not None and held.labels == {"app": "x"}
    assert cpu(cache, "a") == 500 and cache.table.pod_count()[0] == 1


def test_pods_with_pod_affinity_stay_in_the_affinity_index() -> None:
    cache = cache_with("a")
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    pending = pod("p", spec=affinity)
    cache.assume(compile_pod(pending), "a")
    echo = bound(pending, "a")
    cache.upsert_pod(echo)
    [(row, held)] = cache.table.pods_with_affinity()
    assert row == 0 and held.pod is echo
    assert cpu(cache, "a") == 500


def test_an_orphan_is_confirmed_too_and_counted_once_its_node_appears() -> None:
    cache = cache_with("a")
    pending = pod("p")
    cache.assume(compile_pod(pending), "later")
    cache.upsert_pod(bound(pending, "later"))
    assert not cache.is_assumed("uid-p") and cache.pod_node("uid-p") == "later"
    cache.upsert_node(make_node("later"))
    assert cpu(cache, "later") == 500


def test_a_failed_binding_is_forgotten() -> None:
    cache = cache_with("a")
    cache.assume(compile_pod(pod("p")), "a")
    cache.forget("uid-p")
    assert cache.pod_node("uid-p") is None and cpu(cache, "a") == 0
