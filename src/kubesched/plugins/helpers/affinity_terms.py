"""InterPodAffinity's building blocks: compiled pod (anti-)affinity terms (its counts: affinity_counts.py).

A term matches a pod when the pod's namespace is one of the term's namespaces (the owner's own
namespace when neither ``namespaces`` nor ``namespaceSelector`` is set), or the namespace
selector selects it, and the label selector matches the pod's labels. An empty namespace selector
``{}`` selects every namespace, an absent one none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from kubesched.api.core import PodAffinityTerm, WeightedPodAffinityTerm
from kubesched.core.podinfo import PodInfo
from kubesched.plugins.helpers.label_selector import Selector, SelectorError, compile_selector

# A namespace's labels, None when the namespace is unknown.
NamespaceLabels = Callable[[str], Mapping[str, str] | None]


@dataclass(frozen=True)
class AffinityTerm:
    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str

    def matches_namespace(self, namespace: str, labels: Mapping[str, str] | None) -> bool:
        """``labels`` are the namespace's labels (None: unknown, so only a listed or all-namespaces term matches)."""
        if namespace in self.namespaces or self.namespace_selector.empty:
            return True
        return labels is not None and self.namespace_selector.matches(labels)

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
        return self.matches_namespace(pod.namespace, namespace_labels) and self.selector.matches(pod.labels)


@dataclass(frozen=True)
class WeightedTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True)
class PodTerms:
    """A pod's terms (framework.PodInfo); a group with a selector that does not parse is dropped whole."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
    error: str = ""


NO_TERMS = PodTerms()
T = TypeVar("T")
U = TypeVar("U")
_CACHE_KEY = "InterPodAffinity/terms"


def _term(owner: PodInfo, term: PodAffinityTerm) -> AffinityTerm:
    namespaces = term.namespaces or ()
    own = not namespaces and term.namespace_selector is None
    return AffinityTerm(
        namespaces=frozenset((owner.namespace,) if own else namespaces),
        namespace_selector=compile_selector(term.namespace_selector),
        selector=compile_selector(term.label_selector),
        topology_key=term.topology_key,
    )


def compile_terms(pod: PodInfo) -> PodTerms:
    """NewPodInfo's parsing: a failing group is left empty and its error kept, as upstream."""
    affinity = pod.pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_TERMS
    errors: list[str] = []

    def group(make: Callable[[T], U], terms: Sequence[T] | None, what: str) -> tuple[U, ...]:
        try:
            return tuple(make(t) for t in terms or ())
        except SelectorError as err:
            errors.append(f"{what}: {err}")
            return ()

    def required(t: PodAffinityTerm) -> AffinityTerm:
        return _term(pod, t)

    def preferred(t: WeightedPodAffinityTerm) -> WeightedTerm:
        return WeightedTerm(_term(pod, t.pod_affinity_term), t.weight)

    pa, anti = affinity.pod_affinity, affinity.pod_anti_affinity
    terms = PodTerms(
        group(
            required, pa.required_during_scheduling_ignored_during_execution if pa else None, "requiredAffinityTerms"
        ),
        group(
            required,
            anti.required_during_scheduling_ignored_during_execution if anti else None,
            "requiredAntiAffinityTerms",
        ),
        group(
            preferred, pa.preferred_during_scheduling_ignored_during_execution if pa else None, "preferredAffinityTerms"
        ),
        group(
            preferred,
            anti.preferred_during_scheduling_ignored_during_execution if anti else None,
            "preferredAntiAffinityTerms",
        ),
    )
    if not errors:
        return terms
    # utilerrors.NewAggregate: one error prints alone, several as a bracketed list.
    return replace(terms, error=errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")


def pod_terms(pod: PodInfo) -> PodTerms:
    """The pod's compiled terms, cached on the PodInfo."""
    cached = pod.cache.get(_CACHE_KEY)
    if not isinstance(cached, PodTerms):
        cached = pod.cache[_CACHE_KEY] = compile_terms(pod)
    return cached
