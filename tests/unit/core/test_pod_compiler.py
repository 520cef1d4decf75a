"""PodCompiler: pods of equal spec, labels and namespace share what is derived from them."""

from __future__ import annotations

from kubesched.api.core import Pod
from kubesched.core.podinfo import PodCompiler, compile_pod
from kubesched.framework.interfaces import Handle
from kubesched.scheduler.profiles.manager import build_default
from kubesched.testing.builders import make_pod_object


def pod(name: str, *, labels: dict[str, str] | None = None, namespace: str = "ns", cpu: str = "100m") -> Pod:
    return make_pod_object(name, namespace=namespace, labels=labels or {"app": "a"}, requests={"cpu": cpu}, image="img")


def test_pods_of_one_spec_share_their_compiled_spec_but_keep_their_identity() -> None:
    compile = PodCompiler()
    a, b = compile(pod("a")), compile(pod("b"))
    assert a.shared is b.shared and a.cache is b.cache
    assert (a.name, a.uid, a.key) == ("a", "uid-a", "ns/a") and (b.name, b.uid) == ("b", "uid-b")
    assert a.requests == {"cpu": 100} and a.images == ("img:latest",)


def test_a_different_spec_labels_or_namespace_is_compiled_apart() -> None:
    compile = PodCompiler()
    base = compile(pod("a"))
    for other in (pod("b", cpu="200m"), pod("c", labels={"app": "b"}), pod("d", namespace="other")):
        info = compile(other)
        assert info.shared is not base.shared
    assert compile(pod("d2", cpu="200m")).requests == {"cpu": 200}


def test_the_compiler_is_bounded() -> None:
    compile = PodCompiler(limit=2)
    first = compile(pod("a", cpu="1"))
    compile(pod("b", cpu="2"))
    compile(pod("c", cpu="3"))  # full: emptied, then this one kept
    assert compile(pod("a2", cpu="1")).shared is not first.shared


def test_a_signature_is_computed_once_per_spec_and_equals_a_fresh_one() -> None:
    fw = build_default(Handle).profiles["default-scheduler"].framework
    compile = PodCompiler()
    a, b = compile(pod("a")), compile(pod("b"))
    assert fw.sign(a) is fw.sign(b)
    assert fw.sign(compile_pod(pod("c"))) == fw.sign(a)
    assert fw.sign(compile_pod(pod("d", cpu="1"))) != fw.sign(a)
