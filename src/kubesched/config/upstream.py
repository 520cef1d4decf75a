"""What a KubeSchedulerConfiguration may say, per kube-scheduler release: extension points, in-tree plugins, gates.

From each release's `kube-scheduler/config/v1/types.go`, `pkg/scheduler/framework/plugins/registry.go` and
`pkg/features/kube_features.go`. A version is a `"1.35"`-style string; `REFERENCE` is the one followed by default.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.versions import EXTENSION_POINTS, POD_GROUP_POINTS

REFERENCE = "1.37"

_POINTS_135 = EXTENSION_POINTS
_PLUGINS_135 = (
    "PrioritySort",
    "DefaultBinder",
    "DefaultPreemption",
    "DynamicResources",
    "GangScheduling",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeDeclaredFeatures",
    "NodeName",
    "NodePorts",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "NodeVolumeLimits",
    "PodTopologySpread",
    "SchedulingGates",
    "TaintToleration",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
)


@dataclass(frozen=True)
class Release:
    """The configuration API of one kube-scheduler minor release."""

    version: str
    # Keys of a profile's `plugins` besides multiPoint, in the order upstream lists them.
    extension_points: tuple[str, ...]
    # Plugins of kube-scheduler's in-tree registry.
    plugins: frozenset[str]
    # Default-on feature gates that change what plugin args may say.
    storage_capacity_scoring: bool
    dra_binding_timeout: bool
    # v1.37: type RequestedToCapacityRatio needs requestedToCapacityRatio, other types must not set it.
    fit_strategy_shape_rules: bool


RELEASES: dict[str, Release] = {
    "1.35": Release(
        "1.35",
        _POINTS_135,
        frozenset(_PLUGINS_135),
        storage_capacity_scoring=False,
        dra_binding_timeout=False,
        fit_strategy_shape_rules=False,
    ),
    "1.37": Release(
        "1.37",
        (*_POINTS_135, *POD_GROUP_POINTS),
        frozenset((*_PLUGINS_135, "DeferredPodScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount")),
        storage_capacity_scoring=True,
        dra_binding_timeout=True,
        fit_strategy_shape_rules=True,
    ),
}
# Plugins v1 refuses outright (validation.go invalidPluginsByVersion).
REMOVED_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")


def release(version: str | tuple[int, int] = REFERENCE) -> Release:
    """The release ``version`` names ("1.37", "v1.37.2", (1, 37)); ValueError names the supported ones."""
    if isinstance(version, tuple):
        key = f"{version[0]}.{version[1]}"
    else:
        key = ".".join(version.removeprefix("v").split(".")[:2])
    found = RELEASES.get(key)
    if found is None:
        raise ValueError(f"kube-scheduler {version}: not supported (supported: {', '.join(RELEASES)})")
    return found
