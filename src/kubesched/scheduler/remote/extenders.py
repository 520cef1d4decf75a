"""The client side of kube-scheduler's extender protocol: our scheduler calls extenders as kube-scheduler does.

* Ignorable extenders are moved after the others; filter, bind and preempt call them in that order.
* An extender with `managedResources` is asked only about pods whose (init) containers request or limit
  one of them (IsInterested), in every phase.
* `nodeCacheCapable`: node names are sent; otherwise Node objects (the fields kubesched decodes).
* filter: FailedAndUnresolvableNodes win over FailedNodes; a node in neither is just dropped; names not
  sent are an error; an error fails the attempt unless the extender is ignorable.
* prioritize: concurrent, errors ignored, each score × weight × (100 / 10) added to the node's total.
* bind: the first interested binder extender binds instead of the Bind plugins.
* preempt: sequential, each may drop nodes or victims (synchronous, as DefaultPreemption's PostFilter is).
* Every call is a POST of compact JSON with the configured `httpTimeout` (5 s when unset); only a 200 counts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import httpx
import msgspec

from kubesched.api import extender_v1 as wire
from kubesched.api.core import NodeList
from kubesched.config.v1 import Extender
from kubesched.core.nodetable import NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.framework.status import Status
from kubesched.scheduler.engine.extenders import Candidates, PodsOn
from kubesched.scheduler.engine.extenders import ExtenderError as ExtenderError

log = logging.getLogger("kubesched.scheduler")
MAX_NODE_SCORE = 100
T = TypeVar("T")


def _tls(config: Extender) -> ssl.SSLContext | bool:
    if not config.url_prefix.lower().startswith("https://"):
        return True
    tls = config.tls_config
    if not config.enable_https or tls is None:
        return True  # the system CA pool, as kube-scheduler without tlsConfig
    ctx = ssl.create_default_context()
    if tls.insecure or not tls.has_ca:
        # kube-scheduler turns verification off when HTTPS has no CA (extender-protocol §2.2).
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif tls.ca_data:
        ctx.load_verify_locations(cadata=tls.ca_data.decode())
    else:
        ctx.load_verify_locations(cafile=tls.ca_file)
    if (tls.cert_data or tls.cert_file) and (tls.key_data or tls.key_file):
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            cert.write_bytes(tls.cert_data or Path(tls.cert_file).read_bytes())
            key.write_bytes(tls.key_data or Path(tls.key_file).read_bytes())
            os.chmod(key, 0o600)
            ctx.load_cert_chain(cert, key)
    return ctx


def _resource_names(pod: PodInfo) -> set[str]:
    names: set[str] = set()
    for c in (*(pod.pod.spec.containers or ()), *(pod.pod.spec.init_containers or ())):
        if c.resources is not None:
            names.update(c.resources.requests or ())
            names.update(c.resources.limits or ())
    return names


class HTTPExtender:
    """One configured extender."""

    def __init__(self, config: Extender) -> None:
        self.config = config
        self.name = config.url_prefix  # kube-scheduler names an extender by its URL prefix
        self.timeout = config.effective_timeout.total_seconds()
        self._verify = _tls(config)
        self._client = httpx.AsyncClient(timeout=self.timeout, verify=self._verify)
        self._sync: httpx.Client | None = None

    async def aclose(self) -> None:
        await self._client.aclose()
        if self._sync is not None:
            self._sync.close()

    def url(self, verb: str) -> str:
        return self.config.url_prefix.rstrip("/") + "/" + verb

    def interested(self, pod: PodInfo) -> bool:
        return self.config.is_interested(_resource_names(pod)) if self.config.managed_resources else True

    def _check(self, verb: str, resp: httpx.Response, kind: type[T]) -> T:
        if resp.status_code != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {self.url(verb)}, code {resp.status_code}")
        try:
            return wire.decode(resp.content, kind, msgspec.json.Decoder(kind), lambda _: True)  # type: ignore[type-var]
        except wire.WireError as err:
            raise ExtenderError(f"extender {self.name} {verb}: {err}") from None

    async def _post(self, verb: str, body: bytes, kind: type[T]) -> T:
        try:
            resp = await self._client.post(self.url(verb), content=body, headers={"Content-Type": "application/json"})
        except httpx.HTTPError as err:
            raise ExtenderError(f"extender {self.name} {verb}: {type(err).__name__}: {err}") from None
        return self._check(verb, resp, kind)

    def _args(self, pod: PodInfo, table: NodeTable, names: Sequence[str]) -> bytes:
        if self.config.node_cache_capable:
            return msgspec.json.encode({"Pod": pod.pod, "Nodes": None, "NodeNames": list(names)})
        nodes = [table.node(table.index[n]) for n in names if n in table.index]
        return msgspec.json.encode({"Pod": pod.pod, "Nodes": NodeList(items=nodes), "NodeNames": None})

    async def filter(self, pod: PodInfo, table: NodeTable, names: Sequence[str]) -> tuple[list[str], dict[str, Status]]:
        result = await self._post(self.config.filter_verb, self._args(pod, table, names), _FilterResult)
        if result.Error:
            raise ExtenderError(f"extender {self.name} filter: {result.Error}")
        sent = set(names)
        if self.config.node_cache_capable and result.NodeNames is not None:
            for name in result.NodeNames:
                if name not in sent:
                    raise ExtenderError(
                        f"extender {self.name} claims a filtered node {name!r}"
                        " which is not found in the input node list"
                    )
            passed = list(result.NodeNames)
        elif result.Nodes is not None:
            passed = [n.metadata.name for n in result.Nodes.items or () if n.metadata.name in sent]
        else:
            passed = []
        statuses: dict[str, Status] = {}
        for name, message in (result.FailedNodes or {}).items():
            statuses[name] = Status.unschedulable(message).with_plugin("Extender")
        for name, message in (result.FailedAndUnresolvableNodes or {}).items():
            statuses[name] = Status.unresolvable(message).with_plugin("Extender")
        return passed, statuses

    async def prioritize(self, pod: PodInfo, table: NodeTable, names: Sequence[str]) -> dict[str, int]:
        scores = await self._post(self.config.prioritize_verb, self._args(pod, table, names), list[_HostPriority])
        factor = self.config.weight * (MAX_NODE_SCORE // wire.MAX_EXTENDER_PRIORITY)
        return {h.Host: h.Score * factor for h in scores}

    async def bind(self, pod: PodInfo, node: str) -> None:
        body = msgspec.json.encode(wire.ExtenderBindingArgs(pod.name, pod.namespace, pod.uid, node))
        result = await self._post(self.config.bind_verb, body, wire.ExtenderBindingResult)
        if result.Error:
            raise ExtenderError(f"extender {self.name} bind: {result.Error}")

    def preempt(self, pod: PodInfo, candidates: Candidates, pods_on: PodsOn) -> Candidates:
        """Send the candidates, return what the extender keeps (victims resolved back to pods by UID)."""
        if self.config.node_cache_capable:
            meta = {
                n: {"Pods": [{"UID": p.uid} for p in victims], "NumPDBViolations": v}
                for n, (victims, v) in candidates.items()
            }
            body = msgspec.json.encode({"Pod": pod.pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta})
        else:
            full = {
                n: {"Pods": [p.pod for p in victims], "NumPDBViolations": v} for n, (victims, v) in candidates.items()
            }
            body = msgspec.json.encode({"Pod": pod.pod, "NodeNameToVictims": full, "NodeNameToMetaVictims": None})
        if self._sync is None:
            self._sync = httpx.Client(timeout=self.timeout, verify=self._verify)
        try:
            resp = self._sync.post(
                self.url(self.config.preempt_verb), content=body, headers={"Content-Type": "application/json"}
            )
        except httpx.HTTPError as err:
            raise ExtenderError(f"extender {self.name} preempt: {type(err).__name__}: {err}") from None
        result = self._check(self.config.preempt_verb, resp, wire.ExtenderPreemptionResult)
        out: dict[str, tuple[Sequence[PodInfo], int]] = {}
        for node, victims in (result.NodeNameToMetaVictims or {}).items():
            if node not in candidates:
                raise ExtenderError(f"extender {self.name} preempt: node {node!r} was not a candidate")
            on_node = {**pods_on(node), **{p.uid: p for p in candidates[node][0]}}
            kept = []
            for victim_ref in victims.Pods or ():
                victim = on_node.get(victim_ref.UID)
                if victim is None:
                    raise ExtenderError(
                        f"extender {self.name} claims to preempt pod (UID: {victim_ref.UID}) on node {node}, "
                        "but the pod is not found on that node"
                    )
                kept.append(victim)
            if not kept:
                if self.config.ignorable:
                    continue
                raise ExtenderError(f'expected at least one victim pod on node "{node}"')
            out[node] = (kept, victims.NumPDBViolations)
        return out


class _Named(msgspec.Struct):
    name: str = ""


class _Meta(msgspec.Struct):
    metadata: _Named = msgspec.field(default_factory=_Named)


class _Nodes(msgspec.Struct):
    items: list[_Meta] | None = None


class _FilterResult(msgspec.Struct):
    Nodes: _Nodes | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] | None = None
    FailedAndUnresolvableNodes: dict[str, str] | None = None
    Error: str = ""


class _HostPriority(msgspec.Struct):
    Host: str = ""
    Score: int = 0


class ExtenderSet:
    """The configured extenders, ignorable ones last, as kube-scheduler orders them (the engine's `Extenders`)."""

    def __init__(self, configs: Sequence[Extender]) -> None:
        ordered = [c for c in configs if not c.ignorable] + [c for c in configs if c.ignorable]
        self.extenders = [HTTPExtender(c) for c in ordered]

    def __len__(self) -> int:
        return len(self.extenders)

    async def aclose(self) -> None:
        for e in self.extenders:
            await e.aclose()

    def any_filter_or_prioritize(self) -> bool:
        return any(e.config.filter_verb or e.config.prioritize_verb for e in self.extenders)

    def filters(self, pod: PodInfo) -> list[HTTPExtender]:
        return [e for e in self.extenders if e.config.filter_verb and e.interested(pod)] if self.extenders else []

    def prioritizers(self, pod: PodInfo) -> list[HTTPExtender]:
        return [e for e in self.extenders if e.config.prioritize_verb and e.interested(pod)] if self.extenders else []

    def binder(self, pod: PodInfo) -> HTTPExtender | None:
        return next((e for e in self.extenders if e.config.bind_verb and e.interested(pod)), None)

    async def filter(self, pod: PodInfo, table: NodeTable, names: list[str]) -> tuple[list[str], dict[str, Status]]:
        """Run each interested filter extender on the survivors of the previous one."""
        statuses: dict[str, Status] = {}
        for ext in self.filters(pod):
            if not names:
                break
            try:
                passed, failed = await ext.filter(pod, table, names)
            except ExtenderError as err:
                if ext.config.ignorable:
                    log.warning("skipping ignorable extender: %s", err)
                    continue
                raise
            statuses.update(failed)
            names = passed
        return names, statuses

    async def prioritize(self, pod: PodInfo, table: NodeTable, rows: Rows) -> dict[str, int]:
        """Σ over interested prioritizers of score × weight × 10 per node; failures are ignored."""
        names: list[str] = table.name_array()[rows].tolist()
        exts = self.prioritizers(pod)
        results = await asyncio.gather(*(e.prioritize(pod, table, names) for e in exts), return_exceptions=True)
        totals: dict[str, int] = {}
        wanted = set(names)
        for ext, result in zip(exts, results, strict=True):
            if isinstance(result, BaseException):
                log.info("prioritize of extender %s failed (ignored): %s", ext.name, result)
                continue
            for host, score in result.items():
                if host in wanted:
                    totals[host] = totals.get(host, 0) + score
        return totals

    def preempt(self, pod: PodInfo, candidates: Candidates, pods_on: PodsOn) -> Candidates:
        """Each interested preempt extender trims the candidates in turn."""
        for ext in self.extenders:
            if not candidates:
                break
            if not ext.config.preempt_verb or not ext.interested(pod):
                continue
            try:
                candidates = ext.preempt(pod, candidates, pods_on)
            except ExtenderError as err:
                if ext.config.ignorable:
                    log.warning("skipping ignorable extender: %s", err)
                    continue
                raise
        return candidates
