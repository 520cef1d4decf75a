"""`APIError`: the one class for a non-2xx answer of the API server, whoever asked."""

from __future__ import annotations

from kubesched.cluster.kubeclient import APIError
from kubesched.errors import ClusterError
from kubesched.framework.handle import ClusterAPIError


def test_the_client_s_answer_and_the_harness_s_read_alike() -> None:
    ours = APIError(409, 'pods "p" is already assigned to node "n1"', "Conflict")
    assert str(ours) == '409 Conflict: pods "p" is already assigned to node "n1"'
    assert (ours.status, ours.reason, ours.assigned_node, ours.request, ours.body) == (409, "Conflict", "n1", "", None)
    body = {"kind": "Status", "reason": "NotFound", "message": 'nodes "x" not found', "code": 404}
    harness = APIError(404, body["message"], "NotFound", request="GET /api/v1/nodes/x", body=body)
    assert str(harness) == 'GET /api/v1/nodes/x -> 404 NotFound: nodes "x" not found'
    assert harness.body is body and harness.assigned_node is None


def test_it_is_a_cluster_error_and_not_the_plugins_cluster_api_error() -> None:
    assert issubclass(APIError, ClusterError)
    assert not issubclass(APIError, ClusterAPIError) and not issubclass(ClusterAPIError, APIError)
