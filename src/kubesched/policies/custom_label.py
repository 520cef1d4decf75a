"""The `custom-label` policy (benchmarks/extender_vs_go/POLICY.md, shared with the Go reference extender):
pods go only to nodes labelled `custom`, and the extender manages `example.com/custom-resource`.

filter, first failing rule wins: no `custom` label → unresolvable; cordoned → unresolvable;
too little `example.com/custom-resource` → FailedNodes (preemption may help). prioritize:
10 × allocatable / the largest allocatable among the candidates.
"""

from __future__ import annotations

from kubesched.framework.policy import ManagedResource, Policy
from kubesched.framework.profile import PluginRef, ProfileSpec
from kubesched.plugins.extended_resource_capacity import ExtendedResourceCapacity
from kubesched.plugins.extended_resource_fit import ExtendedResourceFit
from kubesched.plugins.required_label import RequiredLabel

RESOURCE = "example.com/custom-resource"


def policy() -> Policy:
    return Policy(
        name="custom-label",
        profile=ProfileSpec(
            plugins=(
                PluginRef("RequiredLabel"),
                PluginRef("NodeUnschedulable"),
                PluginRef("ExtendedResourceFit"),
                PluginRef("ExtendedResourceCapacity", weight=1),
            ),
            plugin_args={
                "RequiredLabel": {"label": "custom"},
                "ExtendedResourceFit": {"resource": RESOURCE},
                "ExtendedResourceCapacity": {"resource": RESOURCE},
            },
        ),
        managed_resources=(ManagedResource(RESOURCE, ignored_by_scheduler=True),),
        plugins=(RequiredLabel, ExtendedResourceFit, ExtendedResourceCapacity),
        description="nodes labelled `custom`, with enough example.com/custom-resource",
    )
