"""AdmissionReview `admission.k8s.io/v1`: decoding a request, with a message per class of bad input, and the reply.

The reply always echoes `request.uid` and carries `apiVersion`/`kind`: the API server rejects any
reply without them. A denial carries a `metav1.Status` with code 403; a patch is base64 JSON Patch
with `patchType: JSONPatch`.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import msgspec

from kubesched.api.core import Pod
from kubesched.api.nesting import deeper_than, too_deep
from kubesched.errors import InputError

API_VERSION = "admission.k8s.io/v1"
# Rules, the patch and copies walk the pod recursively: a hostile object nested thousands deep would
# exhaust the stack there, so it is refused here with a message.
MAX_OBJECT_DEPTH = 100
KIND = "AdmissionReview"


class BadReview(InputError):
    """The body is not an AdmissionReview this webhook can answer (HTTP 400 with this message)."""


class GroupVersionKind(msgspec.Struct):
    group: str = ""
    version: str = ""
    kind: str = ""


class GroupVersionResource(msgspec.Struct):
    group: str = ""
    version: str = ""
    resource: str = ""


class UserInfo(msgspec.Struct):
    username: str = ""
    uid: str = ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}


class AdmissionRequest(msgspec.Struct, rename="camel"):
    """`request` of an AdmissionReview; ``object`` and ``old_object`` are plain decoded JSON."""

    uid: str = ""
    kind: GroupVersionKind | None = None
    resource: GroupVersionResource | None = None
    sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: str = ""
    user_info: UserInfo = msgspec.field(default_factory=UserInfo)
    object: Any = None
    old_object: Any = None
    dry_run: bool = False
    options: Any = None


class AdmissionReview(msgspec.Struct, rename="camel"):
    api_version: str = ""
    kind: str = ""
    request: AdmissionRequest | None = None


_decoder = msgspec.json.Decoder(AdmissionReview)
_encoder = msgspec.json.Encoder()


def decode(body: bytes) -> AdmissionRequest:
    """The request of an AdmissionReview v1 body; raises BadReview naming what is wrong."""
    if not body.strip():
        raise BadReview("empty request body: POST an AdmissionReview (admission.k8s.io/v1)")
    try:
        review = _decoder.decode(body)
    except msgspec.ValidationError as err:
        raise BadReview(f"invalid AdmissionReview: {err}") from None
    except msgspec.DecodeError as err:
        raise BadReview(f"request body is not valid JSON: {err}") from None
    except RecursionError:
        raise BadReview(too_deep(body)) from None
    if review.api_version != API_VERSION or review.kind != KIND:
        got = f"{review.api_version or '(no apiVersion)'} {review.kind or '(no kind)'}"
        raise BadReview(
            f"expected apiVersion {API_VERSION} and kind {KIND}, got {got} "
            "(set admissionReviewVersions: [v1] in the webhook configuration)"
        )
    request = review.request
    if request is None:
        raise BadReview("AdmissionReview has no request")
    if not request.uid:
        raise BadReview("request.uid is missing or empty: the reply must echo it")
    if request.kind is None:
        raise BadReview("request.kind is missing")
    for name in ("object", "old_object", "options"):
        if deeper_than(getattr(request, name), MAX_OBJECT_DEPTH):
            field = "oldObject" if name == "old_object" else name
            raise BadReview(
                f"request body: JSON nested deeper than {MAX_OBJECT_DEPTH} levels in request.{field} "
                "(Kubernetes objects need fewer than 30)"
            )
    return request


def is_pod(request: AdmissionRequest) -> bool:
    """A request about a pod itself (`v1/Pod`, not a subresource such as status or binding)."""
    kind = request.kind
    return kind is not None and (kind.group, kind.version, kind.kind) == ("", "v1", "Pod") and not request.sub_resource


def pod_object(request: AdmissionRequest) -> tuple[dict[str, Any], Pod]:
    """The pod of a pod request as plain JSON and as the typed partial Pod; raises BadReview if it is not one."""
    obj = request.object
    if not isinstance(obj, dict):
        got = "null or missing" if obj is None else f"a JSON {type(obj).__name__}"
        raise BadReview(f"request.object is {got}; a {request.operation or 'pod'} request must carry the Pod")
    kind, version = obj.get("kind", "Pod"), obj.get("apiVersion", "v1")
    if (kind, version) != ("Pod", "v1"):
        raise BadReview(f"request.object is {version}/{kind}, not a v1 Pod (request.kind says v1/Pod)")
    try:
        pod = msgspec.convert(obj, Pod)
    except msgspec.ValidationError as err:
        raise BadReview(f"request.object is not a valid Pod: {str(err).replace('`$', '`request.object')}") from None
    return obj, pod


def reply(
    uid: str,
    *,
    allowed: bool = True,
    message: str = "",
    warnings: Sequence[str] = (),
    patch: Sequence[dict[str, Any]] = (),
) -> bytes:
    """An AdmissionReview response; a patch only when allowed and non-empty."""
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": 403, "reason": "Forbidden", "message": message or "denied by kubesched"}
    if warnings:
        response["warnings"] = list(warnings)
    if allowed and patch:
        response["patch"] = base64.b64encode(_encoder.encode(list(patch))).decode()
        response["patchType"] = "JSONPatch"
    return _encoder.encode({"apiVersion": API_VERSION, "kind": KIND, "response": response})
