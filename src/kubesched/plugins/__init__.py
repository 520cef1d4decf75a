"""kube-scheduler's in-tree plugins, re-implemented over node batches, and the default profile.

To add a plugin: write its module, list its class in `IN_TREE`. If it belongs to upstream's default
profile it is already in each release's `default_plugins` (`kubesched.versions`) and joins it by itself.
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
from kubesched.plugins.node_declared_features import NodeDeclaredFeatures
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
from kubesched.versions import REFERENCE, Release

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
    NodeDeclaredFeatures,
)

# kube-scheduler's default MultiPoint list of the reference release, in order, with Score weights (0: the
# plugin does not score). The order is the evaluation order. Each release's is in `kubesched.versions`.
UPSTREAM_DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = REFERENCE.default_plugins


def in_tree() -> Registry:
    """A new registry holding the in-tree plugins."""
    return Registry(IN_TREE)


def default_profile_plugins(registry: Registry | None = None, release: Release = REFERENCE) -> tuple[PluginRef, ...]:
    """``release``'s default profile plugins, in upstream order and weights, limited to those ``registry`` has."""
    known = registry if registry is not None else in_tree()
    return tuple(PluginRef(name, weight) for name, weight in release.default_plugins if name in known)
