"""The extender's bind, on the API server's side: read the pod, POST the Binding, learn a lost answer's outcome.

Every outcome keeps the reservation ledger true: released when the Binding certainly did not happen,
moved when the server says the pod is bound elsewhere (409 "already assigned"), kept while the outcome is
unknown (the answer was lost and the pod cannot be read back). A Binding is never POSTed twice blindly.
"""

from __future__ import annotations

import logging

import msgspec

from kubesched.api import extender_v1 as wire
from kubesched.api.core import Pod
from kubesched.cluster import readback
from kubesched.cluster.kubeclient import AnswerLost, APIError, KubeClient
from kubesched.cluster.ledger import Ledger
from kubesched.config.v1 import DEFAULT_SCHEDULER_NAME
from kubesched.core.podinfo import PodInfo, compile_pod

log = logging.getLogger("kubesched.extender")


class BindingWriter:
    """Binds through ``client``, keeping ``ledger`` in step with what the API server did."""

    def __init__(self, client: KubeClient, ledger: Ledger) -> None:
        self.client = client
        self.ledger = ledger
        self._pod_decoder = msgspec.json.Decoder(Pod)

    async def fetch_pod(self, args: wire.ExtenderBindingArgs) -> PodInfo | str:
        """The pod to bind when no filter request showed it (no filterVerb, or forgotten): ask the API server."""
        key = f"{args.PodNamespace}/{args.PodName}"
        try:
            raw = await self.client.request("GET", f"/api/v1/namespaces/{args.PodNamespace}/pods/{args.PodName}")
            pod = compile_pod(self._pod_decoder.decode(raw))
        except APIError as err:
            return f"binding pod {key} failed: cannot read the pod: {err}"
        except OSError as err:
            return f"binding pod {key} failed: API server unreachable: {err or type(err).__name__}"
        except (msgspec.DecodeError, ValueError) as err:
            return f"binding pod {key} failed: cannot read the pod: {err}"
        if args.PodUID and pod.uid != args.PodUID:
            return f"binding pod {key} failed: the pod was replaced (UID {pod.uid}, not {args.PodUID})"
        return pod

    async def post_binding(self, args: wire.ExtenderBindingArgs, info: PodInfo) -> str | None:
        """POST the Binding; None when it was applied, else the error for kube-scheduler.

        The reservation is released when the binding certainly did not happen; when the answer was lost
        it is kept (with its TTL) unless reading the pod back tells which way it went.
        """
        key = f"{args.PodNamespace}/{args.PodName}"
        uid = info.uid or args.PodUID
        meta: dict[str, str] = {"name": args.PodName, "namespace": args.PodNamespace}
        if uid:
            meta["uid"] = uid
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": args.Node},
        }
        path = f"/api/v1/namespaces/{args.PodNamespace}/pods/{args.PodName}/binding"
        try:
            await self.client.request("POST", path, binding)
            return None
        except APIError as err:  # the API server answered: this binding did not happen
            assigned = err.assigned_node
            if assigned == args.Node:
                return None  # bound there already (by an earlier binding of ours whose answer was lost)
            if assigned is not None:
                self.ledger.move(info, assigned)  # bound elsewhere: counted there until the watch says so
            else:
                self.ledger.release(uid)
            msg = f"binding pod {key} to node {args.Node} failed: {err}"
        except AnswerLost as err:  # sent, answer lost: it may have been applied
            where = await self.node_of(args)
            if where == args.Node:
                log.info(
                    "Successfully bound pod to node (the answer was lost; read back)", extra=log_fields(info, args.Node)
                )
                return None
            if where is None:
                self.ledger.mark_unknown(uid)  # keep counting it until the watch or a read-back says, or the TTL
            elif where:
                self.ledger.move(info, where)  # bound elsewhere meanwhile: counted where it is
            else:
                self.ledger.release(uid)
            msg = f"binding pod {key} to node {args.Node}: the answer was lost ({err or type(err).__name__})"
        except OSError as err:  # TransportError: never sent
            self.ledger.release(uid)
            msg = f"binding pod {key} failed: API server unreachable: {err or type(err).__name__}"
        log.warning("Binding failed", extra=log_fields(info, args.Node, err=msg))
        return msg

    async def node_of(self, args: wire.ExtenderBindingArgs) -> str | None:
        """The pod's node as the API server has it now ("" unbound or gone), None if it cannot be read."""
        try:
            where = await readback.bound_node(self.client, args.PodNamespace, args.PodName, args.PodUID)
        except readback.ReadBackError:
            return None
        return where or ""  # gone (or replaced by another pod of its name) counts as not bound

    async def settle_unknown(self, args: wire.ExtenderBindingArgs, info: PodInfo) -> str | None:
        """An earlier binding of this pod lost its answer: learn where it is before binding it again.

        None: it is not bound, go on; "" : it is bound on the requested node (success); else the error.
        """
        key = f"{args.PodNamespace}/{args.PodName}"
        where = await self.node_of(args)
        if where is None:
            return f"binding pod {key}: an earlier binding's outcome is still unknown (API server unreachable)"
        if where == "":
            self.ledger.release(info.uid)
            return None
        if where == args.Node:
            self.ledger.move(info, where)
            log.info("Successfully bound pod to node (an earlier binding, read back)", extra=log_fields(info, where))
            return ""
        self.ledger.move(info, where)
        return f"binding pod {key} to node {args.Node} failed: the pod is already bound to node {where}"


def log_fields(pod: PodInfo, node: str | None = None, **more: str) -> dict[str, str]:
    """A log line's fields, as the scheduler's: pod, node, profile (the pod's schedulerName), then ``more``."""
    out = {"pod": pod.key}
    if node is not None:
        out["node"] = node
    out["profile"] = pod.pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME
    out.update({k: v for k, v in more.items() if v})
    return out
