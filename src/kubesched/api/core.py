"""Partial core/v1 objects: only the fields kubesched reads (unknown keys are skipped while decoding)."""

from __future__ import annotations

import msgspec


class _K(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Base for Kubernetes objects: camelCase keys, absent values left out when encoding.

    ``gc=False``: decoded objects are trees (never part of a reference cycle), so the cyclic garbage
    collector need not track them; with tens of thousands of pods and nodes held, its passes over
    them were a tenth of the scheduler's time.
    """


class LabelSelectorRequirement(_K):
    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class LabelSelector(_K):
    """metav1.LabelSelector: None (absent) selects nothing, an empty one everything."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class OwnerReference(_K):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(_K):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    deletion_timestamp: str | None = None
    generation: int | None = None
    owner_references: list[OwnerReference] | None = None


class ResourceRequirements(_K):
    requests: dict[str, str | int | float] | None = None
    limits: dict[str, str | int | float] | None = None


class ContainerPort(_K):
    container_port: int = 0
    host_port: int = 0
    host_ip: str = msgspec.field(default="", name="hostIP")  # "hostIP" in the API, not camel "hostIp"
    protocol: str = ""


class ContainerRestartRule(_K):
    action: str = ""


class VolumeMount(_K):
    """A container's volume mount: only what NodeDeclaredFeatures reads."""

    bind_mount_options: list[str] | None = None


class Container(_K):
    """A container (also an ephemeral one, for the fields read here)."""

    name: str = ""
    image: str = ""
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] | None = None
    volume_mounts: list[VolumeMount] | None = None


class Toleration(_K):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class Taint(_K):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSelectorRequirement(_K):
    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class NodeSelectorTerm(_K):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(_K):
    node_selector_terms: list[NodeSelectorTerm] | None = None


class PreferredSchedulingTerm(_K):
    weight: int = 0
    preference: NodeSelectorTerm | None = None


class NodeAffinity(_K):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(_K):
    label_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None


class WeightedPodAffinityTerm(_K):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_K):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None


class PodAntiAffinity(_K):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None


class Affinity(_K):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class TopologySpreadConstraint(_K):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


class SchedulingGate(_K):
    name: str = ""


class PersistentVolumeClaimVolumeSource(_K):
    claim_name: str = ""
    read_only: bool = False


class EphemeralVolumeSource(_K):
    """A generic ephemeral volume: its claim, ``<pod>-<volume>``, is made by the ephemeral volume controller."""

    volume_claim_template: dict[str, object] | None = None


class GCEPersistentDiskVolumeSource(_K):
    pd_name: str = ""
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(_K):
    volume_id: str = msgspec.field(default="", name="volumeID")
    read_only: bool = False


class AzureDiskVolumeSource(_K):
    disk_name: str = ""
    disk_uri: str = msgspec.field(default="", name="diskURI")


class CinderVolumeSource(_K):
    volume_id: str = msgspec.field(default="", name="volumeID")


class ISCSIVolumeSource(_K):
    iqn: str = ""
    read_only: bool = False


class RBDVolumeSource(_K):
    monitors: list[str] | None = None
    pool: str = ""
    image: str = ""
    read_only: bool = False


class ImageVolumeSource(_K):
    """An OCI image mounted as a volume (ImageLocality counts it from v1.37)."""

    reference: str = ""


class Volume(_K):
    """A pod's volume, with the sources the volume plugins read (others are skipped while decoding)."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    image: ImageVolumeSource | None = None


class PodResourceClaim(_K):
    """spec.resourceClaims[]: a claim by name, or one the resourceclaim controller makes from a template."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(_K):
    name: str = ""
    resource_claim_name: str | None = None


class PodSpec(_K):
    node_name: str = ""
    scheduler_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    ephemeral_containers: list[Container] | None = None
    host_network: bool = False
    host_users: bool | None = None
    overhead: dict[str, str | int | float] | None = None
    resources: ResourceRequirements | None = None
    scheduling_gates: list[SchedulingGate] | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    volumes: list[Volume] | None = None
    resource_claims: list[PodResourceClaim] | None = None


class PodCondition(_K):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


class ContainerStatus(_K):
    """What the kubelet reports of a container's resources (in-place resize): the requests actuated
    (``resources``) and those admitted (``allocatedResources``)."""

    name: str = ""
    resources: ResourceRequirements | None = None
    allocated_resources: dict[str, str | int | float] | None = None


class PodStatus(_K):
    phase: str = ""
    nominated_node_name: str = ""
    start_time: str | None = None
    conditions: list[PodCondition] | None = None
    container_statuses: list[ContainerStatus] | None = None
    init_container_statuses: list[ContainerStatus] | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] | None = None


class Pod(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class ContainerImage(_K):
    names: list[str] | None = None
    size_bytes: int = 0


class NodeSpec(_K):
    unschedulable: bool = False
    taints: list[Taint] | None = None


class NodeStatus(_K):
    allocatable: dict[str, str | int | float] | None = None
    capacity: dict[str, str | int | float] | None = None
    images: list[ContainerImage] | None = None
    declared_features: list[str] | None = None  # the features the kubelet declares (NodeDeclaredFeatures)


class Node(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class NodeList(_K):
    items: list[Node] | None = None


class PodList(_K):
    items: list[Pod] | None = None


# What PodTopologySpread's default constraints read: the selectors of the objects that select a pod.


class ServiceSpec(_K):
    selector: dict[str, str] | None = None


class Service(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


class ReplicationControllerSpec(_K):
    selector: dict[str, str] | None = None


class ReplicationController(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


class WorkloadSpec(_K):
    selector: LabelSelector | None = None


class Workload(_K):
    """A ReplicaSet or a StatefulSet (apps/v1): only its selector."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


class Namespace(_K):
    """A namespace: only its labels matter (namespaceSelector terms)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
