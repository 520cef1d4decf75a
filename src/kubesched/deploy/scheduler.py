"""Custom-scheduler mode: `kubesched scheduler run` with its KubeSchedulerConfiguration in a ConfigMap, and the
user's plugin modules in a second one."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.config.render import dump, render_config
from kubesched.config.v1 import LeaderElectionV1, ProfileV1, SchedulerConfigV1
from kubesched.deploy import k8s
from kubesched.deploy.k8s import Obj
from kubesched.deploy.plan import Plan, SchedulerPlan

SCHEDULER = "kubesched-scheduler"  # Deployment, ServiceAccount, ConfigMap and Lease
PLUGINS = f"{SCHEDULER}-plugins"  # ConfigMap of the user's plugin modules
PORT = 10251
CONFIG_DIR = "/etc/kubesched/scheduler"
PLUGINS_DIR = "/etc/kubesched/plugins"


def scheduler_config(plan: Plan, sched: SchedulerPlan) -> SchedulerConfigV1:
    """One profile; the Lease in our namespace, where our Role lets the scheduler hold it."""
    lease = LeaderElectionV1(leader_elect=True, resource_name=SCHEDULER, resource_namespace=plan.namespace)
    return SchedulerConfigV1(profiles=(ProfileV1(sched.scheduler_name),), leader_election=lease)


def config_document(plan: Plan, sched: SchedulerPlan) -> dict[str, Any]:
    """The configuration deployed: the user's (profiles and pluginConfig as given), with leader election on the
    Lease our Role grants; or one profile named `scheduler_name`."""
    if sched.config is None:
        return render_config(scheduler_config(plan, sched))
    doc = copy.deepcopy(dict(sched.config))
    election = dict(doc.get("leaderElection") or {})
    election.setdefault("leaderElect", True)
    election.update(resourceName=SCHEDULER, resourceNamespace=plan.namespace)
    doc["leaderElection"] = election
    if not doc.get("profiles"):
        doc["profiles"] = [{"schedulerName": sched.scheduler_name}]
    return doc


def rules() -> list[Obj]:
    """What the scheduler calls: watches, binding, failure reports, events, preemption."""
    read = ["get", "list", "watch"]
    return [
        k8s.rule("", ["pods"], [*read, "delete"]),  # delete: preemption evicts the victims
        k8s.rule("", ["pods/binding"], ["create"]),
        k8s.rule("", ["pods/status"], ["patch"]),  # PodScheduled=False, nominatedNodeName, DisruptionTarget
        k8s.rule("", ["nodes", "namespaces"], read),
        k8s.rule("policy", ["poddisruptionbudgets"], read),
        # PodTopologySpread's default constraints: the selectors of what selects a pod.
        k8s.rule("", ["services", "replicationcontrollers"], read),
        k8s.rule("apps", ["replicasets", "statefulsets"], read),
        # The volume plugins: VolumeBinding's PreBind patches a PV's claimRef or a claim's selected node.
        k8s.rule("", ["persistentvolumes", "persistentvolumeclaims"], [*read, "patch"]),
        k8s.rule("storage.k8s.io", ["storageclasses", "csinodes"], read),
        k8s.rule("events.k8s.io", ["events"], ["create", "patch"]),
        # DynamicResources: what it allocates from, and the claims it allocates (finalizer, then status).
        k8s.rule("resource.k8s.io", ["deviceclasses", "resourceslices"], read),
        k8s.rule("resource.k8s.io", ["resourceclaims"], [*read, "patch"]),
        k8s.rule("resource.k8s.io", ["resourceclaims/status"], ["patch"]),
    ]


def objects(plan: Plan, sched: SchedulerPlan) -> list[Obj]:
    ns, component, account = plan.namespace, "scheduler", (plan.namespace, SCHEDULER)
    cluster_name = k8s.global_name(SCHEDULER, ns)
    # create cannot be limited to a name (the object does not exist yet); get and update can.
    lease = [
        k8s.rule("coordination.k8s.io", ["leases"], ["create"]),
        k8s.rule("coordination.k8s.io", ["leases"], ["get", "update"], [SCHEDULER]),
    ]
    config = k8s.config_map(SCHEDULER, ns, component, {"config.yaml": dump(config_document(plan, sched))})
    args = ["scheduler", "run", "--config", f"{CONFIG_DIR}/config.yaml", "--in-cluster"]
    args += ["--listen", f"0.0.0.0:{PORT}", "--log-format", "json"]
    # Plugins from the image only, unless files ship in a ConfigMap (docs/security.md: who may edit it runs code).
    args += ["--plugins-from", "files" if sched.plugin_files else "image"]
    volumes = [k8s.config_volume("config", SCHEDULER, CONFIG_DIR)]
    out = [
        k8s.service_account(SCHEDULER, ns, component, token=True),
        k8s.cluster_role(cluster_name, component, rules()),
        k8s.binding(cluster_name, component, ("ClusterRole", cluster_name), account),
        k8s.role(SCHEDULER, ns, component, lease),
        k8s.binding(SCHEDULER, component, ("Role", SCHEDULER), account, ns),
        config,
    ]
    if sched.plugin_files:
        out.append(k8s.config_map(PLUGINS, ns, component, sched.plugin_files))
        volumes.append(k8s.config_volume("plugins", PLUGINS, PLUGINS_DIR))
    container = k8s.Container("scheduler", plan.image, args, "http", PORT, "HTTP", volumes=[*volumes, k8s.TMP])
    # No inputs hash: the scheduler reloads its config file and the plugin files it loads when they change.
    out.append(k8s.deployment(SCHEDULER, ns, component, container, service_account=SCHEDULER, token=True))
    return out
