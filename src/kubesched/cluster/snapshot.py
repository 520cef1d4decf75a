"""`kubesched snapshot`: every object scheduling reads, listed page by page from the API server, stripped to
what the scheduler's decoders read, as a cluster file `read_cluster` takes back.

* Each resource is listed in pages (``limit`` + ``continue``, as kubectl's ``--chunk-size``), so no answer
  holds a whole large cluster. A page that fails in transport or with a 5xx/429 is asked again with the same
  token (a GET applies nothing); a 410 (the token expired) lists the resource again from its start. After
  `ATTEMPTS` failures the snapshot stops with the error: a file is never written from a partial list.
* Objects are decoded into the partial structs of `kubesched.api` (what the plugins read; managedFields,
  conditions, secrets' contents… are never decoded) and encoded back, absent values left out; annotations
  are kept only where the scheduler reads them (PVs and claims: `KEPT_ANNOTATIONS`).
* Secrets and ConfigMaps are never listed. Finished pods (Succeeded, Failed) are left out, as the live
  scheduler's watch leaves them out.
* ``namespace``: only the pending pods of that namespace are taken (the ones to schedule), and the
  objects only they read (Services, ReplicationControllers, ReplicaSets, StatefulSets, ResourceClaimTemplates).
  What occupies nodes stays cluster-wide: bound pods, PVCs, ResourceClaims, PDBs (preemption's victims may
  live anywhere).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import msgspec

from kubesched.api.core import Namespace, Node, Pod, ReplicationController, Service, Workload
from kubesched.api.policy_v1 import PodDisruptionBudget
from kubesched.api.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.cluster.files import MAX_YAML_BYTES, PriorityClassObject
from kubesched.cluster.kubeclient import APIError, CredentialError, KubeClient
from kubesched.cluster.volumes import BETA_STORAGE_CLASS, BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE
from kubesched.config.yamlout import dump_yaml_to
from kubesched.errors import ClusterError

T = TypeVar("T")
R = TypeVar("R")
log = logging.getLogger("kubesched.snapshot")

CHUNK_SIZE = 500  # kubectl's --chunk-size default
ATTEMPTS = 8  # tries per page (backoff 0.5 s doubling to 8 s: ~30 s, an API server restart) and lists after 410s
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
KEPT_ANNOTATIONS = frozenset({BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE, BETA_STORAGE_CLASS})
RESOURCE_API = "/apis/resource.k8s.io/v1"


# A YAML cluster file is read ~60 times slower than JSON and held to MAX_YAML_BYTES (cluster/files.py):
# a snapshot of more objects than this (~45 MiB of YAML) is written as JSON or not at all.
MAX_YAML_OBJECTS = 30_000


class SnapshotError(ClusterError):
    """The snapshot could not be taken (the message names the resource); no file was written."""


@dataclass(frozen=True)
class Resource:
    """One kind to list: where (``{ns}`` for a namespaced path), decoded into what."""

    kind: str
    api_version: str
    path: str  # the cluster-wide path; a namespaced one is f"{prefix}/namespaces/{ns}/{plural}"
    wire: type[Any]
    per_namespace: bool = False  # limited to --namespace (read only for the pods to schedule)
    dra: bool = False  # listed only where resource.k8s.io/v1 is served


def _r(kind: str, api_version: str, plural: str, wire: type[Any], **kw: bool) -> Resource:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return Resource(kind, api_version, f"{prefix}/{plural}", wire, **kw)


# In the order a reader meets them: classes and namespaces before the pods that name them.
RESOURCES = (
    _r("Namespace", "v1", "namespaces", Namespace),
    _r("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", PriorityClassObject),
    _r("Node", "v1", "nodes", Node),
    _r("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", PodDisruptionBudget),
    _r("Service", "v1", "services", Service, per_namespace=True),
    _r("ReplicationController", "v1", "replicationcontrollers", ReplicationController, per_namespace=True),
    _r("ReplicaSet", "apps/v1", "replicasets", Workload, per_namespace=True),
    _r("StatefulSet", "apps/v1", "statefulsets", Workload, per_namespace=True),
    _r("StorageClass", "storage.k8s.io/v1", "storageclasses", StorageClass),
    _r("CSINode", "storage.k8s.io/v1", "csinodes", CSINode),
    _r("PersistentVolume", "v1", "persistentvolumes", PersistentVolume),
    _r("PersistentVolumeClaim", "v1", "persistentvolumeclaims", PersistentVolumeClaim),
    _r("DeviceClass", "resource.k8s.io/v1", "deviceclasses", DeviceClass, dra=True),
    _r("ResourceSlice", "resource.k8s.io/v1", "resourceslices", ResourceSlice, dra=True),
    _r("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", ResourceClaim, dra=True),
    _r(
        "ResourceClaimTemplate",
        "resource.k8s.io/v1",
        "resourceclaimtemplates",
        ResourceClaimTemplate,
        per_namespace=True,
        dra=True,
    ),
)
PODS = _r("Pod", "v1", "pods", Pod)


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _Page(msgspec.Struct, Generic[T]):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[T] | None = None


@dataclass
class Snapshot:
    """What was listed: each kind's objects (structs of `kubesched.api`), in `RESOURCES` order, then pods."""

    server: str
    objects: dict[str, list[Any]]
    requests: int = 0  # list requests made (tests read it to see paging)
    retries: int = 0  # pages asked again after a failure
    relists: int = 0  # resources listed again after an expired token

    def documents(self) -> dict[str, Any]:
        """The snapshot as one ``List`` of mixed kinds (what ``kubectl get … -o yaml`` writes)."""
        kinds = {r.kind: r for r in (*RESOURCES, PODS)}
        items: list[dict[str, Any]] = []
        for kind, objs in self.objects.items():
            head = {"apiVersion": kinds[kind].api_version, "kind": kind}
            items.extend({**head, **strip(o)} for o in objs)
        return {"apiVersion": "v1", "kind": "List", "items": items}


def strip(obj: Any) -> dict[str, Any]:
    """A decoded object as plain data: absent values left out, annotations the scheduler reads kept alone."""
    out: dict[str, Any] = msgspec.to_builtins(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "annotations" in meta:
        kept = {k: v for k, v in meta["annotations"].items() if k in KEPT_ANNOTATIONS}
        if kept:
            meta["annotations"] = kept
        else:
            del meta["annotations"]
    return out


Sleep = Callable[[float], Awaitable[None]]


class Lister:
    """Paged lists over the one API client, with retries of a failed page and relists after a 410."""

    def __init__(self, client: KubeClient, chunk_size: int = CHUNK_SIZE, sleep: Sleep = asyncio.sleep) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.client = client
        self.chunk_size = chunk_size
        self.sleep = sleep
        self.requests = self.retries = self.relists = 0

    async def list(self, path: str, wire: type[T], field_selector: str = "") -> list[T]:
        """Every object at ``path``, as of the first page's resourceVersion (the server keeps it for the rest)."""
        decoder: msgspec.json.Decoder[_Page[T]] = msgspec.json.Decoder(_Page[wire])  # type: ignore[valid-type]
        for attempt in range(ATTEMPTS):
            items: list[T] = []
            token = ""
            try:
                while True:
                    params = {"limit": str(self.chunk_size)}
                    if token:
                        params["continue"] = token
                    if field_selector:
                        params["fieldSelector"] = field_selector
                    page = await self._page(path, params, decoder)
                    items.extend(page.items or ())
                    token = page.metadata.continue_
                    if not token:
                        return items
            except APIError as err:
                if err.status != 410 or attempt == ATTEMPTS - 1:
                    raise SnapshotError(f"listing {path}: {err}") from None
                log.warning("listing %s: the continue token expired (%s); listing it again", path, err.message)
                self.relists += 1
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def served(self, path: str) -> bool:
        """Whether the API server serves a group version (discovery: 404 when it does not)."""
        try:
            await self._get(path, {}, bytes)
        except APIError as err:
            if err.status == 404:
                return False
            raise SnapshotError(f"discovery of {path}: {err}") from None
        return True

    async def _page(self, path: str, params: dict[str, str], decoder: msgspec.json.Decoder[_Page[T]]) -> _Page[T]:
        return await self._get(path, params, decoder.decode)

    async def _get(self, path: str, params: dict[str, str], decode: Callable[[bytes], R]) -> R:
        """A GET, asked again after a transport failure, a 5xx/429 or an unreadable answer (it applies nothing)."""
        delay = 0.5
        for attempt in range(ATTEMPTS):
            try:
                self.requests += 1
                return decode(await self.client.request("GET", path, params=params, time_limit=60.0))
            except APIError as err:
                if err.status not in (429, 500, 502, 503, 504) or attempt == ATTEMPTS - 1:
                    raise
                problem: str = str(err)
            except CredentialError as err:  # no credential to send: asking again will not find one
                raise SnapshotError(f"listing {path}: {err}") from None
            except msgspec.DecodeError as err:  # a cut answer that still parsed as HTTP
                if attempt == ATTEMPTS - 1:
                    raise SnapshotError(f"listing {path}: the answer could not be read: {err}") from None
                problem = f"unreadable answer: {err}"
            except OSError as err:  # TransportError, AnswerLost: a GET may be sent again
                if attempt == ATTEMPTS - 1:
                    raise SnapshotError(f"listing {path}: {err} (after {ATTEMPTS} attempts)") from None
                problem = str(err)
            self.retries += 1
            log.warning("listing %s failed (%s); asking again in %.1fs", path, problem, delay)
            await self.sleep(delay)
            delay = min(delay * 2, 8.0)
        raise AssertionError("unreachable")  # pragma: no cover


async def take(
    client: KubeClient, *, namespace: str = "", chunk_size: int = CHUNK_SIZE, sleep: Sleep = asyncio.sleep
) -> Snapshot:
    """List everything scheduling reads (see the module); raises SnapshotError naming what failed."""
    lister = Lister(client, chunk_size, sleep)
    dra = await lister.served(RESOURCE_API)
    objects: dict[str, list[Any]] = {}
    for res in RESOURCES:
        if res.dra and not dra:
            continue
        path = _path(res, namespace if res.per_namespace else "")
        objects[res.kind] = await lister.list(path, res.wire)
    if namespace:
        bound = await lister.list(PODS.path, Pod, f"spec.nodeName!=,{ACTIVE_PODS}")
        pending = await lister.list(_path(PODS, namespace), Pod, f"spec.nodeName=,{ACTIVE_PODS}")
        objects["Pod"] = bound + pending
    else:
        objects["Pod"] = await lister.list(PODS.path, Pod, ACTIVE_PODS)
    snap = Snapshot(client.conn.server, objects)
    snap.requests, snap.retries, snap.relists = lister.requests, lister.retries, lister.relists
    return snap


def _path(res: Resource, namespace: str) -> str:
    if not namespace:
        return res.path
    prefix, plural = res.path.rsplit("/", 1)
    return f"{prefix}/namespaces/{namespace}/{plural}"


def write_atomically(path: Path, doc: dict[str, Any], header: Iterable[str] = ()) -> None:
    """``doc`` (a List) at ``path``, or nothing there: written to a temporary file beside it, then renamed.

    YAML, with ``header`` as comments; JSON when the name ends in ``.json`` (one item per line): a large
    cluster loads several times faster from JSON (docs/benchmarks.md).
    """
    path = path.absolute()
    yaml_out = path.suffix != ".json"
    if yaml_out and len(doc.get("items") or ()) > MAX_YAML_OBJECTS:
        raise SnapshotError(
            f"{len(doc['items'])} objects are too many for a YAML cluster file (at most {MAX_YAML_OBJECTS}:"
            f" it would load slowly, past {MAX_YAML_BYTES >> 20} MiB not at all); write JSON: -o {path.stem}.json"
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            if not yaml_out:
                _write_json(doc, out)
            else:
                for line in header:
                    out.write(f"# {line}\n")
                dump_yaml_to(doc, out)
            out.flush()
            os.fsync(out.fileno())
            size = out.tell()
        if yaml_out and size > MAX_YAML_BYTES:
            raise SnapshotError(
                f"the snapshot is {size >> 20} MiB of YAML, more than a YAML cluster file may be"
                f" ({MAX_YAML_BYTES >> 20} MiB); write JSON: -o {path.stem}.json"
            )
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_json(doc: dict[str, Any], out: IO[str]) -> None:
    encode = msgspec.json.Encoder().encode
    head = {k: v for k, v in doc.items() if k != "items"}
    out.write(encode(head).decode()[:-1] + ',"items":[')
    for i, item in enumerate(doc.get("items") or ()):
        out.write(("\n" if i == 0 else ",\n") + encode(item).decode())
    out.write("\n]}\n")
