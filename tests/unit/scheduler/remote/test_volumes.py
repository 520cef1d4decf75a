"""VolumeBinding's writes: a merge patch of what changed, with the resourceVersion as the precondition."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.cluster.kubeclient import APIError
from kubesched.framework.interfaces import ClusterAPIError
from kubesched.scheduler.remote.volumes import APIVolumes

PV = {
    "metadata": {"name": "pv1", "resourceVersion": "7", "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
    "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "namespace": "ns", "name": "data", "uid": "u1"}},
}


async def test_the_pv_patch_carries_claim_ref_annotations_and_resource_version() -> None:
    sent: list[tuple[str, str, Any, str]] = []

    async def call(method: str, path: str, body: Any, content_type: str) -> bytes:
        sent.append((method, path, body, content_type))
        return json.dumps({**PV, "metadata": {**PV["metadata"], "resourceVersion": "8"}}).encode()

    stored = await APIVolumes(call).update_pv(msgspec.convert(PV, PersistentVolume))
    ((method, path, body, content_type),) = sent
    assert (method, path, content_type) == ("PATCH", "/api/v1/persistentvolumes/pv1", "application/merge-patch+json")
    assert body["metadata"]["resourceVersion"] == "7" and body["spec"]["claimRef"]["uid"] == "u1"
    assert stored.metadata.resource_version == "8"


async def test_a_conflict_or_a_cut_connection_is_a_cluster_error() -> None:
    async def conflict(method: str, path: str, body: Any, content_type: str) -> bytes:
        raise APIError(
            409, 'Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified'
        )

    claim = msgspec.convert(
        {"metadata": {"name": "data", "namespace": "ns", "resourceVersion": "3"}}, PersistentVolumeClaim
    )
    with pytest.raises(ClusterAPIError, match="the object has been modified"):
        await APIVolumes(conflict).update_pvc(claim)

    async def reset(method: str, path: str, body: Any, content_type: str) -> bytes:
        raise ConnectionResetError("reset by peer")

    with pytest.raises(ClusterAPIError, match='updating persistentvolumeclaim "ns/data": ConnectionResetError'):
        await APIVolumes(reset).update_pvc(claim)
