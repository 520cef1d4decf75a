"""A pod compiled once for scheduling: its request vector and the constraints plugins read."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property

import msgspec

from kubesched.api.core import Container, ContainerStatus, Pod, Toleration
from kubesched.core.quantity import MAX_AMOUNT, clamp_amount, resource_value

# kube-scheduler's scoring defaults for containers that do not mention cpu or memory.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(frozen=True)
class HostPort:
    """A host port a container wants: (ip, protocol, port) with kube-scheduler's defaults applied."""

    ip: str
    protocol: str
    port: int


class PodSpecInfo:
    """What is derived from a pod's spec, labels and namespace: shared by pods equal in those (a
    ReplicaSet's), so each ReplicaSet is compiled once. Computed on first use (an extender request may
    need none of it); ``cache`` holds what plugins derive from the same, by keys of their own."""

    def __init__(self, pod: Pod) -> None:
        self.pod = pod  # the first pod of this spec: only its spec, labels and namespace are read
        self.tolerations: tuple[Toleration, ...] = tuple(pod.spec.tolerations or ())
        self.cache: dict[Hashable, object] = {}

    @cached_property
    def computed(self) -> tuple[dict[str, int], int, int]:
        return compute_requests(self.pod)

    @cached_property
    def requests_key(self) -> tuple[tuple[tuple[str, int], ...], int, int]:
        requests, cpu, memory = self.computed
        return tuple(sorted(requests.items())), cpu, memory

    @cached_property
    def host_ports(self) -> tuple[HostPort, ...]:
        return _host_ports(self.pod)

    @cached_property
    def containers(self) -> list[Container]:
        return list(self.pod.spec.init_containers or ()) + list(self.pod.spec.containers or ())

    @cached_property
    def images(self) -> tuple[str, ...]:
        return tuple(normalized_image(c.image) for c in self.containers if c.image)

    @cached_property
    def has_pod_affinity(self) -> bool:
        affinity = self.pod.spec.affinity
        return affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None)


class PodInfo:
    """What the scheduling plugins read of one pod: its identity here, the rest in its `PodSpecInfo`."""

    def __init__(self, pod: Pod, spec: PodSpecInfo | None = None) -> None:
        meta = pod.metadata
        self.pod = pod
        self.key = f"{meta.namespace}/{meta.name}"
        self.uid = meta.uid
        self.namespace = meta.namespace
        self.name = meta.name
        self.labels: dict[str, str] = meta.labels or {}
        self.priority: int = pod.spec.priority or 0
        self.shared = shared = spec if spec is not None else PodSpecInfo(pod)
        self.tolerations = shared.tolerations
        self.cache = shared.cache  # what plugins derive from the spec, labels and namespace

    @property
    def requests(self) -> dict[str, int]:
        """Requests per resource (cpu in millicores), as kube-scheduler computes them."""
        return self.shared.computed[0]

    @property
    def non_zero_cpu(self) -> int:
        return self.shared.computed[1]

    @property
    def non_zero_memory(self) -> int:
        return self.shared.computed[2]

    @property
    def requests_key(self) -> tuple[tuple[tuple[str, int], ...], int, int]:
        """The request vector as one hashable value: equal keys, equal resource verdicts and scores."""
        return self.shared.requests_key

    @property
    def host_ports(self) -> tuple[HostPort, ...]:
        return self.shared.host_ports

    @property
    def images(self) -> tuple[str, ...]:
        return self.shared.images

    @property
    def container_count(self) -> int:
        return len(self.shared.containers)

    @property
    def has_pod_affinity(self) -> bool:
        """The pod sets podAffinity or podAntiAffinity (kube-scheduler's PodsWithAffinity)."""
        return self.shared.has_pod_affinity

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


class PodCompiler:
    """Compiles pods, sharing one `PodSpecInfo` among pods of equal spec, labels and namespace.

    The key is the encoded spec: a cheap price next to compiling a spec again for each of a
    ReplicaSet's pods. Bounded: emptied when it holds ``limit`` specs.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._specs: dict[tuple[str, bytes, bytes, Hashable], PodSpecInfo] = {}

    def __call__(self, pod: Pod) -> PodInfo:
        meta = pod.metadata
        key = (meta.namespace, _encode(meta.labels), _encode(pod.spec), resize_key(pod))
        spec = self._specs.get(key)
        if spec is None:
            if len(self._specs) >= self._limit:
                self._specs.clear()
            spec = self._specs[key] = PodSpecInfo(pod)
        return PodInfo(pod, spec)


_encode = msgspec.json.Encoder().encode


def _amounts(resources: dict[str, str | int | float] | None) -> dict[str, int]:
    return {name: resource_value(name, q) for name, q in resources.items()} if resources else {}


def _container_requests(
    c: Container, status: ContainerStatus | None = None, infeasible: bool = False
) -> dict[str, int]:
    """A container's requests; with a status reporting its resources (in-place resize), the larger of
    spec, actuated and allocated per resource, or of the last two while the resize is infeasible
    (component-helpers' determineEffectiveRequests)."""
    spec = _amounts(c.resources.requests) if c.resources is not None else {}
    if status is None or status.resources is None:
        return spec
    effective = {} if infeasible else spec
    for reported in (_amounts(status.resources.requests), _amounts(status.allocated_resources)):
        for name, v in reported.items():  # present beats absent, even at 0 (it is then no longer defaulted)
            if name not in effective or v > effective[name]:
                effective[name] = v
    return effective


def _statuses(pod: Pod) -> tuple[dict[str, ContainerStatus], bool]:
    """Container statuses by name (containers and init containers), and whether a resize is infeasible."""
    st = pod.status
    if not st.container_statuses and not st.init_container_statuses:
        return {}, False
    by_name = {s.name: s for s in (st.init_container_statuses or ())}
    by_name.update((s.name, s) for s in (st.container_statuses or ()))
    infeasible = False
    for cond in st.conditions or ():
        if cond.type == "PodResizePending":
            infeasible = cond.reason == "Infeasible"
            break
    return by_name, infeasible


def resize_key(pod: Pod) -> Hashable:
    """What a pod's status adds to its requests (in-place resize), as a key: None when nothing."""
    status = pod.status
    if not status.container_statuses and not status.init_container_statuses:
        return None  # the common case (pending pods, our own assumed ones): no call, no encoding
    by_name, infeasible = _statuses(pod)
    reported = tuple(
        (name, _encode(s.resources.requests), _encode(s.allocated_resources))
        for name, s in sorted(by_name.items())
        if s.resources is not None
    )
    return (reported, infeasible) if reported else None


def _add(into: dict[str, int], extra: dict[str, int]) -> None:
    for name, v in extra.items():
        into[name] = into.get(name, 0) + v


def _max(into: dict[str, int], other: dict[str, int]) -> None:
    for name, v in other.items():
        if v > into.get(name, 0):
            into[name] = v


def _non_zero(req: dict[str, int]) -> tuple[int, int]:
    return req.get("cpu", DEFAULT_MILLI_CPU_REQUEST), req.get("memory", DEFAULT_MEMORY_REQUEST)


def _is_sidecar(c: Container) -> bool:
    return c.restart_policy == "Always"


def compute_requests(pod: Pod) -> tuple[dict[str, int], int, int]:
    """Pod requests as kube-scheduler computes them (sidecars, init max, pod-level, overhead), plus non-zero cpu/mem."""
    spec = pod.spec
    statuses, infeasible = _statuses(pod)
    total: dict[str, int] = {}
    nz_cpu = nz_mem = 0
    for c in spec.containers or ():
        req = _container_requests(c, statuses.get(c.name), infeasible)
        _add(total, req)
        cpu, mem = _non_zero(req)
        nz_cpu += cpu
        nz_mem += mem
    init_need: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    init_nz = (0, 0)
    sidecar_nz = (0, 0)
    for c in spec.init_containers or ():
        # Only sidecars are resized in place; a plain init container counts by its spec.
        req = _container_requests(c, statuses.get(c.name) if _is_sidecar(c) else None, infeasible)
        cpu, mem = _non_zero(req)
        if _is_sidecar(c):
            _add(total, req)
            _add(sidecars, req)
            nz_cpu += cpu
            nz_mem += mem
            sidecar_nz = (sidecar_nz[0] + cpu, sidecar_nz[1] + mem)
            _max(init_need, dict(sidecars))
            init_nz = (max(init_nz[0], sidecar_nz[0]), max(init_nz[1], sidecar_nz[1]))
        else:
            effective = dict(req)
            _add(effective, sidecars)
            _max(init_need, effective)
            init_nz = (max(init_nz[0], cpu + sidecar_nz[0]), max(init_nz[1], mem + sidecar_nz[1]))
    _max(total, init_need)
    nz_cpu, nz_mem = max(nz_cpu, init_nz[0]), max(nz_mem, init_nz[1])
    if spec.resources is not None and spec.resources.requests:
        for name, q in spec.resources.requests.items():
            if name in ("cpu", "memory") or name.startswith("hugepages-"):
                total[name] = resource_value(name, q)
        if "cpu" in spec.resources.requests:
            nz_cpu = total["cpu"]
        if "memory" in spec.resources.requests:
            nz_mem = total["memory"]
    for name, q in (spec.overhead or {}).items():
        v = resource_value(name, q)
        total[name] = total.get(name, 0) + v
        if name == "cpu":
            nz_cpu += v
        elif name == "memory":
            nz_mem += v
    # Sums of saturated amounts are capped again, so the table's int64 sums cannot overflow.
    if any(abs(v) > MAX_AMOUNT for v in total.values()) or max(abs(nz_cpu), abs(nz_mem)) > MAX_AMOUNT:
        total = {k: clamp_amount(v) for k, v in total.items()}
        nz_cpu, nz_mem = clamp_amount(nz_cpu), clamp_amount(nz_mem)
    return total, nz_cpu, nz_mem


def _host_ports(pod: Pod) -> tuple[HostPort, ...]:
    containers = list(pod.spec.containers or ()) + [c for c in pod.spec.init_containers or () if _is_sidecar(c)]
    out = []
    for c in containers:
        for p in c.ports or ():
            if p.host_port > 0:
                out.append(HostPort(p.host_ip or "0.0.0.0", p.protocol or "TCP", p.host_port))
    return tuple(out)


def normalized_image(image: str) -> str:
    """An image name with `:latest` appended when it has no tag, as ImageLocality compares them."""
    if ":" in image.rsplit("/", 1)[-1] or "@" in image:
        return image
    return image + ":latest"


def compile_pod(pod: Pod) -> PodInfo:
    """Compile a pod once; plugins read the result in every cycle."""
    return PodInfo(pod)
