"""DefaultBinder (Bind): POST the pod's Binding to the chosen node through the handle's cluster."""

from __future__ import annotations

from typing import ClassVar

from kubesched.api.node_fields import NodeFields
from kubesched.core.podinfo import PodInfo
from kubesched.framework.interfaces import (
    AlreadyAssignedError,
    BindingUnknownError,
    BindPlugin,
    ClusterAPIError,
    CycleState,
)
from kubesched.framework.status import SUCCESS, Status

ERR_NO_CLUSTER = "no cluster to bind to"


class DefaultBinder(BindPlugin):
    """Binds through ``handle.cluster``; a failure is an Error status (the pod is un-assumed and retried),
    except a lost answer or an already bound pod, which go on to the scheduler: it finds out where the pod is."""

    name: ClassVar[str] = "DefaultBinder"
    node_fields = NodeFields()
    reads_pods: ClassVar[bool] = False
    binds_through_cluster: ClassVar[bool] = True

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        cluster = self.handle.cluster
        if cluster is None:
            return Status.error(ERR_NO_CLUSTER)
        try:
            await cluster.bind(pod, node_name)
        except (AlreadyAssignedError, BindingUnknownError):
            raise
        except ClusterAPIError as err:
            return Status.error(str(err))
        return SUCCESS
