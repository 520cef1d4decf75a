"""VolumeBinding's two writes to the API server (the `VolumeAPI` of `cluster.volumes.VolumeObjects`).

kube-scheduler Updates (PUT) the whole PV with its new claimRef, and the whole claim with its selected-node
annotation. kubesched decodes only part of these objects, so it sends a JSON merge patch of exactly what
changed, carrying the object's resourceVersion: the API server checks it as it checks an Update's
(a changed object: 409 Conflict), and the result is the object kube-scheduler's Update would store.
The writes go through the scheduler's token bucket and write fence (`APIServerWriter._call`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.cluster.kubeclient import APIError
from kubesched.framework.interfaces import ClusterAPIError

MERGE = "application/merge-patch+json"
Call = Callable[[str, str, Any, str], Awaitable[bytes]]


class APIVolumes:
    """PATCHes a PV's claimRef and annotations, or a claim's annotations, with their resourceVersion."""

    def __init__(self, call: Call) -> None:
        self._call = call

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume:
        meta = pv.metadata
        patch = {
            "metadata": {"resourceVersion": meta.resource_version, "annotations": meta.annotations or {}},
            "spec": {"claimRef": msgspec.to_builtins(pv.spec.claim_ref)},
        }
        data = await self._send(f"/api/v1/persistentvolumes/{meta.name}", patch, f'persistentvolume "{meta.name}"')
        return msgspec.json.decode(data, type=PersistentVolume)

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        meta = pvc.metadata
        patch = {"metadata": {"resourceVersion": meta.resource_version, "annotations": meta.annotations or {}}}
        path = f"/api/v1/namespaces/{meta.namespace}/persistentvolumeclaims/{meta.name}"
        data = await self._send(path, patch, f'persistentvolumeclaim "{meta.namespace}/{meta.name}"')
        return msgspec.json.decode(data, type=PersistentVolumeClaim)

    async def _send(self, path: str, patch: dict[str, Any], what: str) -> bytes:
        try:
            return await self._call("PATCH", path, patch, MERGE)
        except APIError as err:
            raise ClusterAPIError(err.message) from None
        except OSError as err:
            raise ClusterAPIError(f"updating {what}: {type(err).__name__}: {err}") from None
        except msgspec.DecodeError as err:
            raise ClusterAPIError(f"updating {what}: unreadable answer: {err}") from None
