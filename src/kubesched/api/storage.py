"""Partial storage objects the volume plugins read: core/v1 PersistentVolume and PersistentVolumeClaim,
storage.k8s.io/v1 StorageClass and CSINode (unknown keys are skipped while decoding)."""

from __future__ import annotations

import msgspec

from kubesched.api.core import (
    AWSElasticBlockStoreVolumeSource,
    AzureDiskVolumeSource,
    CinderVolumeSource,
    GCEPersistentDiskVolumeSource,
    LabelSelector,
    NodeSelector,
    NodeSelectorRequirement,
    ObjectMeta,
)


class _K(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """camelCase keys, absent values left out when encoding (as `api.core`)."""


class ObjectReference(_K):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


class VolumeNodeAffinity(_K):
    required: NodeSelector | None = None


class CSIPersistentVolumeSource(_K):
    driver: str = ""
    volume_handle: str = ""


class PersistentVolumeSpec(_K):
    capacity: dict[str, str | int | float] | None = None
    access_modes: list[str] | None = None
    claim_ref: ObjectReference | None = None
    storage_class_name: str = ""
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_attributes_class_name: str | None = None
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    cinder: CinderVolumeSource | None = None


class PersistentVolumeStatus(_K):
    phase: str = ""


class PersistentVolume(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class VolumeResourceRequirements(_K):
    requests: dict[str, str | int | float] | None = None
    limits: dict[str, str | int | float] | None = None


class PersistentVolumeClaimSpec(_K):
    access_modes: list[str] | None = None
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements | None = None
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(_K):
    phase: str = ""


class PersistentVolumeClaim(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


class TopologySelectorLabelRequirement(_K):
    key: str = ""
    values: list[str] | None = None


class TopologySelectorTerm(_K):
    match_label_expressions: list[TopologySelectorLabelRequirement] | None = None


class StorageClass(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] | None = None


class VolumeNodeResources(_K):
    count: int | None = None


class CSINodeDriver(_K):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(_K):
    drivers: list[CSINodeDriver] | None = None


class CSINode(_K):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


__all__ = [
    "CSINode",
    "CSINodeDriver",
    "NodeSelectorRequirement",
    "ObjectReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
]
