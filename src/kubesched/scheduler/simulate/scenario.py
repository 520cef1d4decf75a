"""A scenario file: ordered steps of declarative generators, read within bounds (docs/simulate.md).

Read with the configuration files' YAML reader (`config.yamlin`: duplicate keys, nesting depth, aliases
expanded and recursive ones refused), then every field is checked before anything is generated: each
problem names its field path (``steps[2].addPods.replicas: 5000000 exceeds the limit 100000``), so a
hostile file costs at most its bounded size to read and nothing to run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from kubesched.api.core import LabelSelector, Node
from kubesched.config import yamlin
from kubesched.core.quantity import QuantityError, to_milli
from kubesched.errors import ConfigurationError, FieldError, child, index

API_VERSION = "kubesched.io/v1alpha1"
KIND = "Scenario"

MAX_FILE_BYTES = yamlin.MAX_BYTES  # 4 MiB: a scenario is generators, not objects
MAX_STEPS = 1_000
MAX_REPLICAS = 100_000  # per addPods
MAX_NODE_COUNT = 20_000  # per addNodes
MAX_TOTAL_PODS = 200_000  # generated over the whole scenario
MAX_TOTAL_NODES = 50_000
MAX_NAMES = 10_000  # names listed by one removeNodes, drain or deletePods
MAX_GENERATORS = 100  # addNodes or addPods entries in one step
MAX_AMOUNT = 10**15  # of any resource in a template (cpu in cores): a petabyte of memory, a quadrillion GPUs
ACTIONS = ("drain", "removeNodes", "deletePods", "addNodes", "replayPending", "addPods")  # the order applied


class ScenarioError(ConfigurationError):
    """A scenario file that cannot be used; ``errors`` names each field."""


@dataclass(frozen=True)
class Selection:
    """Nodes or pods by name and/or by label selector (either matches)."""

    names: tuple[str, ...] = ()
    selector: LabelSelector | None = None
    namespace: str | None = None  # deletePods: only pods of this namespace (names may be NAMESPACE/NAME)

    def matches(self, name: str, labels: dict[str, str] | None) -> bool:
        return name in self.names or (self.selector is not None and selector_matches(self.selector, labels or {}))


@dataclass(frozen=True)
class AddNodes:
    count: int
    prefix: str
    template: Node
    zones: tuple[str, ...] = ()
    used: dict[str, float] = field(default_factory=dict)  # resource ("*": every one) -> fraction requested
    path: str = ""  # its field path, for the errors applying it finds


@dataclass(frozen=True)
class AddPods:
    replicas: int
    name: str
    namespace: str
    template: dict[str, Any]  # the pod's JSON, defaulted (as the API server would) when generated
    path: str  # its field path, for the errors defaulting finds


@dataclass(frozen=True)
class Step:
    index: int
    name: str
    drain: Selection | None = None
    remove_nodes: Selection | None = None
    delete_pods: Selection | None = None
    add_nodes: tuple[AddNodes, ...] = ()
    replay_pending: bool = False
    add_pods: tuple[AddPods, ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[Step, ...]


def selector_matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics (an empty selector matches everything)."""
    for k, v in (selector.match_labels or {}).items():
        if labels.get(k) != v:
            return False
    for req in selector.match_expressions or ():
        has = req.key in labels
        values = req.values or []
        if req.operator == "In" and not (has and labels[req.key] in values):
            return False
        if req.operator == "NotIn" and has and labels[req.key] in values:
            return False
        if req.operator == "Exists" and not has:
            return False
        if req.operator == "DoesNotExist" and has:
            return False
    return True


def read_scenario(path: Path) -> Scenario:
    """The scenario of ``path``; ScenarioError lists every problem (the file's size is checked before reading)."""
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise ScenarioError(f"{path}: is {size} bytes; a scenario file is limited to {MAX_FILE_BYTES}")
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(f"{path}: larger than {MAX_FILE_BYTES} bytes, the limit of a scenario file")
    try:
        text = data.decode()
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {err.start})") from None
    doc, problems = yamlin.load(text)
    if problems:
        raise ScenarioError(errors=problems)
    return parse(doc)


def parse(doc: object) -> Scenario:
    """A scenario from its decoded document; ScenarioError lists every problem with its field path."""
    p = _Parser()
    scenario = p.scenario(doc)
    if p.errors:
        raise ScenarioError(errors=p.errors)
    return scenario


class _Parser:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.total_pods = 0
        self.total_nodes = 0

    def fail(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path or yamlin.DOCUMENT, message))

    def mapping(self, value: object, path: str, known: tuple[str, ...]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping, got {_kind(value)}")
            return None
        for key in value:
            if key not in known:
                self.fail(child(path, str(key)), f"unknown field (expected one of {', '.join(known)})")
        return value

    def count(self, value: object, path: str, limit: int, minimum: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, got {_kind(value)}")
            return 0
        if value < minimum:
            self.fail(path, f"{value} must be at least {minimum}")
            return 0
        if value > limit:
            self.fail(path, f"{value} exceeds the limit {limit}")
            return 0
        return value

    def name(self, value: object, path: str) -> str:
        if not isinstance(value, str) or not value or len(value) > 200:
            self.fail(path, "must be a non-empty string of at most 200 characters")
            return ""
        return value

    def scenario(self, doc: object) -> Scenario:
        top = self.mapping(doc, "", ("apiVersion", "kind", "metadata", "steps"))
        if top is None:
            return Scenario("", ())
        if top.get("apiVersion", API_VERSION) != API_VERSION:
            self.fail("apiVersion", f"must be {API_VERSION}, got {top.get('apiVersion')!r}")
        if top.get("kind", KIND) != KIND:
            self.fail("kind", f"must be {KIND}, got {top.get('kind')!r}")
        name = ""
        meta = top.get("metadata")
        if meta is not None and (m := self.mapping(meta, "metadata", ("name",))) is not None:
            name = self.name(m.get("name", "scenario"), "metadata.name")
        steps = top.get("steps")
        if not isinstance(steps, list) or not steps:
            self.fail("steps", f"must be a non-empty list of steps, got {_kind(steps)}")
            return Scenario(name, ())
        if len(steps) > MAX_STEPS:
            self.fail("steps", f"{len(steps)} steps exceed the limit {MAX_STEPS}")
            return Scenario(name, ())
        out = [self.step(s, i) for i, s in enumerate(steps)]
        return Scenario(name, tuple(s for s in out if s is not None))

    def step(self, value: object, i: int) -> Step | None:
        path = index("steps", i)
        s = self.mapping(value, path, ("name", *ACTIONS))
        if s is None:
            return None
        if not any(a in s for a in ACTIONS):
            self.fail(path, f"does nothing: give at least one of {', '.join(ACTIONS)}")
        name = self.name(s["name"], child(path, "name")) if "name" in s else f"step {i}"
        replay = s.get("replayPending", False)
        if not isinstance(replay, bool):
            self.fail(child(path, "replayPending"), f"must be true or false, got {_kind(replay)}")
            replay = False
        return Step(
            i,
            name,
            drain=self.selection(s, "drain", path, pods=False),
            remove_nodes=self.selection(s, "removeNodes", path, pods=False),
            delete_pods=self.selection(s, "deletePods", path, pods=True),
            add_nodes=tuple(n for at, v in self.entries(s, "addNodes", path) if (n := self.add_nodes(v, at))),
            replay_pending=replay,
            add_pods=tuple(p for at, v in self.entries(s, "addPods", path) if (p := self.add_pods(v, at))),
        )

    def entries(self, s: dict[str, Any], key: str, path: str) -> list[tuple[str, object]]:
        """One generator (a mapping) or a list of them."""
        if key not in s:
            return []
        value, at = s[key], child(path, key)
        if isinstance(value, list):
            if len(value) > MAX_GENERATORS:
                self.fail(at, f"{len(value)} entries exceed the limit {MAX_GENERATORS}")
                return []
            return [(index(at, j), v) for j, v in enumerate(value)]
        return [(at, value)]

    def selection(self, s: dict[str, Any], key: str, path: str, pods: bool) -> Selection | None:
        if key not in s:
            return None
        at = child(path, key)
        known = ("names", "selector", "namespace") if pods else ("names", "selector")
        value = s[key]
        if isinstance(value, (str, list)):  # a name or a list of names alone
            value = {"names": [value] if isinstance(value, str) else value}
        m = self.mapping(value, at, known)
        if m is None:
            return None
        names = m.get("names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            self.fail(child(at, "names"), "must be a list of names")
            names = []
        elif len(names) > MAX_NAMES:
            self.fail(child(at, "names"), f"{len(names)} names exceed the limit {MAX_NAMES}")
            names = []
        selector = None
        if "selector" in m:
            try:
                selector = msgspec.convert(m["selector"], LabelSelector)
            except msgspec.ValidationError as err:
                self.fail(*_validation(child(at, "selector"), err))
            else:
                for j, req in enumerate(selector.match_expressions or ()):
                    if req.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
                        self.fail(
                            child(at, f"selector.matchExpressions[{j}].operator"),
                            f"{req.operator!r} is not one of In, NotIn, Exists, DoesNotExist",
                        )
        if not names and selector is None:
            self.fail(at, "selects nothing: give names or a selector")
        namespace = m.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            self.fail(child(at, "namespace"), "must be a string")
            namespace = None
        return Selection(tuple(names), selector, namespace)

    def add_nodes(self, value: object, path: str) -> AddNodes | None:
        m = self.mapping(value, path, ("count", "namePrefix", "zones", "used", "template"))
        if m is None:
            return None
        count = self.count(m.get("count"), child(path, "count"), MAX_NODE_COUNT)
        self.total_nodes += count
        if count and self.total_nodes > MAX_TOTAL_NODES:
            self.fail(
                child(path, "count"), f"the scenario adds {self.total_nodes} nodes, over the limit {MAX_TOTAL_NODES}"
            )
        used = self.used(m.get("used"), child(path, "used"))
        at = child(path, "template")
        raw = m.get("template")
        if not isinstance(raw, dict):
            self.fail(at, f"must be a Node (a mapping), got {_kind(raw)}")
            return None
        try:
            template = msgspec.convert(raw, Node)
        except msgspec.ValidationError as err:
            self.fail(*_validation(at, err))
            return None
        for where, amounts in (
            ("status.allocatable", template.status.allocatable),
            ("status.capacity", template.status.capacity),
        ):
            self.amounts(amounts, child(at, where))
        if not template.status.allocatable:
            self.fail(child(at, "status.allocatable"), "is required: what the nodes offer")
        prefix = m.get("namePrefix", template.metadata.name)
        prefix = self.name(prefix, child(path, "namePrefix")) if prefix else ""
        if not prefix:
            self.fail(child(path, "namePrefix"), "is required (or template.metadata.name)")
        zones = m.get("zones", [])
        if not isinstance(zones, list) or not all(isinstance(z, str) and z for z in zones) or len(zones) > 1000:
            self.fail(child(path, "zones"), "must be a list of at most 1000 zone names")
            zones = []
        return AddNodes(count, prefix, template, tuple(zones), used, path)

    def used(self, value: object, path: str) -> dict[str, float]:
        if value is None:
            return {}
        items = value.items() if isinstance(value, dict) else [("*", value)]
        out = {}
        for resource, fraction in items:
            at = child(path, str(resource)) if isinstance(value, dict) else path
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
                self.fail(at, f"must be a fraction between 0 and 1, got {fraction!r}")
                continue
            out[str(resource)] = float(fraction)
        return out

    def add_pods(self, value: object, path: str) -> AddPods | None:
        m = self.mapping(value, path, ("replicas", "name", "namespace", "template"))
        if m is None:
            return None
        replicas = self.count(m.get("replicas"), child(path, "replicas"), MAX_REPLICAS)
        self.total_pods += replicas
        if replicas and self.total_pods > MAX_TOTAL_PODS:
            self.fail(
                child(path, "replicas"), f"the scenario adds {self.total_pods} pods, over the limit {MAX_TOTAL_PODS}"
            )
        at = child(path, "template")
        raw = m.get("template")
        if not isinstance(raw, dict):
            self.fail(at, f"must be a Pod (a mapping), got {_kind(raw)}")
            return None
        meta = raw.get("metadata") or {}
        if not isinstance(meta, dict):
            self.fail(child(at, "metadata"), f"must be a mapping, got {_kind(meta)}")
            return None
        name = m.get("name", meta.get("name"))
        name = self.name(name, child(path, "name")) if name else ""
        if not name:
            self.fail(child(path, "name"), "is required (or template.metadata.name)")
        namespace = m.get("namespace", meta.get("namespace") or "default")
        namespace = self.name(namespace, child(path, "namespace"))
        self.pod_amounts(raw, at)
        return AddPods(replicas, name, namespace, raw, at)

    def pod_amounts(self, raw: dict[str, Any], path: str) -> None:
        spec = raw.get("spec")
        if not isinstance(spec, dict):
            self.fail(child(path, "spec"), f"must be a mapping, got {_kind(spec)}")
            return
        for key in ("containers", "initContainers"):
            containers = spec.get(key) or []
            if not isinstance(containers, list):
                continue  # the Pod's decoding says what is wrong
            for i, c in enumerate(containers):
                resources = c.get("resources") if isinstance(c, dict) else None
                if isinstance(resources, dict):
                    for kind in ("requests", "limits"):
                        self.amounts(resources.get(kind), f"{path}.spec.{key}[{i}].resources.{kind}")
        if isinstance(spec.get("overhead"), dict):
            self.amounts(spec["overhead"], f"{path}.spec.overhead")

    def amounts(self, amounts: object, path: str) -> None:
        if amounts is None:
            return
        if not isinstance(amounts, dict):
            self.fail(path, f"must be a mapping of quantities, got {_kind(amounts)}")
            return
        for name, value in amounts.items():
            at = child(path, str(name))
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                self.fail(at, f"must be a quantity, got {_kind(value)}")
                continue
            try:
                milli = to_milli(value)
            except QuantityError as err:
                self.fail(at, f"Invalid value: {value!r}: {err}")
                continue
            if milli < 0:
                self.fail(at, f"Invalid value: {value!r}: must be greater than or equal to 0")
            elif milli > MAX_AMOUNT * 1000:
                self.fail(at, f"{value} exceeds the limit {MAX_AMOUNT} (a simulated quantity must be plausible)")


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _validation(path: str, err: msgspec.ValidationError) -> tuple[str, str]:
    """msgspec's "Expected `int`, got `str` - at `$.spec.priority`" as (``path``.spec.priority, its problem)."""
    text = str(err).replace("`", "")
    problem, sep, where = text.rpartition(" - at ")
    if not sep:
        return path, text
    sub = where.removeprefix("$").lstrip(".")
    return (f"{path}{sub}" if sub.startswith("[") else child(path, sub)) if sub else path, problem
