# examples/licensed_policy.py — serve with: kubesched extender serve --policy examples/licensed_policy.py --nodes examples/nodes.yaml
import numpy as np
from kubesched.api.node_fields import NodeFields
from kubesched.framework.interfaces import FilterPlugin, NodeScorePlugin
from kubesched.framework.policy import ManagedResource, Policy
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.framework.status import Status, Verdicts


class LicensedZone(FilterPlugin):
    """Only zones that hold a licence for the pod's product (a batch filter: all nodes at once)."""

    name = "LicensedZone"
    node_fields = NodeFields(labels=frozenset({"topology.kubernetes.io/zone"}))
    LICENSED = {"zone-a", "zone-b"}

    def filter(self, state, pod, nodes):
        codes, vocab = nodes.table.label_codes("topology.kubernetes.io/zone")
        ok_ids = [vocab[z] for z in self.LICENSED if z in vocab]
        unlicensed = ~np.isin(codes[nodes.rows], ok_ids)
        return Verdicts.from_mask(unlicensed, Status.unresolvable("node(s) are in an unlicensed zone"))


policy = Policy(
    name="licensed",
    profile=ProfileSpec(plugins=(PluginRef("LicensedZone"), PluginRef("NodeResourcesFit"), PluginRef("TaintToleration", 3))),
    managed_resources=(ManagedResource("example.com/licence", ignored_by_scheduler=True),),
    plugins=(LicensedZone,),
)
