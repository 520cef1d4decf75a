# examples/gpu_policy.py — GPU placement, served two ways from the same plugin classes:
#   extender:  kubesched extender serve --policy examples/gpu_policy.py --nodes examples/gpu-cluster.yaml
#   scheduler: kubesched scheduler run --config examples/gpu-scheduler-config.yaml --cluster examples/gpu-cluster.yaml
import msgspec

from kubesched import plugin
from kubesched.plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs

MODEL = "gpu.example.com/model"  # a pod annotation (what the pod wants) and a node label (what the node has)
GPU = "nvidia.com/gpu"


class GpuModel(plugin.NodeFilterPlugin, plugin.SignPlugin):
    """A pod annotated gpu.example.com/model=M runs only on nodes labelled gpu.example.com/model=M.

    Written one node at a time (NodeFilterPlugin). Pods without the annotation pass everywhere.
    """

    name = "GpuModel"
    node_fields = plugin.NodeFields(labels=frozenset({MODEL}))  # the extender decodes only this label

    def filter_node(self, state, pod, node):
        wanted = (pod.pod.metadata.annotations or {}).get(MODEL)
        if wanted is None:
            return plugin.SUCCESS
        if (node.node.metadata.labels or {}).get(MODEL) == wanted:
            return plugin.SUCCESS
        return plugin.Status.unresolvable(f"node(s) didn't have GPU model {wanted}")

    def events_to_register(self):
        # A pod it rejected is retried when a node comes or changes and now has the model (its own verdict).
        return [plugin.ClusterEventWithHint(plugin.NODE_CHANGE, self.passes_node)]

    def sign(self, pod):
        return (("gpu-model", (pod.pod.metadata.annotations or {}).get(MODEL)),)

    def signs_statically(self):
        return False  # the signature reads an annotation, not only the spec, labels and namespace


class MostFreeGpusArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    resource: str = GPU

    def __post_init__(self):
        if "/" not in self.resource:
            raise ValueError(f"resource: expected an extended resource name, got {self.resource!r}")


class MostFreeGpus(plugin.ScorePlugin, plugin.SignPlugin):
    """The nodes with the most free GPUs first: a batch score over the node table's columns."""

    name = "MostFreeGpus"
    Args = MostFreeGpusArgs

    def __init__(self, args=None, handle=None):
        super().__init__(args or MostFreeGpusArgs(), handle)
        self.resource = self.args.resource
        self.node_fields = plugin.NodeFields(resources=frozenset({self.resource}))

    def score(self, state, pod, nodes):
        return nodes.table.free(self.resource)[nodes.rows].clip(min=0)  # allocatable - requested, per node

    def normalize(self, state, pod, nodes, scores):
        return plugin.default_normalize_score(scores)  # the most free becomes 100, the others in proportion

    def sign(self, pod):
        return ()  # the score depends on the node only: every pod may share a batch


class FitsResources(plugin.FilterPlugin, plugin.SignPlugin):
    """NodeResourcesFit's Filter without its Score (kube-scheduler already scores by allocation)."""

    name = "FitsResources"
    Args = NodeResourcesFitArgs

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self.fit = NodeResourcesFit(args, handle)
        self.node_fields = self.fit.node_fields

    def filter(self, state, pod, nodes):
        return self.fit.filter(state, pod, nodes)

    def sign(self, pod):
        return self.fit.sign(pod)


# For the scheduler's `pluginModules` (a list of classes is fine there).
PLUGINS = [GpuModel, MostFreeGpus]

policy = plugin.Policy(
    name="gpu",
    profile=plugin.ProfileSpec(
        plugins=(
            plugin.PluginRef("GpuModel"),
            plugin.PluginRef("FitsResources"),
            plugin.PluginRef("MostFreeGpus", weight=1),
        ),
        plugin_args={"MostFreeGpus": {"resource": GPU}},
    ),
    # kube-scheduler calls the extender only for pods that request a GPU, and leaves counting them to it.
    managed_resources=(plugin.ManagedResource(GPU, ignored_by_scheduler=True),),
    plugins=(GpuModel, FitsResources, MostFreeGpus),
    description="GPU model from the pod's annotation; most free GPUs first",
)
