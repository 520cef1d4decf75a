"""What pending pods ask of the cluster: node selectors and affinity, tolerations, inter-pod (anti-)affinity,
topology spread; drawn by `generate`'s pod maker, over the scenario's nodes and namespaces."""

from __future__ import annotations

import random
from typing import Any

from kubesched.testing.differential.names import APPS, CORES, DISK, HOST, RACK, TAINT_KEYS, TOPOLOGY_KEYS, ZONE

Manifest = dict[str, Any]


class Constraints:
    """Draws constraints with ``r`` over the scenario's nodes (names) and namespaces."""

    def __init__(self, r: random.Random, prefix: str, node_names: list[str], ns_names: list[str]) -> None:
        self.r, self.prefix, self.node_names, self.ns_names = r, prefix, node_names, ns_names

    def node_selector(self) -> dict[str, str]:
        r = self.r
        key = r.choice((ZONE, DISK, RACK, HOST))
        value = {ZONE: ("z1", "z2", "z3"), DISK: ("ssd", "hdd"), RACK: ("r1", "r2"), HOST: tuple(self.node_names)}[key]
        return {key: r.choice(value)}

    def expression(self) -> Manifest:
        r = self.r
        op = r.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
        if op in ("Gt", "Lt"):
            return {"key": CORES, "operator": op, "values": [r.choice(("4", "8", "12"))]}
        key = r.choice((ZONE, DISK, RACK))
        values = {ZONE: ["z1", "z2", "z3"], DISK: ["ssd", "hdd"], RACK: ["r1", "r2"]}[key]
        if op in ("Exists", "DoesNotExist"):
            return {"key": key, "operator": op}
        return {"key": key, "operator": op, "values": r.sample(values, r.randint(1, 2))}

    def term(self) -> Manifest:
        r = self.r
        term: Manifest = {"matchExpressions": [self.expression() for _ in range(r.randint(1, 2))]}
        if r.random() < 0.15:
            term["matchFields"] = [
                {"key": "metadata.name", "operator": r.choice(("In", "NotIn")), "values": [r.choice(self.node_names)]}
            ]
        return term

    def node_affinity(self) -> Manifest:
        r = self.r
        out: Manifest = {}
        if r.random() < 0.7:
            terms = [self.term() for _ in range(r.randint(1, 2))]
            out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
        if r.random() < 0.6 or not out:
            out["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": r.randint(1, 100), "preference": self.term()} for _ in range(r.randint(1, 2))
            ]
        return out

    def toleration(self) -> Manifest:
        r = self.r
        if r.random() < 0.1:
            return {"operator": "Exists"}
        tol: Manifest = {"key": r.choice(TAINT_KEYS)}
        if r.random() < 0.5:
            tol["operator"] = "Exists"
        else:
            tol["operator"] = "Equal"
            tol["value"] = r.choice(("x", "y"))
        if r.random() < 0.7:
            tol["effect"] = r.choice(("NoSchedule", "NoExecute", "PreferNoSchedule"))
            if tol["effect"] == "NoExecute" and r.random() < 0.5:
                tol["tolerationSeconds"] = 300
        return tol

    def selector(self) -> Manifest:
        r = self.r
        if r.random() < 0.6:
            return {"matchLabels": {"app": r.choice(APPS)}}
        op = r.choice(("In", "NotIn", "Exists"))
        expr: Manifest = {"key": r.choice(("app", "tier")), "operator": op}
        if op != "Exists":
            expr["values"] = r.sample(["web", "db", "cache", "fe", "be"], 2)
        return {"matchExpressions": [expr]}

    def affinity_term(self, pod: Manifest) -> Manifest:
        r = self.r
        term: Manifest = {"labelSelector": self.selector(), "topologyKey": r.choice(TOPOLOGY_KEYS)}
        which = r.random()
        if which < 0.25:
            term["namespaces"] = r.sample(self.ns_names, r.randint(1, 2))
        elif which < 0.45:
            term["namespaceSelector"] = {"matchLabels": {"team": r.choice(("a", "b"))}}
        elif which < 0.55:
            term["namespaceSelector"] = {"matchLabels": {f"{self.prefix}-diff": "yes"}}  # all of the scenario's
        elif which < 0.6:
            term["namespaceSelector"] = {"matchLabels": {"team": r.choice(("a", "b"))}}  # with namespaces: either
            term["namespaces"] = [r.choice(self.ns_names)]
        if r.random() < 0.15 and "version" in pod["metadata"]["labels"]:
            term["matchLabelKeys"] = ["version"]
        return term

    def pod_affinity(self, pod: Manifest) -> Manifest:
        r = self.r
        out: Manifest = {}
        if r.random() < 0.6:
            out["requiredDuringSchedulingIgnoredDuringExecution"] = [self.affinity_term(pod)]
        if r.random() < 0.6 or not out:
            out["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": r.randint(1, 100), "podAffinityTerm": self.affinity_term(pod)}
            ]
        return out

    def spread(self, pod: Manifest) -> Manifest:
        r = self.r
        c: Manifest = {
            "maxSkew": r.randint(1, 2),
            "topologyKey": r.choice(TOPOLOGY_KEYS),
            "whenUnsatisfiable": r.choice(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": {"app": pod["metadata"]["labels"]["app"]}},
        }
        if c["whenUnsatisfiable"] == "DoNotSchedule" and r.random() < 0.3:
            c["minDomains"] = r.randint(2, 4)
        if r.random() < 0.3:
            c["nodeAffinityPolicy"] = r.choice(("Honor", "Ignore"))
        if r.random() < 0.3:
            c["nodeTaintsPolicy"] = r.choice(("Honor", "Ignore"))
        if r.random() < 0.2 and "tier" in pod["metadata"]["labels"]:
            c["matchLabelKeys"] = ["tier"]
        return c
