"""The Kubernetes releases kubesched follows, and the one table of what differs between them.

The reference (`KUBERNETES_VERSION`, v1.37.2) is what a command follows when nothing selects another; v1.35.4
stays supported. A command selects a release with `--kubernetes-version` (`parse_release`), or from a connected API
server's /version (`for_server`, the nearest supported one). Semantics that differ are fields of `Release`, read
where they matter (the default profile, NodeResourcesBalancedAllocation's score, the kube-scheduler image, what a
KubeSchedulerConfiguration may say: its extension points, in-tree plugins and the gates that change plugin args);
nothing else branches on a version string. Each field names its upstream source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ETCD_VERSION = "3.6.16"

# kube-scheduler's default MultiPoint list (pkg/scheduler/apis/config/v1/default_plugins.go, with the feature
# gates on by default applied), in order, with Score weights (0: the plugin does not score).
_DEFAULT_PLUGINS_1_35: tuple[tuple[str, int], ...] = (
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
# v1.37: NodeName runs before NodeUnschedulable, and NodeDeclaredFeatures (GA, on) is appended.
_DEFAULT_PLUGINS_1_37: tuple[tuple[str, int], ...] = (
    *_DEFAULT_PLUGINS_1_35[:2],
    ("NodeName", 0),
    ("NodeUnschedulable", 0),
    *_DEFAULT_PLUGINS_1_35[4:],
    ("NodeDeclaredFeatures", 0),
)

# kube-scheduler's extension points as keys of a profile's `plugins`, in the order they run
# (staging/src/k8s.io/kube-scheduler/config/v1/types.go); framework and config read them from here.
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
# v1.37's pod-group points (gates off by default).
POD_GROUP_POINTS: tuple[str, ...] = ("placementGenerate", "placementScore", "podGroupPostFilter")
# The `plugins` fields of a v1.35 profile.
_EXTENSION_POINTS_1_35: tuple[str, ...] = (*EXTENSION_POINTS, "multiPoint")

# kube-scheduler's in-tree registry (pkg/scheduler/framework/plugins/registry.go): the names a configuration may
# enable, whether kubesched has them or not.
_IN_TREE_1_35: frozenset[str] = frozenset(
    (
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
)
_IN_TREE_1_37 = _IN_TREE_1_35 | {"DeferredPodScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount"}
# Plugins the v1 configuration refuses outright, in every release (validation.go invalidPluginsByVersion).
REMOVED_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")


@dataclass(frozen=True)
class Release:
    """One supported Kubernetes release and how kube-scheduler behaves in it, where kubesched must follow."""

    version: str  # "1.37.2"
    default_plugins: tuple[tuple[str, int], ...]
    # The `plugins` fields a profile may set, multiPoint included (kube-scheduler/config/v1/types.go; v1.37 adds
    # the pod-group points, v1.35 refuses them as unknown).
    extension_points: tuple[str, ...]
    # The plugins of kube-scheduler's in-tree registry: names a configuration may enable.
    in_tree_plugins: frozenset[str]
    # NodeResourcesBalancedAllocation scores the change the pod makes to the node's balance (v1.37,
    # noderesources/balanced_allocation.go balancedResourceScorer), not the balance with the pod alone (v1.35).
    balanced_allocation_scores_improvement: bool
    # ImageLocality counts image volumes beside containers (v1.37, imagelocality/image_locality.go sumImageScores).
    image_locality_counts_image_volumes: bool
    # Feature gates kubesched honours: (default, locked to the default) (pkg/features/kube_features.go).
    feature_gates: tuple[tuple[str, bool, bool], ...]
    # DynamicResources' PostFilter gives "no new claims to deallocate" for a pod without claims and "still not
    # schedulable" when it deallocates nothing (v1.35); v1.37 rejects without a reason (dynamicresources.go).
    dra_post_filter_names_no_claims: bool = False
    # DefaultPreemption's success says where (v1.37 preemption.go Preempt: "found a potential placement for pod
    # on node X, preempting N victims", shown after "preemption: " in the FitError); v1.35's success is silent.
    preemption_success_says_where: bool = True
    # The NodeDeclaredFeatures gate (pkg/features/kube_features.go): alpha and off in v1.35 (the plugin, enabled
    # by hand, skips every pod), GA in v1.37 (in the default profile).
    node_declared_features: bool = True
    # Default-on gates that change what plugin args may say (pkg/features/kube_features.go, config/v1 validation):
    # VolumeBinding's `shape` needs StorageCapacityScoring (beta, on in v1.37; alpha, off in v1.35), DynamicResources'
    # bindingTimeout needs DRADeviceBindingConditions and DRAResourceClaimDeviceStatus (v1.37), and v1.37's
    # NodeResourcesFit checks that type RequestedToCapacityRatio sets requestedToCapacityRatio (only it may).
    storage_capacity_scoring: bool = True
    dra_binding_timeout: bool = True
    fit_strategy_shape_rules: bool = True
    # How kube-scheduler names a pending pod's events in its metrics' `event` label (framework/types.go: the
    # EventResource "UnschedulablePod" of v1.35 became "UnscheduledPod": `UnscheduledPodAdd`, ...).
    unscheduled_pod: str = "UnscheduledPod"

    @property
    def minor(self) -> str:
        """``1.37``."""
        return self.version.rsplit(".", 1)[0]

    @property
    def kube_scheduler_image(self) -> str:
        return f"registry.k8s.io/kube-scheduler:v{self.version}"


RELEASES: tuple[Release, ...] = (
    Release(
        version="1.35.4",
        default_plugins=_DEFAULT_PLUGINS_1_35,
        extension_points=_EXTENSION_POINTS_1_35,
        in_tree_plugins=_IN_TREE_1_35,
        balanced_allocation_scores_improvement=False,
        image_locality_counts_image_volumes=False,
        feature_gates=(("OpportunisticBatching", True, False),),
        dra_post_filter_names_no_claims=True,
        preemption_success_says_where=False,
        node_declared_features=False,
        storage_capacity_scoring=False,
        dra_binding_timeout=False,
        fit_strategy_shape_rules=False,
        unscheduled_pod="UnschedulablePod",
    ),
    Release(
        version="1.37.2",
        default_plugins=_DEFAULT_PLUGINS_1_37,
        extension_points=(*_EXTENSION_POINTS_1_35, *POD_GROUP_POINTS),
        in_tree_plugins=_IN_TREE_1_37,
        balanced_allocation_scores_improvement=True,
        image_locality_counts_image_volumes=True,
        feature_gates=(("OpportunisticBatching", True, False),),
    ),
)
REFERENCE = RELEASES[-1]
# The reference release: semantics, messages, the kube-scheduler image and the control plane the tests build.
KUBERNETES_VERSION = REFERENCE.version
SUPPORTED = tuple(r.version for r in RELEASES)

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


def _supported_text() -> str:
    return ", ".join(f"{r.minor} (v{r.version})" for r in RELEASES)


def parse_release(text: str) -> Release:
    """The release ``text`` names: ``1.37``, ``1.37.2``, ``v1.35.4``, ``v1.35``; ValueError names the supported ones.

    A minor alone selects its supported patch; a patch must be the supported one (its messages are the ones
    followed)."""
    m = _VERSION.match(text.strip())
    if m is not None:
        minor = f"{m.group(1)}.{m.group(2)}"
        for r in RELEASES:
            if r.minor == minor and (m.group(3) is None or r.version == f"{minor}.{m.group(3)}"):
                return r
    raise ValueError(f"unsupported Kubernetes version {text!r}: supported are {_supported_text()}")


def for_server(major: str, minor: str) -> tuple[Release, str | None]:
    """The release to follow against an API server whose /version says ``major``.``minor``, and a warning when it
    is not a supported one: the nearest supported minor (ties go to the newer one)."""
    try:
        # /version's minor may carry a suffix ("37+" on some distributions).
        want = (int(re.sub(r"\D.*$", "", major.strip())), int(re.sub(r"\D.*$", "", minor.strip())))
    except ValueError:
        return (
            REFERENCE,
            f"API server reports version {major!r}.{minor!r}: following the reference v{REFERENCE.version}",
        )
    for r in RELEASES:
        if r.minor == f"{want[0]}.{want[1]}":
            return r, None

    def distance(r: Release) -> tuple[int, int]:
        got = tuple(int(p) for p in r.minor.split("."))
        return abs((got[0] - want[0]) * 1000 + got[1] - want[1]), -got[1]

    nearest = min(RELEASES, key=distance)
    return nearest, (
        f"API server is Kubernetes {want[0]}.{want[1]}, not a supported release ({_supported_text()}): "
        f"following the nearest, v{nearest.version}"
    )
