"""Partial resource.k8s.io/v1 objects (dynamic resource allocation): what the DynamicResources plugin reads
and writes. Opaque driver configuration is carried through untouched (``Any``)."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.core import NodeSelector, OwnerReference

GROUP_VERSION = "resource.k8s.io/v1"
FINALIZER = "resource.kubernetes.io/delete-protection"
ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


class _K(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    pass


class Meta(_K):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int | None = None
    deletion_timestamp: str | None = None
    finalizers: list[str] | None = None
    owner_references: list[OwnerReference] | None = None


class CELDeviceSelector(_K):
    expression: str = ""


class DeviceSelector(_K):
    cel: CELDeviceSelector | None = None


class DeviceClassSpec(_K):
    selectors: list[DeviceSelector] | None = None
    config: list[Any] | None = None  # DeviceClassConfiguration: opaque, copied into allocations
    extended_resource_name: str | None = None


class DeviceClass(_K):
    metadata: Meta = msgspec.field(default_factory=Meta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


class DeviceAttribute(_K):
    # Renamed: a field called "int" would shadow the type in the annotations that follow.
    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string_value: str | None = msgspec.field(default=None, name="string")
    version_value: str | None = msgspec.field(default=None, name="version")


class DeviceCapacity(_K):
    value: str | int | float = "0"


class Device(_K):
    name: str = ""
    attributes: dict[str, DeviceAttribute] | None = None
    capacity: dict[str, DeviceCapacity] | None = None
    consumes_counters: list[Any] | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[Any] | None = None
    binding_conditions: list[str] | None = None
    allow_multiple_allocations: bool | None = None


class ResourcePool(_K):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(_K):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] | None = None
    shared_counters: list[Any] | None = None


class ResourceSlice(_K):
    metadata: Meta = msgspec.field(default_factory=Meta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


class ExactDeviceRequest(_K):
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str = ""  # defaulted by the API server: ExactCount
    count: int = 0
    admin_access: bool | None = None
    tolerations: list[Any] | None = None
    capacity: Any = None


class DeviceSubRequest(_K):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str = ""
    count: int = 0
    tolerations: list[Any] | None = None
    capacity: Any = None


class DeviceRequest(_K):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(_K):
    requests: list[str] | None = None
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(_K):
    requests: list[str] | None = None
    opaque: Any = None


class DeviceClaim(_K):
    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None
    config: list[DeviceClaimConfiguration] | None = None


class ResourceClaimSpec(_K):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(_K):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None


class DeviceAllocationConfiguration(_K):
    source: str = ""
    requests: list[str] | None = None
    opaque: Any = None


class DeviceAllocationResult(_K):
    results: list[DeviceRequestAllocationResult] | None = None
    config: list[DeviceAllocationConfiguration] | None = None


class AllocationResult(_K):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None


class ResourceClaimConsumerReference(_K):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class ResourceClaimStatus(_K):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] | None = None


class ResourceClaim(_K):
    metadata: Meta = msgspec.field(default_factory=Meta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplate(_K):
    metadata: Meta = msgspec.field(default_factory=Meta)
