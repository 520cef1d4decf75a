"""The result of a simulation, as `simulate -o json` writes it (schema `kubesched.io/v1alpha1`, kind Simulation).

Stable: additive changes keep the version (the HTML report, `simulate.report`, reads it). Quantities are
integers in their base unit: cpu in millicores, memory and ephemeral-storage in bytes, the others in units.
"""

from __future__ import annotations

import msgspec

API_VERSION = "kubesched.io/v1alpha1"
KIND = "Simulation"
ZONE_LABEL = "topology.kubernetes.io/zone"


class Usage(msgspec.Struct, rename="camel", frozen=True):
    """One resource of one node: what its pods request and what it has (its status.allocatable)."""

    requested: int
    allocatable: int


class NodeState(msgspec.Struct, rename="camel"):
    """One node after a step: its zone (label topology.kubernetes.io/zone), cordoned or not, how many pods it
    runs, and per resource (cpu, memory and each extended resource it has or is asked for) its usage."""

    name: str
    zone: str = ""
    unschedulable: bool = False
    pods: int = 0
    resources: dict[str, Usage] = msgspec.field(default_factory=dict)


class Preemption(msgspec.Struct, rename="camel", frozen=True):
    """A pod evicted by preemption: the victim, the pod it made room for and the node; ``message``: the
    preemptor's FailedScheduling message of the step's attempt that nominated the node (kube-scheduler's)."""

    victim: str
    preemptor: str = ""
    node: str = ""
    message: str = ""


class PodDecision(msgspec.Struct, rename="camel"):
    """One pod the step scheduled or tried to: the node it is bound to, or kube-scheduler's FailedScheduling
    message (``message``) and the node preemption nominated for it."""

    pod: str
    node: str | None = None
    message: str = ""
    nominated: str | None = None


class Fragmentation(msgspec.Struct, rename="camel", frozen=True):
    """An extended resource (e.g. nvidia.com/gpu) over the schedulable nodes that have it: how many nodes use
    part of it, the free units on those nodes (stranded: no pod asking a whole node's worth fits there), the
    free units in all, and the most any one node has free."""

    resource: str
    nodes: int
    partially_used: int
    stranded: int
    free: int
    largest_free: int


class Spread(msgspec.Struct, rename="camel", frozen=True):
    """requested/allocatable of one resource over the schedulable nodes (0..1, may exceed 1 when overcommitted)."""

    resource: str
    p50: float
    p99: float
    mean: float
    max: float


class Aggregate(msgspec.Struct, rename="camel", kw_only=True):
    """The cluster after a step, in numbers."""

    nodes: int  # nodes in the cluster
    nodes_used: int  # nodes running at least one pod the scenario or the snapshot placed (filler pods not counted)
    pods_bound: int  # every pod bound to a node (filler pods included)
    pods_placed: int  # pods the simulation bound so far (over every step)
    pods_pending: int  # pods still pending now
    preemptions: int  # victims evicted by preemption so far
    spread: list[Spread] = msgspec.field(default_factory=list)  # cpu and memory
    fragmentation: list[Fragmentation] = msgspec.field(default_factory=list)


class StepResult(msgspec.Struct, rename="camel", kw_only=True):
    """One step: what it did to the cluster, each pod's decision, the preemptions and the cluster after it.
    ``decisions`` and ``nodes`` are empty when per-pod records are off (``records: false``)."""

    index: int
    name: str
    actions: list[str] = msgspec.field(default_factory=list)  # e.g. "addNodes: 10 node(s) gpu-0..gpu-9"
    decisions: list[PodDecision] = msgspec.field(default_factory=list)
    preemptions: list[Preemption] = msgspec.field(default_factory=list)
    nodes: list[NodeState] = msgspec.field(default_factory=list)
    aggregate: Aggregate
    cycles: int = 0  # scheduling cycles the step ran


BUCKETS = 11  # a ScoreDistribution's histogram: normalized score // 10, 0-9 … 90-99, then 100


class ScoreDistribution(msgspec.Struct, rename="camel", frozen=True):
    """One Score plugin over the run's scored cycles (records on; a cycle with one feasible node scores none):
    how many cycles it scored in, its weight, and histograms of its normalized score (0-100, ``BUCKETS``
    buckets of 10, the last one 100) on the chosen node and on every node scored."""

    plugin: str
    weight: int
    cycles: int
    chosen: list[int]
    scored: list[int]


class Run(msgspec.Struct, rename="camel", kw_only=True):
    """The scenario under one configuration (``label``: "A", "B"; ``config``: its file, or "" for defaults)."""

    label: str
    config: str
    profiles: list[str] = msgspec.field(default_factory=list)
    initial: list[NodeState] = msgspec.field(default_factory=list)  # the cluster before step 0 (records on)
    initial_aggregate: Aggregate | None = None
    steps: list[StepResult] = msgspec.field(default_factory=list)
    final: list[PodDecision] = msgspec.field(default_factory=list)  # every scenario pod's end state (records on)
    scores: list[ScoreDistribution] = msgspec.field(default_factory=list)  # per Score plugin (records on)
    notes: list[str] = msgspec.field(default_factory=list)  # e.g. records stopped at their bound


class PodDifference(msgspec.Struct, rename="camel"):
    """A pod whose end state differs between the runs: its node (None: pending) and message under each."""

    pod: str
    a: str | None = None
    b: str | None = None
    a_message: str = ""
    b_message: str = ""


class Delta(msgspec.Struct, rename="camel", frozen=True):
    """One aggregate number under A and under B (``b - a`` is the difference)."""

    metric: str
    a: float
    b: float


class Comparison(msgspec.Struct, rename="camel", kw_only=True):
    """How run B differs from run A on identical input: pod by pod (end states) and in aggregate (the last step)."""

    pods: list[PodDifference] = msgspec.field(default_factory=list)
    same: int = 0  # pods that ended the same under both
    aggregate: list[Delta] = msgspec.field(default_factory=list)


class Simulation(msgspec.Struct, rename="camel", kw_only=True):
    """A scenario played on a cluster, under one configuration or two (``--compare``)."""

    api_version: str = API_VERSION
    kind: str = KIND
    kubernetes_version: str
    cluster: str  # the cluster file
    scenario: str  # the scenario file
    scenario_name: str = ""
    seed: int
    records: bool = True
    runs: list[Run] = msgspec.field(default_factory=list)
    comparison: Comparison | None = None
