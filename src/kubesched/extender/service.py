"""The extender's verbs over the shared core: bytes in, bytes out, no HTTP.

filter and prioritize resolve the candidate nodes (names through the node cache, or full nodes
decoded from the request), run the policy's plugins over all of them at once, and encode the
reply kube-scheduler expects. bind re-checks the policy on the chosen node with the ledger's
reservations counted, reserves the pod there, then posts a Binding; preempt lets the policy veto or
trim victims.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api import extender_v1 as wire
from kubesched.api.nesting import too_deep
from kubesched.api.node_fields import node_type
from kubesched.cluster.cache import ClusterCache
from kubesched.cluster.kubeclient import KubeClient
from kubesched.cluster.ledger import Ledger
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME
from kubesched.core.nodetable import NodeTable, Rows, table_of
from kubesched.core.podinfo import PodInfo, compile_pod
from kubesched.core.quantity import QuantityError
from kubesched.errors import InputError, KubeschedError
from kubesched.extender.binding import BindingWriter, log_fields
from kubesched.extender.replies import filter_reply, priorities_reply, quote_all
from kubesched.framework.guard import FrameworkError
from kubesched.framework.interfaces import CycleState, NodeBatch
from kubesched.framework.policy import Policy
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code

log = logging.getLogger("kubesched.extender")

_args = msgspec.json.Decoder(wire.ExtenderArgs)
_bind_args = msgspec.json.Decoder(wire.ExtenderBindingArgs)
_preempt_args = msgspec.json.Decoder(wire.ExtenderPreemptionArgs)
_encoder = msgspec.json.Encoder()
_EMPTY_META: dict[str, str] = {}


def _bind_result(error: str) -> bytes:
    return _encoder.encode(wire.ExtenderBindingResult(error))


class BadRequest(InputError):
    """The request cannot be served as sent (answered with HTTP 400 and this message)."""


class NotReady(KubeschedError, RuntimeError):
    """The node cache has not synced yet (answered with HTTP 503 and this message)."""


NOT_SYNCED = (
    "the extender's node cache has not synced with the API server yet; "
    "kube-scheduler retries the pod with backoff (see /readyz)"
)
UNKNOWN_NODE = "node is not in the extender's node cache (yet); the pod is retried when nodes change"


@dataclass
class Candidates:
    table: NodeTable
    rows: Rows
    quoted: npt.NDArray[np.object_]  # each row's name as a JSON string
    raw: list[msgspec.Raw] | None  # full-node mode: the items to echo, aligned with rows
    unknown: list[str]  # names mode: names the cache does not know


class ExtenderService:
    """One policy served over kube-scheduler's extender protocol."""

    def __init__(
        self,
        policy: Policy,
        framework: Framework,
        cache: ClusterCache,
        client: KubeClient | None = None,
        ledger: Ledger | None = None,
        *,
        scheduler_name: str | None = None,
    ) -> None:
        self.policy = policy
        # bind takes only pods of this scheduler (`--scheduler-name`; default the policy's profile's).
        self.scheduler_name = scheduler_name or policy.profile.scheduler_name
        self.framework = framework
        self.cache = cache
        self.ledger = ledger if ledger is not None else Ledger(cache)
        # Only an extender that can bind needs the pods of filter requests again (bind names them only).
        self._remember = client is not None
        self._writer = BindingWriter(client, self.ledger) if client is not None else None
        # Not a PodCompiler: keying each request's pod by its encoded spec costs more than the compiling
        # it saves (measured side by side with the Go extender).
        self._compile = compile_pod
        # Full-node requests decode only the fields the policy's plugins read.
        self._node = msgspec.json.Decoder(node_type(framework.node_fields()))
        self._quoted_gen = -1
        self._last_rows: tuple[int, list[str], Rows] | None = None
        self._quoted: npt.NDArray[np.object_] = np.array([], dtype=object)
        self._messages: dict[str, bytes] = {}

    def _cache_quoted(self) -> npt.NDArray[np.object_]:
        """The cache's node names as JSON strings, by row (rebuilt when nodes come or go)."""
        table = self.cache.table
        if self._quoted_gen != table.names_generation:
            self._quoted = quote_all(table.names)
            self._quoted_gen = table.names_generation
        return self._quoted

    def _message(self, text: str) -> bytes:
        quoted = self._messages.get(text)
        if quoted is None:
            if len(self._messages) > 4096:  # messages with varying text must not grow this forever
                self._messages.clear()
            quoted = self._messages[text] = msgspec.json.encode(text)
        return quoted

    # ---- decoding ------------------------------------------------------------------------------

    def _decode_args(self, body: bytes) -> tuple[wire.ExtenderArgs, PodInfo]:
        try:
            args = wire.decode(
                body,
                wire.ExtenderArgs,
                _args,
                lambda a: a.Pod is not None and (a.Nodes is not None or a.NodeNames is not None),
            )
        except wire.WireError as err:
            raise BadRequest(str(err)) from None
        if args.Pod is None:
            raise BadRequest("invalid ExtenderArgs: Pod is missing or null")
        if args.Nodes is None and args.NodeNames is None:
            raise BadRequest("invalid ExtenderArgs: both Nodes and NodeNames are null; one must list the candidates")
        try:
            return args, self._compile(args.Pod)
        except ValueError as err:
            raise BadRequest(f"invalid ExtenderArgs: Pod: {err}") from None

    def _rows_for(self, table: NodeTable, names: list[str]) -> Rows:
        """Rows of the named nodes; the last answer is kept, as consecutive pods are often sent the same
        candidates (all of them, in a small cluster). Comparing the names costs less than looking them up."""
        last = self._last_rows
        if last is not None and last[0] == table.names_generation and last[1] == names:
            return last[2]
        rows = table.rows_for(names)
        self._last_rows = (table.names_generation, names, rows)
        return rows

    def _candidates(self, args: wire.ExtenderArgs) -> Candidates:
        # Names mode judges the cache's nodes; full-node mode counts the cache's pods on them.
        if (args.NodeNames is not None or self.cache.tracks_pods) and not self.cache.synced.is_set():
            raise NotReady(NOT_SYNCED)
        if args.NodeNames is not None:
            table = self.cache.table
            rows = self._rows_for(table, args.NodeNames)
            unknown: list[str] = []
            if len(rows) != len(args.NodeNames):  # names the cache does not know get a reason, not silence
                index = table.index
                unknown = [name for name in args.NodeNames if name not in index]
            return Candidates(table, rows, self._cache_quoted(), None, unknown)
        items = (args.Nodes.items if args.Nodes else None) or []
        decode = self._node.decode
        try:
            nodes = [decode(item) for item in items]
        except (msgspec.DecodeError, RecursionError):
            for i, item in enumerate(items):  # find which one, for the message
                try:
                    decode(item)
                except msgspec.DecodeError as err:
                    raise BadRequest(f"invalid ExtenderArgs: Nodes.items[{i}]: {err}") from None
                except RecursionError:
                    raise BadRequest(f"invalid ExtenderArgs: Nodes.items[{i}]: {too_deep(bytes(item))}") from None
            raise
        for i, node in enumerate(nodes):
            if not node.metadata.name:
                raise BadRequest(f"invalid ExtenderArgs: Nodes.items[{i}]: metadata.name is missing")
        table = table_of(nodes)
        raw = list(items)
        if len(table) != len(nodes):  # repeated names: keep the first of each, aligned with its item
            first: dict[str, msgspec.Raw] = {}
            for item, node in zip(items, nodes, strict=True):
                first.setdefault(node.metadata.name, item)
            raw = [first[name] for name in table.names]
        if self.cache.tracks_pods:
            # Usage comes from the pods the cluster source knows on those nodes.
            src = self.cache.table
            for row, name in enumerate(table.names):
                src_row = src.index.get(name)
                if src_row is not None:
                    for pod in src.pods_on(src_row).values():
                        table.add_pod(row, pod)
        return Candidates(table, np.arange(len(raw), dtype=np.intp), quote_all(table.names), raw, [])

    # ---- verbs ----------------------------------------------------------------------------------

    def filter(self, body: bytes) -> bytes:
        try:
            return self._filter(body)
        except QuantityError as err:
            raise BadRequest(f"invalid ExtenderArgs: Pod: {err}") from None

    def prioritize(self, body: bytes) -> bytes:
        try:
            return self._prioritize(body)
        except QuantityError as err:
            raise BadRequest(f"invalid ExtenderArgs: Pod: {err}") from None

    def _seen(self, pod: PodInfo) -> None:
        """Ledger upkeep for a pod kube-scheduler asks about: an empty ledger costs one test."""
        ledger = self.ledger
        if ledger.entries:
            ledger.expire()
            entry = ledger.entries.get(pod.uid)
            if entry is not None and not entry.unknown:
                # kube-scheduler schedules the pod again, so it took our last bind of it as failed:
                # its reservation must not count against it (the watch counts it if it was bound).
                # A binding whose outcome is unknown stays counted: the pod may be bound there.
                ledger.release(pod.uid)
        if self._remember:
            ledger.remember(pod)

    def _filter(self, body: bytes) -> bytes:
        args, pod = self._decode_args(body)
        self._seen(pod)
        try:
            cand = self._candidates(args)
        except NotReady as err:
            # An Error makes kube-scheduler record a SchedulerError and retry the pod with backoff; an
            # empty NodeNames would drop every node without a reason.
            return filter_reply(None, None, (), (), str(err))
        try:
            outcome = self.framework.find_feasible(CycleState(), pod, NodeBatch(cand.table, cand.rows))
        except FrameworkError as err:
            return filter_reply(None, None, (), (), str(err))
        quoted = cand.quoted
        failed: list[tuple[bytes, list[bytes]]] = []
        unresolvable: list[tuple[bytes, list[bytes]]] = []
        feasible = outcome.feasible
        groups = outcome.diagnosis.by_status(cand.rows, feasible, cand.table.size)
        for status, rows in groups:
            target = unresolvable if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
            target.append((self._message(status.message), quoted[rows].tolist()))
        if cand.unknown:
            # Resolvable: the node may come into the cache, and a rejected node requeues the pod on any event.
            failed.append((self._message(UNKNOWN_NODE), quote_all(dict.fromkeys(cand.unknown)).tolist()))
        if cand.raw is None:
            return filter_reply(quoted[feasible].tolist(), None, failed, unresolvable)
        return filter_reply(None, [cand.raw[r] for r in feasible.tolist()], failed, unresolvable)

    def _prioritize(self, body: bytes) -> bytes:
        args, pod = self._decode_args(body)
        self._seen(pod)
        cand = self._candidates(args)
        nodes = NodeBatch(cand.table, cand.rows)
        try:
            totals, weights = self.framework.prioritize(CycleState(), pod, nodes)
        except FrameworkError as err:
            # kube-scheduler ignores prioritize failures; the best we can do is say why in the log.
            log.warning("Prioritize failed", extra=log_fields(pod, plugin=err.status.plugin, err=str(err)))
            raise BadRequest(f"prioritize failed: {err}") from None
        # Plugin totals are 0..100 per unit of weight (the framework checks every plugin's scores), so
        # this integer division lands in the protocol's 0..10 without clipping.
        scores = totals // (10 * weights) if weights else np.zeros(len(nodes), dtype=np.int64)
        return priorities_reply(cand.quoted[cand.rows].tolist(), scores)

    async def bind(self, body: bytes) -> bytes:
        try:
            args = wire.decode(body, wire.ExtenderBindingArgs, _bind_args, lambda a: bool(a.PodName))
        except wire.WireError as err:
            raise BadRequest(str(err)) from None
        missing = [k for k in ("PodName", "PodNamespace", "Node") if not getattr(args, k)]
        if missing:
            raise BadRequest(f"invalid ExtenderBindingArgs: {', '.join(missing)} missing or empty")
        if self._writer is None:
            error = "this extender has no cluster connection (start it with --kubeconfig or in a cluster) to bind"
            return _bind_result(error)
        key = f"{args.PodNamespace}/{args.PodName}"
        info = self.ledger.recall(args.PodUID) if args.PodUID else None
        if info is None:
            found = await self._writer.fetch_pod(args)
            if isinstance(found, str):
                return _bind_result(found)
            info = found
        theirs = info.pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME
        if theirs != self.scheduler_name:
            log.info("Bind refused: the pod is another scheduler's", extra=log_fields(info, args.Node))
            return _bind_result(
                f"binding pod {key} refused: its spec.schedulerName is {theirs!r}, and this extender binds only pods "
                f"of {self.scheduler_name!r} (extender serve --scheduler-name)"
            )
        if self.ledger.unknown_node(info.uid) is not None:
            settled = await self._writer.settle_unknown(args, info)
            if settled is not None:
                return _bind_result(settled)
        # From here to the reservation: no await, so no other request can take the same capacity.
        reason = self.ledger.reserve(info, args.Node, lambda row: self._refusal(info, row))
        if reason is not None:
            log.info("Bind refused: the pod no longer fits the node", extra=log_fields(info, args.Node, reason=reason))
            return _bind_result(f"pod {key} no longer fits node {args.Node}: {reason}")
        try:
            outcome = await self._writer.post_binding(args, info)
        except BaseException:
            # Cancelled mid-POST (the connection closed, shutdown): the Binding may have gone out.
            # Keep counting the pod, with its TTL, until the watch or the next bind tells.
            self.ledger.mark_unknown(info.uid)
            raise
        if outcome is None:
            self.ledger.finish(info.uid)
            log.info("Successfully bound pod to node", extra=log_fields(info, args.Node))
            return _bind_result("")
        return _bind_result(outcome)

    def _refusal(self, pod: PodInfo, row: int) -> str | None:
        """Why the policy would not take ``pod`` on the node at ``row`` now (None: it fits)."""
        try:
            outcome = self.framework.find_feasible(CycleState(), pod, NodeBatch(self.cache.table, np.array([row])))
        except FrameworkError as err:
            return str(err)
        if len(outcome.feasible):
            return None
        diagnosis = outcome.diagnosis
        if diagnosis.pre_filter is not None:
            return diagnosis.pre_filter.message
        return ", ".join(diagnosis.reason_counts()) or "rejected by the policy"

    def preempt(self, body: bytes) -> bytes:
        try:
            return self._preempt(body)
        except QuantityError as err:
            raise BadRequest(f"invalid ExtenderPreemptionArgs: Pod: {err}") from None

    def _preempt(self, body: bytes) -> bytes:
        try:
            args = wire.decode(
                body,
                wire.ExtenderPreemptionArgs,
                _preempt_args,
                lambda a: a.Pod is not None and (a.NodeNameToVictims or a.NodeNameToMetaVictims) is not None,
            )
        except wire.WireError as err:
            raise BadRequest(str(err)) from None
        if args.Pod is None:
            raise BadRequest("invalid ExtenderPreemptionArgs: Pod is missing or null")
        if not self.cache.synced.is_set():
            # No picture of the nodes to judge evictions by: an error (HTTP 503) makes kube-scheduler's
            # preemption fail for this attempt (SchedulerError, retried with backoff) rather than evict.
            raise NotReady(NOT_SYNCED)
        pod = self._compile(args.Pod)
        proposal: dict[str, tuple[list[str], int]] = {}
        for node, v in (args.NodeNameToMetaVictims or {}).items():
            if v is not None:
                proposal[node] = ([p.UID for p in v.Pods or ()], v.NumPDBViolations)
        for node, full in (args.NodeNameToVictims or {}).items():
            if full is not None:
                proposal[node] = ([p.metadata.uid for p in full.Pods or () if p is not None], full.NumPDBViolations)
        out: dict[str, wire.MetaVictims] = {}
        for node, (uids, pdb) in proposal.items():
            kept = self._judge(pod, node, uids)
            if kept:
                out[node] = wire.MetaVictims([wire.MetaPod(u) for u in kept], pdb)
        return _encoder.encode(wire.ExtenderPreemptionResult(out))

    def _judge(self, pod: PodInfo, node: str, uids: list[str]) -> list[str] | None:
        """The victims to keep on ``node``, or None when the policy vetoes the node."""
        table = self.cache.table
        row = table.index.get(node)
        if row is None:
            # A node the cache does not know (yet): nothing to judge the evictions by, so no evictions
            # there (kube-scheduler drops the node from the candidates).
            log.info("Preempt: node not in the node cache, vetoed", extra=log_fields(pod, node))
            return None
        # Would the policy take the pod there once the victims are gone?
        removed = [p for p in (table.remove_pod(row, u) for u in uids) if p is not None]
        try:
            fits = len(self.framework.find_feasible(CycleState(), pod, NodeBatch(table, np.array([row]))).feasible)
        except FrameworkError:
            fits = 0
        finally:
            for p in removed:
                table.add_pod(row, p)
        if not fits:
            return None
        if self.policy.preempt is not None:
            kept = self.policy.preempt(pod, node, list(uids))
            return None if kept is None else [u for u in kept if u in uids]
        return uids
