"""A sweep file (kind Sweep): the cluster, the scenarios, a configuration template, its axes and the objective.

Read with the configuration files' YAML reader (`config.yamlin`: size, depth, aliases, duplicate keys), then
every field is checked with its path before a cell is made, and the grid is bounded (`MAX_CELLS`) before it
is expanded: a hostile file costs its bounded size to read and nothing to run.
"""

from __future__ import annotations

import copy
import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.config import yamlin
from kubesched.errors import ConfigurationError, FieldError, child, index

API_VERSION = "kubesched.io/v1alpha1"
KIND = "Sweep"
CONFIG_API = "kubescheduler.config.k8s.io/v1"

MAX_FILE_BYTES = yamlin.MAX_BYTES
MAX_CELLS = 1_000  # scenarios × configurations
MAX_SCENARIOS = 100
MAX_VALUES = 100  # values of one axis
MAX_WEIGHT = 100  # a score weight here: 1..100 (the configuration validator checks the rest)

BASE_METRICS = ("podsPlaced", "podsPending", "podsBound", "nodesUsed", "nodes", "preemptions")
# Per resource: cpu.p99, memory.spread (p99 - p50), nvidia.com/gpu.stranded, ...
RESOURCE_METRIC = re.compile(
    r"^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?\.(p50|p99|mean|max|spread|stranded|"
    r"partiallyUsedNodes|largestFree|free)$"
)
AXES = ("weights", "percentageOfNodesToScore", "pluginSets", "pluginArgs")


class SweepError(ConfigurationError):
    """A sweep file that cannot be used; ``errors`` names each field."""


@dataclass(frozen=True)
class Objective:
    """Maximized: the sum of ``terms`` (metric -> weight); ``minimize`` names what ``text`` says."""

    terms: tuple[tuple[str, float], ...]
    text: str  # e.g. "maximize podsPlaced", "minimize cpu.spread", "maximize 1×podsPlaced - 0.5×nodesUsed"

    def value(self, metrics: dict[str, float]) -> float:
        return sum(w * metrics.get(m, 0.0) for m, w in self.terms)

    @property
    def metrics(self) -> list[str]:
        return [m for m, _ in self.terms]


@dataclass(frozen=True)
class Configuration:
    """One point of the grid: its id (``c0``...), what it sets (axis=value, in the order of the axes) and the
    KubeSchedulerConfiguration it makes."""

    id: str
    settings: tuple[tuple[str, str], ...]
    document: dict[str, Any]

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.settings) or "template"


@dataclass(frozen=True)
class Sweep:
    name: str
    path: Path
    cluster: Path
    scenarios: tuple[Path, ...]
    objective: Objective
    configurations: tuple[Configuration, ...]
    seed: int = 0
    kubernetes_version: str = ""  # "" : the reference release (or --kubernetes-version)
    template: dict[str, Any] = field(default_factory=dict)


def read_sweep(path: Path) -> Sweep:
    """The sweep of ``path``; SweepError lists every problem with its field path."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise SweepError(f"{path}: cannot read: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SweepError(f"{path}: larger than {MAX_FILE_BYTES} bytes, the limit of a sweep file")
    try:
        text = data.decode()
    except UnicodeDecodeError as err:
        raise SweepError(f"{path}: not UTF-8 text (byte {err.start})") from None
    doc, problems = yamlin.load(text)
    if problems:
        raise SweepError(errors=problems)
    return parse(doc, path)


def parse(doc: object, path: Path) -> Sweep:
    errors: list[FieldError] = []

    def bad(at: str, message: str) -> None:
        errors.append(FieldError(at, message))

    if not isinstance(doc, dict):
        raise SweepError(errors=[FieldError(yamlin.DOCUMENT, f"must be a mapping (kind {KIND}), not {_kind(doc)}")])
    known = {
        "apiVersion",
        "kind",
        "metadata",
        "cluster",
        "scenarios",
        "config",
        "axes",
        "objective",
        "seed",
        "kubernetesVersion",
    }
    for key in doc:
        if key not in known:
            bad(str(key), f"unknown field (known: {', '.join(sorted(known))})")
    if doc.get("apiVersion") != API_VERSION:
        bad("apiVersion", f"must be {API_VERSION}, not {doc.get('apiVersion')!r}")
    if doc.get("kind") != KIND:
        bad("kind", f"must be {KIND}, not {doc.get('kind')!r}")
    name = ""
    meta = doc.get("metadata", {})
    if not isinstance(meta, dict) or not isinstance(meta.get("name", ""), str):
        bad("metadata", "must be a mapping with a string name")
    else:
        name = meta.get("name", "")
    base = path.parent
    cluster = _file(doc.get("cluster"), "cluster", base, bad)
    scenarios: list[Path] = []
    raw = doc.get("scenarios")
    if not isinstance(raw, list) or not raw:
        bad("scenarios", "must be a non-empty list of scenario files (docs/simulate.md)")
    elif len(raw) > MAX_SCENARIOS:
        bad("scenarios", f"{len(raw)} scenarios; a sweep is limited to {MAX_SCENARIOS}")
    else:
        scenarios = [p for i, v in enumerate(raw) if (p := _file(v, index("scenarios", i), base, bad))]
    seed = doc.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        bad("seed", f"must be an integer from 0 to 2^63-1, not {seed!r}")
        seed = 0
    version = doc.get("kubernetesVersion", "")
    if not isinstance(version, str):
        bad("kubernetesVersion", "must be a string such as v1.35.4")
        version = ""
    template = _template(doc.get("config"), bad)
    axes = _axes(doc.get("axes", {}), bad)
    objective = _objective(doc.get("objective"), bad)
    if errors:
        raise SweepError(errors=errors)
    count = 1
    for _, values in axes:
        count *= len(values)
    cells = count * len(scenarios)
    if cells > MAX_CELLS:
        dims = " × ".join(f"{len(v)} {k}" for k, v in axes)
        raise SweepError(
            errors=[
                FieldError(
                    "axes",
                    f"{dims} = {count} configurations × {len(scenarios)} scenario(s) "
                    f"= {cells} cells; a sweep is limited to {MAX_CELLS}",
                )
            ]
        )
    configurations = tuple(
        _configuration(i, template, axes, point) for i, point in enumerate(itertools.product(*(v for _, v in axes)))
    )
    assert objective is not None and cluster is not None
    return Sweep(name, path, cluster, tuple(scenarios), objective, configurations, seed, version, template)


def _kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _file(value: object, at: str, base: Path, bad: Any) -> Path | None:
    if not isinstance(value, str) or not value:
        bad(at, f"must be a file name (relative to the sweep file), not {_kind(value)}")
        return None
    if "\0" in value or len(value) > 4096:
        bad(at, "not a usable file name")
        return None
    p = Path(value) if os.path.isabs(value) else base / value
    if not p.is_file():
        bad(at, f"no such file {p}")
        return None
    return p


def _template(value: object, bad: Any) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        bad("config", f"must be a KubeSchedulerConfiguration mapping, not {_kind(value)}")
        return {}
    doc = copy.deepcopy(value)
    doc.setdefault("apiVersion", CONFIG_API)
    doc.setdefault("kind", "KubeSchedulerConfiguration")
    profiles = doc.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
    if not isinstance(profiles, list) or not profiles or not all(isinstance(p, dict) for p in profiles):
        bad("config.profiles", "must be a non-empty list of profiles (mappings)")
    return doc


# One value of an axis: as shown, and what it sets (the axis kind, the plugin or set name, the value).
Point = tuple[str, tuple[str, str, object]]
# One axis: its name as shown ("NodeResourcesFit", "percentageOfNodesToScore", ...) and its values.
Axis = tuple[str, list[Point]]


def _values(raw: object, at: str, bad: Any) -> list[object]:
    if not isinstance(raw, list) or not raw:
        bad(at, f"must be a non-empty list of values, not {_kind(raw)}")
        return []
    if len(raw) > MAX_VALUES:
        bad(at, f"{len(raw)} values; an axis is limited to {MAX_VALUES}")
        return []
    return raw


def _axes(raw: object, bad: Any) -> list[Axis]:
    out: list[Axis] = []
    if not isinstance(raw, dict):
        bad("axes", f"must be a mapping (known: {', '.join(AXES)}), not {_kind(raw)}")
        return out
    for key in raw:
        if key not in AXES:
            bad(child("axes", str(key)), f"unknown axis (known: {', '.join(AXES)})")
    for kind in ("weights", "pluginArgs"):
        plugins = raw.get(kind, {})
        if not isinstance(plugins, dict):
            bad(child("axes", kind), f"must be a mapping of plugin name to a list of values, not {_kind(plugins)}")
            continue
        for plugin, values in plugins.items():
            at = child(child("axes", kind), str(plugin))
            if not isinstance(plugin, str) or not plugin:
                bad(at, "must be a plugin name")
                continue
            points: list[Point] = []
            named = kind == "pluginArgs" and isinstance(values, dict)  # {NAME: args, ...}: shown by name
            if named and len(values) > MAX_VALUES:
                bad(at, f"{len(values)} values; an axis is limited to {MAX_VALUES}")
                continue
            listed = list(values.values()) if named else _values(values, at, bad)
            names = [str(k) for k in values] if named else [_short(v) for v in listed]
            for i, v in enumerate(listed):
                if kind == "weights":
                    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_WEIGHT:
                        bad(index(at, i), f"must be an integer weight from 1 to {MAX_WEIGHT}, not {v!r}")
                    points.append((str(v), (kind, plugin, v)))
                else:
                    if not isinstance(v, dict):
                        where = child(at, names[i]) if named else index(at, i)
                        bad(where, f"must be the plugin's args (a mapping), not {_kind(v)}")
                    points.append((names[i], (kind, plugin, v)))
            if named and not values:
                bad(at, "must be a non-empty list of args, or a mapping of a name to args")
            if points:
                out.append((f"{plugin}" if kind == "weights" else f"{plugin}.args", points))
    pct = raw.get("percentageOfNodesToScore")
    if pct is not None:
        at = child("axes", "percentageOfNodesToScore")
        points = []
        for i, v in enumerate(_values(pct, at, bad)):
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 100:
                bad(index(at, i), f"must be an integer from 0 to 100, not {v!r}")
            points.append((str(v), ("percentageOfNodesToScore", "", v)))
        if points:
            out.append(("percentageOfNodesToScore", points))
    sets = raw.get("pluginSets")
    if sets is not None:
        at = child("axes", "pluginSets")
        if not isinstance(sets, dict) or not sets:
            bad(at, f"must be a mapping of a set's name to its plugins (per extension point), not {_kind(sets)}")
        elif len(sets) > MAX_VALUES:
            bad(at, f"{len(sets)} values; an axis is limited to {MAX_VALUES}")
        else:
            points = []
            for set_name, plugins in sets.items():
                if plugins is None:
                    plugins = {}
                if not isinstance(plugins, dict):
                    bad(child(at, str(set_name)), f"must be a profile's plugins mapping, not {_kind(plugins)}")
                points.append((str(set_name), ("pluginSets", str(set_name), plugins)))
            out.append(("pluginSet", points))
    return out


def _short(value: object) -> str:
    text = yamlin_flow(value)
    return text if len(text) <= 60 else text[:57] + "..."


def yamlin_flow(value: object) -> str:
    """A value in one line (`{scoringStrategy: {type: MostAllocated}}`), for labels."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yamlin_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(yamlin_flow(v) for v in value) + "]"
    return str(value)


def _objective(raw: object, bad: Any) -> Objective | None:
    usage = "must be {maximize: METRIC}, {minimize: METRIC} or {maximize|minimize: {METRIC: WEIGHT, ...}}"
    if not isinstance(raw, dict) or len(raw) != 1 or next(iter(raw)) not in ("maximize", "minimize"):
        bad("objective", usage)
        return None
    direction, what = next(iter(raw.items()))
    at = child("objective", direction)
    sign = 1.0 if direction == "maximize" else -1.0
    terms: list[tuple[str, float]] = []
    if isinstance(what, str):
        terms = [(what, 1.0)]
    elif isinstance(what, dict) and what and len(what) <= 50:
        for m, w in what.items():
            if not isinstance(w, (int, float)) or isinstance(w, bool) or w != w or abs(w) > 1e12:
                bad(child(at, str(m)), f"must be a finite number (the metric's weight), not {w!r}")
                continue
            terms.append((str(m), float(w)))
    else:
        bad(at, usage)
        return None
    for m, _ in terms:
        if m not in BASE_METRICS and not RESOURCE_METRIC.match(m):
            bad(
                at if isinstance(what, str) else child(at, m),
                f"unknown metric {m!r} (known: {', '.join(BASE_METRICS)}, RESOURCE.p50|p99|mean|max|spread|"
                "stranded|partiallyUsedNodes|largestFree|free, e.g. cpu.spread, nvidia.com/gpu.stranded)",
            )
    if not terms:
        return None
    if isinstance(what, str):
        text = f"{direction} {what}"
    else:
        text = f"{direction} " + " ".join(
            f"{'-' if w < 0 else '+' if i else ''}{' ' if i or w < 0 else ''}{abs(w):g}×{m}"
            for i, (m, w) in enumerate(terms)
        ).replace("- ", "-", 1 if terms[0][1] < 0 else 0)
    return Objective(tuple((m, sign * w) for m, w in terms), text)


def _configuration(i: int, template: dict[str, Any], axes: list[Axis], point: tuple[Any, ...]) -> Configuration:
    doc = copy.deepcopy(template)
    settings = []
    for (axis, _), (shown, (kind, name, value)) in zip(axes, point, strict=True):
        settings.append((axis, shown))
        if kind == "percentageOfNodesToScore":
            doc["percentageOfNodesToScore"] = value
            continue
        for profile in doc["profiles"]:
            plugins = profile.setdefault("plugins", {})
            if kind == "weights":
                score = plugins.setdefault("score", {})
                enabled = score.setdefault("enabled", [])
                entry = next((e for e in enabled if isinstance(e, dict) and e.get("name") == name), None)
                if entry is None:
                    enabled.append({"name": name, "weight": value})
                else:
                    entry["weight"] = value
            elif kind == "pluginSets":
                plugins.update(copy.deepcopy(value))
            else:  # pluginArgs
                configs = profile.setdefault("pluginConfig", [])
                entry = next((e for e in configs if isinstance(e, dict) and e.get("name") == name), None)
                if entry is None:
                    configs.append({"name": name, "args": copy.deepcopy(value)})
                else:
                    entry["args"] = copy.deepcopy(value)
    return Configuration(f"c{i}", tuple(settings), doc)
