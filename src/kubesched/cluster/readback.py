"""Reading a pod back after a Binding whose answer was lost: where is it bound now?

The one read-back of kubesched: the extender's bind and the scheduler's unknown bindings both ask it.
Only the pod's UID and node are decoded (not the whole pod). Reading is always safe: no rate limiter,
no leader fence.
"""

from __future__ import annotations

import msgspec

from kubesched.cluster.kubeclient import APIError, KubeClient
from kubesched.errors import ClusterError


class ReadBackError(ClusterError):
    """The API server could not say where the pod is (unreachable, an error answer, an unreadable body)."""


class _Meta(msgspec.Struct):
    uid: str = ""


class _Spec(msgspec.Struct):
    nodeName: str = ""  # the wire name


class _PodPlacement(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


_decoder = msgspec.json.Decoder(_PodPlacement)


async def bound_node(client: KubeClient, namespace: str, name: str, uid: str = "") -> str | None:
    """The pod's node as the API server has it now, '' while it is pending, None when it is gone (404, or
    another pod of its name replaced it: ``uid`` differs). Raises ReadBackError when the server cannot say."""
    key = f"{namespace}/{name}"
    try:
        data = await client.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    except APIError as err:
        if err.status == 404:
            return None
        raise ReadBackError(f"reading {key}: {err.message}") from None
    except OSError as err:
        raise ReadBackError(f"reading {key}: {type(err).__name__}: {err}") from None
    try:
        pod = _decoder.decode(data)
    except msgspec.DecodeError as err:
        raise ReadBackError(f"reading {key}: {err}") from None
    if uid and pod.metadata.uid != uid:
        return None
    return pod.spec.nodeName
