# examples/licensed_policy.py — serve with: kubesched extender serve --policy examples/licensed_policy.py --nodes examples/nodes.yaml
import numpy as np

from kubesched import plugin

ZONE = "topology.kubernetes.io/zone"


class LicensedZone(plugin.FilterPlugin):
    """Only zones that hold a licence for the pod's product (a batch filter: all nodes at once)."""

    name = "LicensedZone"
    node_fields = plugin.NodeFields(labels=frozenset({ZONE}))
    LICENSED = {"zone-a", "zone-b"}

    def filter(self, state, pod, nodes):
        codes, vocab = nodes.table.label_codes(ZONE)  # per row: the zone's id, -1 where unlabelled
        ok_ids = [vocab[z] for z in self.LICENSED if z in vocab]
        unlicensed = ~np.isin(codes[nodes.rows], ok_ids)
        return plugin.Verdicts.from_mask(unlicensed, plugin.Status.unresolvable("node(s) are in an unlicensed zone"))


policy = plugin.Policy(
    name="licensed",
    profile=plugin.ProfileSpec(
        plugins=(
            plugin.PluginRef("LicensedZone"),
            plugin.PluginRef("NodeResourcesFit"),
            plugin.PluginRef("TaintToleration", weight=3),
        )
    ),
    managed_resources=(plugin.ManagedResource("example.com/licence", ignored_by_scheduler=True),),
    plugins=(LicensedZone,),
)
