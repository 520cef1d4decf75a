"""DynamicResources (PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve, PreBind): dynamic resource
allocation with structured parameters, as kube-scheduler v1.35.4's plugin, with its messages.

A pod's ResourceClaims must exist (by name, or as the resourceclaim controller made them from a template
and named them in pod.status.resourceClaimStatuses); PreEnqueue holds the pod back until then. Allocated
claims restrict the nodes to their allocation's node selector; the others are allocated per node by the
structured allocator (`helpers/dra_allocator.py`, its pools and search in `dra_pools.py` and `dra_search.py`,
CEL selectors in `helpers/dra_cel.py`). Reserve keeps the chosen allocation in flight (its devices count as
taken for the next pods); PreBind writes it with the pod in status.reservedFor through the claim's status
subresource. Pods without claims skip it all (PreFilter Skip).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.api.resource_v1 import AllocationResult, ResourceClaim
from kubesched.core.nodeaffinity import node_matches_selector
from kubesched.core.nodetable import IntColumn, NodeTable
from kubesched.core.podinfo import PodInfo
from kubesched.errors import ClusterError
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.events import CLAIM_CHANGE, CLASS_CHANGE, NODE_CHANGE, SLICE_CHANGE, ClusterEventWithHint
from kubesched.framework.interfaces import (
    CycleState,
    FilterPlugin,
    Handle,
    NodeBatch,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ResourceAPI,
    ScorePlugin,
    SignFragments,
    SignPlugin,
)
from kubesched.framework.status import SKIP, SUCCESS, Code, Status, Verdicts
from kubesched.plugins.helpers.dra_allocator import Allocator
from kubesched.plugins.helpers.dra_cel import SelectorCache
from kubesched.plugins.helpers.dra_pools import AllocationError, FailedOnNode, allocated_devices, claim_key

_KEY = "DynamicResources"
# Set by every PreFilter call, as upstream writes its (maybe empty) state first: PostFilter tells "PreFilter never
# ran" (an earlier PreFilter rejected the pod: upstream's state read fails with "not found") from "no claims".
_RAN = "DynamicResources/preFilter"
_FIRST_AVAILABLE_MAX = 8


class DynamicResourcesArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """kube-scheduler's DynamicResourcesArgs; the timeouts are accepted (allocation here is not interrupted)."""

    filter_timeout: str | None = None
    binding_timeout: str | None = None


class ClaimError(ClusterError):
    """A claim of the pod is not usable yet; the message is upstream's."""


@dataclass
class _State:
    claims: list[ResourceClaim]
    to_allocate: list[int]  # indices into claims
    allocator: Allocator | None = None
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    allocations: dict[int, AllocationResult] = field(default_factory=dict)  # set by Reserve


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    SignPlugin,
):
    name: ClassVar[str] = "DynamicResources"
    Args = DynamicResourcesArgs
    node_fields = NodeFields(labels=None)  # slices and allocations select nodes by any label

    def __init__(self, args: DynamicResourcesArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or DynamicResourcesArgs(), handle)
        self.cel = SelectorCache()
        # Claims whose allocation is chosen (Reserve) but not yet written (PreBind): by UID.
        self.pending: dict[str, ResourceClaim] = {}

    @property
    def resources(self) -> ResourceAPI | None:
        return self.handle.resources

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(NODE_CHANGE),
            ClusterEventWithHint(CLAIM_CHANGE),
            ClusterEventWithHint(CLASS_CHANGE),
            ClusterEventWithHint(SLICE_CHANGE),
        ]

    def sign(self, pod: PodInfo) -> SignFragments | None:
        return None if pod.pod.spec.resource_claims else ()  # "pods with dra resource claims are not signable"

    # ---- claims -------------------------------------------------------------------------------------------

    def pod_claims(self, pod: PodInfo) -> list[ResourceClaim]:
        """foreachPodResourceClaim: the pod's claims in spec order; raises ClaimError (upstream's message)."""
        spec = pod.pod
        out: list[ResourceClaim] = []
        api = self.resources
        for ref in spec.spec.resource_claims or []:
            must_check_owner = False
            if ref.resource_claim_name is not None:
                name: str | None = ref.resource_claim_name
            elif ref.resource_claim_template_name is not None:
                statuses = {s.name: s for s in spec.status.resource_claim_statuses or []}
                if ref.name not in statuses:
                    raise ClaimError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
                name, must_check_owner = statuses[ref.name].resource_claim_name, True
            else:
                raise ClaimError(
                    f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{ref.name}":'
                    " none of the supported fields are set"
                )
            if name is None:
                continue  # intentionally not created
            if api is None or not api.served:
                raise ClaimError(
                    f'could not find ResourceClaim "{pod.namespace}/{name}"'
                    " (the cluster does not serve resource.k8s.io/v1)"
                )
            claim = api.claim(pod.namespace, name)
            if claim is None:
                raise ClaimError(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            if claim.metadata.deletion_timestamp:
                raise ClaimError(f'resourceclaim "{name}" is being deleted')
            if must_check_owner and not any(
                o.controller and o.uid == pod.uid for o in claim.metadata.owner_references or []
            ):
                raise ClaimError(
                    f"ResourceClaim {claim.metadata.namespace}/{name} was not created for pod"
                    f" {pod.namespace}/{pod.name} (pod is not owner)"
                )
            out.append(claim)
        return out

    # ---- PreEnqueue ------------------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.pod.spec.resource_claims:
            return SUCCESS
        try:
            self.pod_claims(pod)
        except ClaimError as err:
            return Status.unresolvable(str(err))
        return SUCCESS

    # ---- PreFilter --------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        state[_RAN] = True
        if not pod.pod.spec.resource_claims:
            return PreFilterResult(SKIP)
        try:
            claims = self.pod_claims(pod)
        except ClaimError as err:
            return PreFilterResult(Status.unresolvable(str(err)))
        if not claims:
            return PreFilterResult(SKIP)
        api = self.resources
        assert api is not None  # pod_claims found claims
        to_allocate = []
        for i, claim in enumerate(claims):
            if claim.status.allocation is not None:
                continue
            if claim.metadata.uid in self.pending:
                return PreFilterResult(
                    Status.unresolvable(f"resource claim {claim_key(claim)} is in the process of being allocated")
                )
            to_allocate.append(i)
            for req in claim.spec.devices.requests or []:
                if req.exactly is not None:
                    names = [(req.name, req.exactly.device_class_name)]
                elif req.first_available:
                    names = [(f"{req.name}/{s.name}", s.device_class_name) for s in req.first_available]
                else:
                    return PreFilterResult(
                        Status.unresolvable(
                            f"resource claim {claim_key(claim)}, request {req.name}: unknown request type"
                        )
                    )
                for request, class_name in names:
                    if not class_name:
                        return PreFilterResult(Status.error(f"request {request}: unsupported request type"))
                    if api.device_class(class_name) is None:
                        return PreFilterResult(
                            Status.unresolvable(f"request {request}: device class {class_name} does not exist")
                        )
        s = _State(claims, to_allocate)
        if to_allocate:
            claims_now = dict(api.claims())
            for c in self.pending.values():
                claims_now[claim_key(c)] = c
            s.allocator = Allocator(api.device_class, api.slices(), allocated_devices(claims_now), self.cel)
        state[_KEY] = s
        return PreFilterResult(SUCCESS)

    # ---- Filter -----------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        s: _State | None = state.get(_KEY)
        if s is None:
            return Verdicts.all_pass(len(nodes))
        table = nodes.table
        codes = np.zeros(len(nodes), dtype=np.int32)
        statuses: list[Status] = []
        seen: dict[Status, int] = {}
        for i, row in enumerate(nodes.rows.tolist()):
            status = self._filter_node(s, table, row)
            if status.code != Code.SUCCESS:
                code = seen.get(status)
                if code is None:
                    statuses.append(status)
                    code = seen[status] = len(statuses)
                codes[i] = code
        return Verdicts(codes, statuses)

    def _filter_node(self, s: _State, table: NodeTable, row: int) -> Status:
        node = table.node(row)
        unavailable = [
            i
            for i, c in enumerate(s.claims)
            if c.status.allocation is not None
            and c.status.allocation.node_selector is not None
            and not node_matches_selector(node, c.status.allocation.node_selector)
        ]
        results: list[AllocationResult] | None = None
        if s.allocator is not None:
            todo = [s.claims[i] for i in s.to_allocate]
            try:
                results = s.allocator.allocate(node, todo)
            except FailedOnNode as err:
                return Status.unresolvable(str(err))
            except AllocationError as err:
                return Status.error(str(err))
            if results is None or len(results) != len(todo):
                return Status.unresolvable("cannot allocate all claims")
        if unavailable:
            s.unavailable.update(unavailable)
            return Status.unresolvable("resourceclaim not available on the node")
        if results is not None:
            s.node_allocations[node.metadata.name] = results
        return SUCCESS

    # ---- PostFilter -------------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> tuple[str | None, Status]:
        s: _State | None = state.get(_KEY)
        if s is None:
            if _RAN not in state:  # kube-scheduler: its state read fails; the error ends PostFilter
                return None, Status.error("not found")
            if self.handle.release.dra_post_filter_names_no_claims:
                return None, Status.unschedulable("no new claims to deallocate")
            return None, Status.unschedulable()  # v1.37: rejected, with no reason of its own
        # Deallocating an allocated claim that keeps the pod off every node is not done by kubesched:
        # the pod waits (see docs/scheduler.md).
        if self.handle.release.dra_post_filter_names_no_claims:
            return None, Status.unschedulable("still not schedulable")
        return None, Status.unschedulable()  # v1.37: nothing deallocated, no reason

    # ---- Score ------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        """Skip when every node would score 0 (no claim to allocate with a firstAvailable list): upstream
        scores zeros there; the totals are the same, without the call."""
        s: _State | None = state.get(_KEY)
        if s is None or not any(
            r.first_available for i in s.to_allocate for r in s.claims[i].spec.devices.requests or []
        ):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        s: _State | None = state.get(_KEY)
        out = np.zeros(len(nodes), dtype=np.int64)
        if s is None or not s.node_allocations:
            return out
        names = nodes.table.names
        for i, row in enumerate(nodes.rows.tolist()):
            results = s.node_allocations.get(names[row])
            if results is None:
                continue
            score = 0
            for k, idx in enumerate(s.to_allocate):
                chosen = {r.request for r in results[k].devices.results or [] if "/" in r.request}
                for req in s.claims[idx].spec.devices.requests or []:
                    for j, sub in enumerate(req.first_available or []):
                        if f"{req.name}/{sub.name}" in chosen:
                            score += _FIRST_AVAILABLE_MAX - j
            out[i] = score
        return out

    def normalize(self, state: CycleState, pod: PodInfo, nodes: NodeBatch, scores: IntColumn) -> IntColumn:
        top = int(scores.max()) if len(scores) else 0
        if top == 0:
            return scores
        normalized: IntColumn = scores * 100 // top
        return normalized

    # ---- Reserve / Unreserve ----------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s: _State | None = state.get(_KEY)
        if s is None or not s.to_allocate:
            return SUCCESS
        results = s.node_allocations.get(node_name)
        if results is None:
            return Status.error("claim allocation not found for node")
        if len(results) != len(s.to_allocate):
            return Status.error(
                f"internal error, have {len(results)} allocations, {len(s.to_allocate)} claims to allocate,"
                f" want {len(s.to_allocate)} claims"
            )
        for idx, result in zip(s.to_allocate, results, strict=True):
            claim = s.claims[idx]
            s.allocations[idx] = result
            status = msgspec.structs.replace(claim.status, allocation=result)
            self.pending[claim.metadata.uid] = msgspec.structs.replace(claim, status=status)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: _State | None = state.get(_KEY)
        if s is None:
            return
        for claim in s.claims:
            self.pending.pop(claim.metadata.uid, None)

    # ---- PreBind ----------------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS if _KEY in state else SKIP  # only pods with claims

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s: _State | None = state.get(_KEY)
        if s is None:
            return SUCCESS
        api = self.resources
        if api is None:
            return Status.error("no cluster to write ResourceClaims to")
        try:
            for i, claim in enumerate(s.claims):
                if any(r.uid == pod.uid for r in claim.status.reserved_for or []):
                    continue
                allocation = s.allocations.get(i)
                current = api.claim(claim.metadata.namespace, claim.metadata.name)
                if current is None or current.metadata.uid != claim.metadata.uid or current.metadata.deletion_timestamp:
                    return Status.error(f"claim {claim_key(claim)} got deleted in the meantime")
                if allocation is not None and current.status.allocation is not None:
                    return Status.error(f"claim {claim_key(claim)} got allocated elsewhere in the meantime")
                try:
                    s.claims[i] = await api.reserve(current, allocation, pod)
                except Exception as err:
                    what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                    return Status.error(f"{what} claim {claim_key(claim)}: {err}")
                finally:
                    self.pending.pop(claim.metadata.uid, None)
        finally:
            for claim in s.claims:
                self.pending.pop(claim.metadata.uid, None)
        return SUCCESS
