"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable on the node; binds them at PreBind.

kube-scheduler v1.35.4's volumebinding (volume_binding.go, binder.go): PreFilter sorts the pod's claims into
bound ones and unbound WaitForFirstConsumer ones (an unbound Immediate claim: `pod has unbound immediate
PersistentVolumeClaims`); Filter checks, over every candidate node at once, the bound PVs' node affinity
and finds, per node, the smallest available matching PV for each unbound claim (claims by size) or else
a class that can provision there; Reserve assumes the PV's claimRef (or the claim's selected-node);
PreBind writes them (`Volumes.update_pv` / `update_pvc`) and waits, polling each second up to
``bindTimeoutSeconds``, until the PV controller completed the binding. Score is kube-scheduler's with
StorageCapacityScoring off (alpha): PreScore skips.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import ClassVar

import msgspec
import numpy as np

from kubesched.api.node_fields import NodeFields
from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.core.nodetable import BoolColumn, IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.errors import NOT_IMPLEMENTED, PluginError
from kubesched.framework.events import NODE_CHANGE, ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from kubesched.framework.interfaces import (
    CycleState,
    FilterPlugin,
    Handle,
    NodeBatch,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignFragments,
    SignPlugin,
)
from kubesched.framework.status import SKIP, SUCCESS, Status, Verdicts
from kubesched.framework.volumes import Volumes
from kubesched.plugins.helpers import volumes as vh

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
_KEY = "VolumeBinding"
_SKIPPED = PreFilterResult(SKIP)
_ADD_UPDATE = ActionType.ADD | ActionType.UPDATE


class VolumeBindingArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    bind_timeout_seconds: int = 600
    shape: list[dict[str, int]] | None = None


@dataclass
class _Decision:
    """One Filter call's choices over its rows, for Reserve: the PV each matched claim takes per row."""

    names: list[str]
    matched: list[tuple[PersistentVolumeClaim, list[PersistentVolume], np.ndarray]]  # claim, PVs, index per row
    provisioned: list[tuple[PersistentVolumeClaim, BoolColumn]]  # claim, rows where it is provisioned


@dataclass
class _State:
    bound: list[PersistentVolumeClaim]
    delayed: list[PersistentVolumeClaim]  # unbound WaitForFirstConsumer claims
    decisions: list[_Decision] = field(default_factory=list)
    all_bound: bool = True
    bindings: list[tuple[PersistentVolume, PersistentVolumeClaim]] = field(default_factory=list)
    provisions: list[PersistentVolumeClaim] = field(default_factory=list)


class VolumeBinding(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin, SignPlugin
):
    name: ClassVar[str] = "VolumeBinding"
    Args: ClassVar[type | None] = VolumeBindingArgs
    node_fields = NodeFields(labels=None)
    default_weight: ClassVar[int] = 1

    def __init__(self, args: VolumeBindingArgs | None = None, handle: Handle | None = None) -> None:
        args = args or VolumeBindingArgs()
        super().__init__(args, handle)
        if args.bind_timeout_seconds < 0:
            raise ValueError(
                f"bindTimeoutSeconds: Invalid value: {args.bind_timeout_seconds}: invalid BindTimeoutSeconds,"
                " should not be a negative value"
            )
        if args.shape is not None:
            # kube-scheduler 1.35 refuses it (the gate is off; config.check says so in its words); 1.37 scores
            # by it (StorageCapacityScoring on), which kubesched does not implement: refused, never ignored.
            raise ValueError(
                f"shape: {NOT_IMPLEMENTED} StorageCapacityScoring (scoring nodes by their free storage"
                " capacity): remove `shape`"
            )
        self.bind_timeout = float(args.bind_timeout_seconds)
        self.poll_interval = 1.0  # kube-scheduler polls the binding's progress each second

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.STORAGE_CLASS, _ADD_UPDATE)),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, _ADD_UPDATE)),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, _ADD_UPDATE)),
            ClusterEventWithHint(NODE_CHANGE),
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, _ADD_UPDATE)),
        ]

    def sign(self, pod: PodInfo) -> SignFragments | None:
        return () if not vh.has_volumes(pod.pod) else None  # claims depend on the cluster: never batched

    # ---- PreFilter ---------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> PreFilterResult:
        if not pod.pod.spec.volumes:
            return _SKIPPED
        claims = list(vh.claim_volumes(pod.pod))
        if not claims:
            return _SKIPPED
        volumes = self.handle.volumes
        if volumes is None or not volumes.synced:
            return PreFilterResult(vh.refusal(self.name, volumes))
        found: list[PersistentVolumeClaim] = []
        for _, name, ephemeral in claims:  # podHasPVCs
            pvc = volumes.pvc(pod.namespace, name)
            if pvc is None:
                message = (
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                    if ephemeral
                    else vh.not_found(name)
                )
                return PreFilterResult(Status.unresolvable(message))
            if pvc.status.phase == "Lost":
                lost = f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{pvc.spec.volume_name}"'
                return PreFilterResult(Status.unresolvable(lost))
            if pvc.metadata.deletion_timestamp is not None:
                return PreFilterResult(Status.unresolvable(f'persistentvolumeclaim "{name}" is being deleted'))
            if ephemeral and (why := vh.volume_is_for_pod(pod.pod, pvc)) is not None:
                return PreFilterResult(Status.unresolvable(why))
            found.append(pvc)
        bound, delayed = [], []
        for pvc in found:  # GetPodVolumeClaims
            if vh.is_fully_bound(pvc):
                bound.append(pvc)
                continue
            try:
                delay = vh.is_delay_binding(pvc, volumes)
            except ValueError as err:
                return PreFilterResult(Status.error(str(err)))
            if delay and not pvc.spec.volume_name:
                delayed.append(pvc)
            else:
                return PreFilterResult(Status.unresolvable(ERR_UNBOUND_IMMEDIATE))
        state[_KEY] = _State(bound, delayed)
        return PreFilterResult()

    # ---- Filter ------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Verdicts:
        st: _State | None = state.get(_KEY)
        volumes = self.handle.volumes
        if st is None or volumes is None:
            return Verdicts.all_pass(len(nodes))
        table, rows = nodes.table, nodes.rows
        n = len(rows)
        node_conflict = np.zeros(n, dtype=np.bool_)
        pv_missing = np.zeros(n, dtype=np.bool_)
        decided = np.zeros(n, dtype=np.bool_)
        for pvc in st.bound:  # checkBoundClaims: the first failing claim decides
            pv = volumes.pv(pvc.spec.volume_name)
            if pv is None:
                pv_missing |= ~decided
                break
            bad = ~vh.affinity_mask(pv, table, rows) & ~decided
            node_conflict |= bad
            decided |= bad
        bind_conflict = np.zeros(n, dtype=np.bool_)
        if st.delayed:
            try:
                decision, bind_conflict = self._unbound(st.delayed, volumes, table, rows)
            except _FilterError as err:
                return Verdicts.from_mask(np.ones(n, dtype=np.bool_), Status.error(str(err)))
            st.decisions.append(decision)
        if not (node_conflict.any() or bind_conflict.any() or pv_missing.any()):
            return Verdicts.all_pass(n)
        return _verdicts(node_conflict, bind_conflict, pv_missing)

    def _unbound(
        self, delayed: list[PersistentVolumeClaim], volumes: Volumes, table: NodeTable, rows: Rows
    ) -> tuple[_Decision, BoolColumn]:
        """FindPodVolumes' unbound part over ``rows``: where the claims cannot be bound nor provisioned."""
        n = len(rows)
        names = table.names
        row_names = [names[r] for r in rows.tolist()]
        conflict = np.zeros(n, dtype=np.bool_)
        to_match: list[PersistentVolumeClaim] = []
        provision: list[tuple[PersistentVolumeClaim, BoolColumn]] = []
        for pvc in delayed:
            selected = (pvc.metadata.annotations or {}).get(vh.SELECTED_NODE)
            if selected is None:
                to_match.append(pvc)
            else:
                on_it = np.fromiter((name == selected for name in row_names), dtype=np.bool_, count=n)
                conflict |= ~on_it
                provision.append((pvc, on_it))
        matched: list[tuple[PersistentVolumeClaim, list[PersistentVolume], np.ndarray]] = []
        taken: dict[str, BoolColumn] = {}  # per PV: the rows where an earlier claim chose it
        masks: dict[str, BoolColumn] = {}
        for pvc in sorted(to_match, key=vh.claim_size):  # findMatchingVolumes: smaller claims first
            candidates = volumes.pvs_of_class(vh.claim_class(pvc))
            prebound = [pv for pv in candidates if vh.prebound_candidate(pvc, pv)]
            if prebound:
                pvs = prebound[:1]  # FindMatchingVolume returns the PV bound to the claim, or nothing
            else:
                pvs = [pv for pv in candidates if vh.node_independent_match(pvc, pv)]
                pvs.sort(key=vh.volume_size)  # stable: the first of equal sizes, as the smallest found
            chosen = np.full(n, -1, dtype=np.int64)
            for i, pv in enumerate(pvs):
                name = pv.metadata.name
                mask = masks.get(name)
                if mask is None:
                    mask = masks[name] = vh.affinity_mask(pv, table, rows)
                free = mask & (chosen < 0)
                if name in taken:
                    free &= ~taken[name]
                chosen[free] = i
            for i, pv in enumerate(pvs):
                here = chosen == i
                if here.any():
                    taken[pv.metadata.name] = taken.get(pv.metadata.name, np.zeros(n, dtype=np.bool_)) | here
            matched.append((pvc, pvs, chosen))
            provision.append((pvc, chosen < 0))
        # checkVolumeProvisions: each claim left must have a class whose provisioner can place it here.
        failed = conflict.copy()
        for pvc, needed in provision:
            need = needed & ~failed
            if not need.any():
                continue
            class_name = vh.claim_class(pvc)
            key = f"{pvc.metadata.namespace}/{pvc.metadata.name}"
            if not class_name:
                raise _FilterError(f'no class for claim "{key}"')
            sc = volumes.storage_class(class_name)
            if sc is None:
                raise _FilterError(f'failed to find storage class "{class_name}"')
            if not sc.provisioner or sc.provisioner == vh.NOT_SUPPORTED_PROVISIONER:
                failed |= need
                continue
            failed |= need & ~vh.topology_mask(sc, table, rows)
        return _Decision(row_names, matched, provision), failed

    # ---- PreScore ----------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> Status:
        return SKIP  # kube-scheduler scores only with the alpha StorageCapacityScoring gate

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeBatch) -> IntColumn:
        return np.zeros(len(nodes), dtype=np.int64)  # not reached: PreScore skips

    # ---- Reserve -----------------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        st: _State | None = state.get(_KEY)
        volumes = self.handle.volumes
        if st is None or volumes is None:
            return SUCCESS
        st.all_bound = True
        if not st.delayed or self._all_bound(pod, volumes):
            return SUCCESS
        found = _decision_for(st, node_name)
        if found is None:
            return Status.error(f'no pod volume found for node "{node_name}"')
        decision, i = found
        bindings: list[tuple[PersistentVolume, PersistentVolumeClaim]] = []
        for pvc, pvs, chosen in decision.matched:
            k = int(chosen[i])
            if k < 0:
                continue
            pv = vh.bind_volume_to_claim(pvs[k], pvc)
            if pv is not pvs[k]:
                volumes.assume_pv(pv)
            bindings.append((pv, pvc))
        provisions = []
        for pvc, needed in decision.provisioned:
            if needed[i]:
                annotations = {**(pvc.metadata.annotations or {}), vh.SELECTED_NODE: node_name}
                claim = msgspec.structs.replace(
                    pvc, metadata=msgspec.structs.replace(pvc.metadata, annotations=annotations)
                )
                volumes.assume_pvc(claim)
                provisions.append(claim)
        st.bindings, st.provisions, st.all_bound = bindings, provisions, False
        return SUCCESS

    @staticmethod
    def _all_bound(pod: PodInfo, volumes: Volumes) -> bool:
        for _, name, _ in vh.claim_volumes(pod.pod):
            pvc = volumes.pvc(pod.namespace, name)
            if pvc is None or not vh.is_fully_bound(pvc):
                return False
        return True

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        st: _State | None = state.get(_KEY)
        volumes = self.handle.volumes
        if st is None or volumes is None:
            return
        for pv, _ in st.bindings:
            volumes.restore_pv(pv.metadata.name)
        for pvc in st.provisions:
            volumes.restore_pvc(pvc.metadata.namespace, pvc.metadata.name)

    # ---- PreBind -----------------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        st: _State | None = state.get(_KEY)
        return SKIP if st is None or st.all_bound else SUCCESS

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        st: _State | None = state.get(_KEY)
        volumes = self.handle.volumes
        if st is None or st.all_bound or volumes is None:
            return SUCCESS
        try:
            await self._write(st, volumes)
        except Exception as err:  # the API's refusal (a conflict, a lost connection): retried as a new cycle
            return Status.error(str(err))
        deadline = time.monotonic() + self.bind_timeout
        while True:
            try:
                if vh.check_bindings(st.bindings, st.provisions, volumes, node_name):
                    return SUCCESS
            except vh.BindingUndone as err:
                return Status.error(f"binding volumes: {err}")
            if volumes.completes_bindings:
                return SUCCESS  # in memory: no PV controller provisions; the selected node is written
            if time.monotonic() >= deadline:
                return Status.error("binding volumes: context deadline exceeded")
            await asyncio.sleep(min(self.poll_interval, max(deadline - time.monotonic(), 0.0)))

    @staticmethod
    async def _write(st: _State, volumes: Volumes) -> None:
        """bindAPIUpdate: the PVs' claimRefs, then the claims' selected node; what was not written is restored."""
        done = 0
        try:
            for i, (pv, pvc) in enumerate(st.bindings):
                st.bindings[i] = (await volumes.update_pv(pv), pvc)
                done += 1
            for j, claim in enumerate(st.provisions):
                st.provisions[j] = await volumes.update_pvc(claim)
                done += 1
        except BaseException:
            for pv, _ in st.bindings[done:]:
                volumes.restore_pv(pv.metadata.name)
            for claim in st.provisions[max(done - len(st.bindings), 0) :]:
                volumes.restore_pvc(claim.metadata.namespace, claim.metadata.name)
            raise


class _FilterError(PluginError):
    """A claim that cannot be judged (kube-scheduler's Filter error)."""


def _verdicts(node_conflict: BoolColumn, bind_conflict: BoolColumn, pv_missing: BoolColumn) -> Verdicts:
    """One status per combination of reasons, in kube-scheduler's order."""
    codes = np.zeros(len(node_conflict), dtype=np.int32)
    statuses: list[Status] = []
    combos = node_conflict.astype(np.int32) | bind_conflict.astype(np.int32) << 1 | pv_missing.astype(np.int32) << 2
    for combo in np.unique(combos[combos > 0]).tolist():
        reasons = [
            r
            for bit, r in ((1, ERR_REASON_NODE_CONFLICT), (2, ERR_REASON_BIND_CONFLICT), (4, ERR_REASON_PV_NOT_EXIST))
            if combo & bit
        ]
        statuses.append(Status.unresolvable(*reasons))
        codes[combos == combo] = len(statuses)
    return Verdicts(codes, statuses)


def _decision_for(st: _State, node: str) -> tuple[_Decision, int] | None:
    for decision in reversed(st.decisions):
        if node in decision.names:
            return decision, decision.names.index(node)
    return None
