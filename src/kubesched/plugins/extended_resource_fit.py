"""ExtendedResourceFit (Filter): the free amount of one extended resource must cover the pod's need.

Made for extenders that manage a resource kube-scheduler ignores (`ignoredByScheduler`): the need is
the sum over the pod's containers of the request, or of the limit where a container sets no request;
free is allocatable minus what the pods known on the node request (0 when no pods are tracked).
"""

from __future__ import annotations

import msgspec

from kubesched.api.node_fields import NodeFields
from kubesched.core.podinfo import PodInfo
from kubesched.core.quantity import MAX_AMOUNT, QuantityError, resource_value
from kubesched.framework.interfaces import CycleState, FilterPlugin, Handle, NodeBatch, SignFragments, SignPlugin
from kubesched.framework.status import Status, Verdicts


class ExtendedResourceFitArgs(msgspec.Struct, forbid_unknown_fields=True):
    resource: str = "example.com/custom-resource"


def resource_need(pod: PodInfo, resource: str) -> int:
    """Sum over containers of request, else limit (cached on the pod)."""
    key = f"need:{resource}"
    cached = pod.cache.get(key)
    if isinstance(cached, int):
        return cached
    need = 0
    for c in pod.pod.spec.containers or ():
        res = c.resources
        if res is None:
            continue
        q = (res.requests or {}).get(resource)
        if q is None:
            q = (res.limits or {}).get(resource)
        if q is not None:
            need += resource_value(resource, q)  # an invalid quantity raises QuantityError: the caller reports it
    need = min(need, MAX_AMOUNT)  # as the table counts it
    pod.cache[key] = need
    return need


class ExtendedResourceFit(FilterPlugin, SignPlugin):
    name = "ExtendedResourceFit"
    Args = ExtendedResourceFitArgs

    def __init__(self, args: ExtendedResourceFitArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or ExtendedResourceFitArgs(), handle)
        self.node_fields = NodeFields(resources=frozenset({self.args.resource}))
        if "/" not in self.args.resource:
            raise ValueError(f"resource: {self.args.resource!r} is not an extended resource name (domain/name)")
        self._status = Status.unschedulable(f"Insufficient {self.args.resource}")

    def sign(self, pod: PodInfo) -> SignFragments | None:
        try:
            return ((self.args.resource, resource_need(pod, self.args.resource)),)
        except QuantityError:
            return None  # Filter reports the bad quantity

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        need = resource_need(pod, self.args.resource)
        if need == 0:
            return Verdicts.all_pass(len(nodes))
        return Verdicts.from_mask(nodes.table.free(self.args.resource)[nodes.rows] < need, self._status)
