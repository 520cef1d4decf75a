"""kube-scheduler's in-tree plugins, re-implemented over node batches, and the default profile.

To add a plugin: write its module, list its class in `IN_TREE`. If it belongs to upstream's
default profile it is already in `UPSTREAM_DEFAULT_PLUGINS` and joins the default profile by itself.
"""

from __future__ import annotations

from kubesched.framework.interfaces import Plugin
from kubesched.framework.profile import PluginRef
from kubesched.framework.registry import Registry
from kubesched.plugins.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.plugins.default_binder import DefaultBinder
from kubesched.plugins.default_preemption import DefaultPreemption
from kubesched.plugins.dynamic_resources import DynamicResources
from kubesched.plugins.image_locality import ImageLocality
from kubesched.plugins.inter_pod_affinity import InterPodAffinity
from kubesched.plugins.node_affinity import NodeAffinity
from kubesched.plugins.node_name import NodeName
from kubesched.plugins.node_ports import NodePorts
from kubesched.plugins.node_resources_fit import NodeResourcesFit
from kubesched.plugins.node_unschedulable import NodeUnschedulable
from kubesched.plugins.node_volume_limits import NodeVolumeLimits
from kubesched.plugins.pod_topology_spread import PodTopologySpread
from kubesched.plugins.priority_sort import PrioritySort
from kubesched.plugins.scheduling_gates import SchedulingGates
from kubesched.plugins.taint_toleration import TaintToleration
from kubesched.plugins.volume_binding import VolumeBinding
from kubesched.plugins.volume_restrictions import VolumeRestrictions
from kubesched.plugins.volume_zone import VolumeZone

IN_TREE: tuple[type[Plugin], ...] = (
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    InterPodAffinity,
    DynamicResources,
    DefaultPreemption,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
)

# kube-scheduler v1.35.4's default MultiPoint list (apis/config/v1/default_plugins.go), in order,
# with Score weights (0: the plugin does not score). The order is the evaluation order.
UPSTREAM_DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 1),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)


def in_tree() -> Registry:
    """A new registry holding the in-tree plugins."""
    return Registry(IN_TREE)


def default_profile_plugins(registry: Registry | None = None) -> tuple[PluginRef, ...]:
    """The default profile's plugins, in upstream order and weights, limited to those ``registry`` has."""
    known = registry if registry is not None else in_tree()
    return tuple(PluginRef(name, weight) for name, weight in UPSTREAM_DEFAULT_PLUGINS if name in known)
