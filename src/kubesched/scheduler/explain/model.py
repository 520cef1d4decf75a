"""The explanation of one pod's scheduling, as `explain -o json` writes it (schema `kubesched.io/v1alpha1`)."""

from __future__ import annotations

import msgspec

API_VERSION = "kubesched.io/v1alpha1"
KIND = "Explanation"


class Verdict(msgspec.Struct, rename="camel", omit_defaults=True, frozen=True):
    """One plugin's answer for one node (or, at PreFilter, for the pod): kube-scheduler's code and reason."""

    plugin: str
    code: str  # Success, Error, Unschedulable, UnschedulableAndUnresolvable, Wait, Skip, Pending
    reason: str = ""


class Score(msgspec.Struct, rename="camel", frozen=True):
    """One Score plugin on one node: raw, after NormalizeScore, and times the plugin's weight."""

    plugin: str
    raw: int
    normalized: int
    weight: int
    weighted: int


class NodeExplanation(msgspec.Struct, rename="camel", omit_defaults=True):
    """One node: whether the pod fits, the status kube-scheduler reports for it (its first failing plugin),
    every Filter plugin that fails it, and its scores when it is among the nodes kube-scheduler scores."""

    name: str
    feasible: bool
    reported: Verdict | None = None
    failed: list[Verdict] = msgspec.field(default_factory=list)
    scored: bool = False  # among the feasible nodes kube-scheduler's percentageOfNodesToScore would score
    scores: list[Score] = msgspec.field(default_factory=list)
    total: int | None = None


class PreFilterStep(msgspec.Struct, rename="camel", omit_defaults=True, frozen=True):
    """One PreFilter plugin: its verdict, and the nodes it narrowed the search to (None: all)."""

    plugin: str
    code: str
    reason: str = ""
    nodes: list[str] | None = None


class Sample(msgspec.Struct, rename="camel", frozen=True):
    """kube-scheduler's percentageOfNodesToScore at work: how many feasible nodes it looks for."""

    percentage_of_nodes_to_score: int
    nodes_to_find: int
    feasible: int


class Preemption(msgspec.Struct, rename="camel", omit_defaults=True):
    """What PostFilter (preemption) did: the node nominated and the pods evicted for it."""

    nominated_node: str | None = None
    victims: list[str] = msgspec.field(default_factory=list)
    message: str = ""


class Help(msgspec.Struct, rename="camel", omit_defaults=True, frozen=True):
    """One change to the pod and the nodes it would open, found by running the filters again with it."""

    change: str
    nodes: int
    opened: list[str] = msgspec.field(default_factory=list)
    detail: str = ""


class Recorded(msgspec.Struct, rename="camel", omit_defaults=True, frozen=True):
    """The decision a running scheduler recorded for the pod (its /debug/decisions record)."""

    scheduler: str  # where it was read
    result: str  # Scheduled, Unschedulable, SchedulerError
    node: str | None = None
    message: str = ""
    nominated_node: str | None = None
    time: str = ""  # RFC 3339, UTC
    attempts: int = 0


class Explanation(msgspec.Struct, rename="camel", kw_only=True):
    """Why one pod lands where it does, or why it stays pending (every field written, null or empty)."""

    api_version: str = API_VERSION
    kind: str = KIND
    pod: str
    kubernetes_version: str
    profile: str
    node: str | None
    message: str  # kube-scheduler's FitError (or plugin error) message when no node was chosen
    bound_to: str | None = None  # the node the pod is already bound to, when it was explained as if pending
    runner_up: str | None = None
    margin: int | None = None  # the chosen node's total score minus the runner-up's
    pre_filter: list[PreFilterStep] = msgspec.field(default_factory=list)
    filter_plugins: list[str] = msgspec.field(default_factory=list)  # the profile's Filter plugins, in order
    sample: Sample | None = None
    nodes: list[NodeExplanation] = msgspec.field(default_factory=list)
    preemption: Preemption | None = None
    help: list[Help] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    recorded: Recorded | None = None  # what a running scheduler decided (explain --scheduler)


CODE_NAMES = ("Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending")


def code_name(code: int) -> str:
    """kube-scheduler's name of a status code (framework.Code's String)."""
    return CODE_NAMES[code] if 0 <= code < len(CODE_NAMES) else str(code)
