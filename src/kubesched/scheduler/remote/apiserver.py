"""The scheduler's side of the API server: binding, evicting, reporting (the ClusterWriter over a KubeClient).

* bind: POST pods/<name>/binding with the pod's UID as a precondition (DefaultBinder's Binding);
* failures: a strategic-merge patch of pods/<name>/status with PodScheduled=False (reason and message,
  plus nominatedNodeName when it changes), skipped when nothing changed, and a `FailedScheduling` event;
* success: a `Scheduled` event. Events are events.k8s.io/v1 with reportingController = the profile's
  schedulerName and reportingInstance = <schedulerName>-<hostname>_<uuid> (kube-scheduler: <schedulerName>-<hostname>);
* evict: DisruptionTarget=True (PreemptionByScheduler) on the victim, delete it (UID precondition), and a
  `Preempted` event on it.

Writes go through a token bucket (clientConnection qps/burst) and the KubeClient's pool (timeouts;
a lost answer is never resent blindly: a Binding whose answer was lost raises BindingUnknownError).
``gate`` (the leader elector's) fences writes: none is sent once the lease may be lost. Reports run as
tasks: the scheduling cycle never waits for them.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

import msgspec

from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.api.resource_v1 import FINALIZER, AllocationResult, ResourceClaim
from kubesched.cluster import readback
from kubesched.cluster.kubeclient import AnswerLost, APIError, KubeClient
from kubesched.cluster.objects import ClusterObjects
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import AlreadyAssignedError, BindingUnknownError, ClusterAPIError
from kubesched.scheduler.remote.events import EventRecorder, micro_time

log = logging.getLogger("kubesched.scheduler")
NOTE_LENGTH_LIMIT = 1024
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


def rfc3339(ts: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if ts is None else ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def truncate_note(note: str) -> str:
    """events' NoteLengthLimit: 1024 bytes, else the first 1020 and ' ...'."""
    raw = note.encode()
    if len(raw) <= NOTE_LENGTH_LIMIT:
        return note
    return raw[: NOTE_LENGTH_LIMIT - 4].decode(errors="ignore") + " ..."


class RateLimiter:
    """A token bucket: ``qps`` tokens per second, at most ``burst`` saved up (client-go's flowcontrol)."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(burst, 1)
        self._tokens = float(self.burst)
        self._last = time.monotonic()

    async def acquire(self) -> None:
        while True:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            if self._tokens >= 1:
                self._tokens -= 1
                return
            await asyncio.sleep((1 - self._tokens) / self.qps)


class APIServerWriter:
    """Binds, evicts and reports through the API server."""

    binds_inline: ClassVar[bool] = False  # `bind` awaits the API server

    def __init__(
        self,
        client: KubeClient,
        *,
        qps: float = 50.0,
        burst: int = 100,
        hostname: str | None = None,
        identity: str | None = None,
        gate: Callable[[], bool] | None = None,
        events: EventRecorder | None = None,
        objects: ClusterObjects | None = None,
    ) -> None:
        self.client = client
        self.objects = objects if objects is not None else ClusterObjects()  # PDBs and namespaces, fed by watches
        self.limiter = RateLimiter(qps, burst)
        self.gate = gate  # checked right before each write is sent
        self.hostname = hostname or socket.gethostname()
        # Events' reportingInstance: kube-scheduler writes <controller>-<hostname>; with the process's
        # identity (the Lease holder's, <hostname>_<uuid>) two schedulers on one host are told apart.
        self.identity = identity or self.hostname
        self._reported: dict[str, tuple[str, str, str | None]] = {}  # uid -> last (reason, message, nominated)
        self._tasks: set[asyncio.Task[None]] = set()
        self.events = events or EventRecorder(self._call)
        self._series: asyncio.Task[None] | None = None  # ends and refreshes event series

    async def _call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> bytes:
        await self.limiter.acquire()
        return await self.client.request(method, path, body, content_type=content_type, gate=self.gate)

    # ---- ClusterAPI -------------------------------------------------------------------------------------

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            await self._call("POST", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding", binding)
        except APIError as err:
            if err.assigned_node is not None:
                raise AlreadyAssignedError(f"binding rejected: {err.message}", err.assigned_node) from None
            raise ClusterAPIError(f"binding rejected: {err.message}") from None
        except AnswerLost as err:
            raise BindingUnknownError(f"binding {pod.key} to {node_name}: the answer was lost: {err}") from None
        except OSError as err:
            raise ClusterAPIError(f"binding {pod.key} failed: {type(err).__name__}: {err}") from None
        self._reported.pop(pod.uid, None)

    async def bound_node(self, pod: PodInfo) -> str | None:
        """Where the pod is bound now: its node, '' while pending, None when it is gone (or another pod of
        its name replaced it). Raises ClusterAPIError when the server cannot say."""
        try:
            return await readback.bound_node(self.client, pod.namespace, pod.name, pod.uid)
        except readback.ReadBackError as err:
            raise ClusterAPIError(str(err)) from None

    async def evict(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> None:
        scheduler = preemptor.pod.spec.scheduler_name or "default-scheduler"
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{scheduler}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": rfc3339(),
        }
        path = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}"
        try:
            await self._call("PATCH", path + "/status", {"status": {"conditions": [condition]}}, STRATEGIC)
            await self._call("DELETE", path, {"preconditions": {"uid": victim.uid}})
        except APIError as err:
            if err.status != 404:
                raise ClusterAPIError(f"preempting {victim.key}: {err.message}") from None
            return
        except OSError as err:
            raise ClusterAPIError(f"preempting {victim.key}: {type(err).__name__}: {err}") from None
        note = f"Preempted by pod {preemptor.uid} on node {node_name}"
        await self._event(victim, scheduler, "Normal", "Preempted", "Preempting", note)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        body = {"status": {"nominatedNodeName": node_name or None}}
        try:
            await self._call("PATCH", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status", body, MERGE)
        except APIError as err:
            if err.status != 404:
                raise ClusterAPIError(f"nominating {pod.key}: {err.message}") from None
        except OSError as err:
            raise ClusterAPIError(f"nominating {pod.key}: {type(err).__name__}: {err}") from None

    async def reserve_claim(
        self, claim: ResourceClaim, allocation: AllocationResult | None, pod: PodInfo
    ) -> ResourceClaim:
        """DynamicResources' PreBind write (kube-scheduler's bindClaim): the finalizer by an update of the claim,
        then status.allocation and the pod in status.reservedFor through the status subresource, each guarded
        by the resourceVersion read; a conflict re-reads the claim and tries again (5 times)."""
        meta = claim.metadata
        path = f"/apis/resource.k8s.io/v1/namespaces/{meta.namespace}/resourceclaims/{meta.name}"
        key = f"{meta.namespace}/{meta.name}"
        current = claim
        for attempt in range(5):
            try:
                if attempt:
                    current = msgspec.json.decode(await self._call("GET", path), type=ResourceClaim)
                if current.metadata.deletion_timestamp:
                    raise ClusterAPIError(f"claim {key} got deleted in the meantime")
                if allocation is not None and current.status.allocation is not None:
                    raise ClusterAPIError(f"claim {key} got allocated elsewhere in the meantime")
                finalizers = current.metadata.finalizers or []
                if allocation is not None and FINALIZER not in finalizers:
                    body = {
                        "metadata": {
                            "resourceVersion": current.metadata.resource_version,
                            "finalizers": [*finalizers, FINALIZER],
                        }
                    }
                    raw = await self._call("PATCH", path, body, MERGE)
                    current = msgspec.json.decode(raw, type=ResourceClaim)
                status: dict[str, Any] = {
                    "reservedFor": [
                        *msgspec.to_builtins(current.status.reserved_for or []),
                        {"resource": "pods", "name": pod.name, "uid": pod.uid},
                    ]
                }
                if allocation is not None:
                    status["allocation"] = msgspec.to_builtins(allocation)
                body = {"metadata": {"resourceVersion": current.metadata.resource_version}, "status": status}
                raw = await self._call("PATCH", path + "/status", body, MERGE)
                return msgspec.json.decode(raw, type=ResourceClaim)
            except APIError as err:
                if err.status == 409:
                    continue
                raise ClusterAPIError(err.message) from None
            except OSError as err:
                raise ClusterAPIError(f"{type(err).__name__}: {err}") from None
        raise ClusterAPIError(f"claim {key}: the object kept changing (5 conflicts)")

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self.objects.pdbs()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.objects.namespace_labels(namespace)

    # ---- reporting --------------------------------------------------------------------------------------

    def scheduled(self, pod: PodInfo, node: str, scheduler_name: str) -> None:
        note = f"Successfully assigned {pod.key} to {node}"
        self._spawn(self._event(pod, scheduler_name, "Normal", "Scheduled", "Binding", note))

    def failed(self, pod: PodInfo, scheduler_name: str, reason: str, message: str, nominated: str | None) -> None:
        self._spawn(self._event(pod, scheduler_name, "Warning", "FailedScheduling", "Scheduling", message))
        report = (reason, message, nominated)
        if self._reported.get(pod.uid) != report:
            self._reported[pod.uid] = report
            self._spawn(self._condition(pod, reason, message, nominated))

    async def _condition(self, pod: PodInfo, reason: str, message: str, nominated: str | None) -> None:
        status: dict[str, Any] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(),
                }
            ]
        }
        if nominated is not None:
            status["nominatedNodeName"] = nominated or None
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        try:
            await self._call("PATCH", path, {"status": status}, STRATEGIC)
        except (APIError, OSError) as err:
            log.info("could not update the status of %s: %s", pod.key, err)

    async def _event(self, pod: PodInfo, controller: str, kind: str, reason: str, action: str, note: str) -> None:
        now = time.time()
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{pod.name}.{time.time_ns():x}", "namespace": pod.namespace},
            "eventTime": micro_time(now),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.identity}"[:128],
            "action": action,
            "reason": reason,
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": pod.namespace,
                "name": pod.name,
                "uid": pod.uid,
            },
            "note": truncate_note(note),
            "type": kind,
        }
        write = self.events.record(event)
        if write is not None:
            await write

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        loop = asyncio.get_running_loop()
        if self._series is None:
            self._series = loop.create_task(self.events.run())
        task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self, grace: float = 5.0) -> None:
        """Let the reports in flight finish for up to ``grace`` seconds (events still retrying then are
        dropped): shutdown stays bounded whatever the network does. The client is closed by its owner."""
        try:
            async with asyncio.timeout(grace):
                while self._tasks:
                    await asyncio.gather(*list(self._tasks), return_exceptions=True)
                if self._series is not None:
                    self._series.cancel()
                    await asyncio.gather(self._series, return_exceptions=True)
                    await self.events.refresh()  # counts observed since the last write
        except TimeoutError:
            if self._tasks:
                log.warning("shutdown: %d report(s) still unwritten after %.0fs: dropped", len(self._tasks), grace)
        rest = [*self._tasks, *([self._series] if self._series is not None else [])]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
