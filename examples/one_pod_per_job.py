# examples/one_pod_per_job.py — a plugin that reads the pods on a node: at most one pod of a Job per node.
#   the extender:   kubesched extender serve --policy examples/one_pod_per_job.py ...   (pods watched: --watch-pods auto)
#   the scheduler:  pluginModules: ["one_pod_per_job.py:OnePodPerJob"], filter enabled: [{name: OnePodPerJob}]
# tests/integration/test_pod_aware_modes.py runs it in all three modes and gets the same placements.
from kubesched import plugin

JOB = "batch.kubernetes.io/job-name"  # the label the Job controller puts on its pods


class OnePodPerJob(plugin.NodeFilterPlugin, plugin.SignPlugin):
    """At most one pod of a Job per node: it reads node.pods, so the extender must watch the cluster's pods."""

    name = "OnePodPerJob"

    def filter_node(self, state, pod, node):
        job = pod.labels.get(JOB)
        if job and any(p.labels.get(JOB) == job and p.namespace == pod.namespace for p in node.pods.values()):
            return plugin.Status.unschedulable(f"node(s) already run a pod of job {job}")
        return plugin.SUCCESS

    def events_to_register(self):
        return [
            plugin.ClusterEventWithHint(plugin.NODE_ADD),  # a new node runs no pod of the Job
            plugin.ClusterEventWithHint(plugin.POD_DELETE, self.same_job),  # a pod of the Job went away
        ]

    def same_job(self, pod, event, other):
        return other.labels.get(JOB) == pod.labels.get(JOB)

    def sign(self, pod):
        return None  # the verdicts depend on other pods: never batched


policy = plugin.Policy(
    name="one-pod-per-job",
    profile=plugin.ProfileSpec(plugins=(plugin.PluginRef("OnePodPerJob"),)),
    plugins=(OnePodPerJob,),
)
