"""The webhook's config file: YAML checked all at once (every problem with its field path), built into rules.

See docs/webhook.md for the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from kubesched.cluster.cache import ClusterCache
from kubesched.core.nodeaffinity import is_label_value, is_qualified_name
from kubesched.errors import ConfigurationError
from kubesched.framework.loader import LoadError, load_object, not_installed
from kubesched.framework.registry import did_you_mean
from kubesched.webhook.feasibility import Feasibility, FeasibilityChecker
from kubesched.webhook.rules import Action, Phase, PythonRule, RequireLabel, Rule, SetScheduler, UserFunction

API_VERSION = "kubesched.io/v1alpha1"
KIND = "WebhookConfig"
OPERATIONS = ("CREATE", "UPDATE")
RULE_KINDS = ("requireLabel", "setScheduler", "feasibility", "python")
ACTIONS = ("deny", "warn")
PHASES = ("validate", "mutate")
TOLERATION_OPERATORS = ("", "Equal", "Exists")
TAINT_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
# How python rules load: any file or module; only modules of installed packages (--plugins-from image); or not at
# all (`kubesched manifests` without --load-plugins: the rule is checked for its form, its code never runs).
PythonLoading = Literal["any", "installed", "none"]


class WebhookConfigError(ConfigurationError):
    """Every problem of a config file, each naming its field path."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}: invalid webhook config:\n" + "\n".join(f"  - {p}" for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class WebhookConfig:
    operations: frozenset[str]
    rules: tuple[Rule, ...]

    @property
    def needs_nodes(self) -> bool:
        return any(isinstance(r, Feasibility) for r in self.rules)


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "a mapping"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


class _Fields:
    """One mapping of the file: typed reads that record a problem (with its path) instead of raising."""

    def __init__(self, obj: Any, path: str, problems: list[str], known: Sequence[str]) -> None:
        self.path, self.problems = path, problems
        self.obj: dict[str, Any] = obj if isinstance(obj, dict) else {}
        if not isinstance(obj, dict):
            self.problem(f"expected a mapping, got {_kind(obj)}")
        for key in self.obj:
            if key not in known:
                self.problem(f"unknown field{did_you_mean(str(key), known)} (known: {', '.join(known)})", key)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else str(key)

    def problem(self, message: str, key: str | None = None) -> None:
        self.problems.append(f"{self.at(key) if key is not None else self.path or '$'}: {message}")

    def string(self, key: str, *, required: bool = False, choices: Sequence[str] = ()) -> str | None:
        value = self.obj.get(key)
        if value is None:
            if required:
                self.problem("required", key)
            return None
        if not isinstance(value, str):
            self.problem(f"expected a string, got {_kind(value)} (quote it in YAML)", key)
            return None
        if choices and value not in choices:
            self.problem(f"{value!r} is not one of {', '.join(c or '(empty)' for c in choices)}", key)
            return None
        if required and not value:
            self.problem("must not be empty", key)
        return value

    def boolean(self, key: str) -> bool:
        value = self.obj.get(key, False)
        if not isinstance(value, bool):
            self.problem(f"expected true or false, got {_kind(value)}", key)
            return False
        return value

    def strings(self, key: str) -> list[str]:
        value = self.obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(f"expected a list of strings, got {_kind(value)}", key)
            return []
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item:
                self.problem(f"expected a non-empty string, got {_kind(item)}", f"{key}[{i}]")
        return [v for v in value if isinstance(v, str)]

    def labels(self, key: str) -> dict[str, str]:
        """A map of label keys to label values (nodeSelector, matchLabels, labels)."""
        value = self.obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(f"expected a mapping of label keys to values, got {_kind(value)}", key)
            return {}
        for k, v in value.items():
            where = f"{key}[{k!r}]"
            if not isinstance(k, str) or not is_qualified_name(k):
                self.problem("not a valid label key (prefix/name, name at most 63 characters)", where)
            if not isinstance(v, str):
                self.problem(f"expected a string value, got {_kind(v)} (quote it in YAML)", where)
            elif not is_label_value(v):
                self.problem(f"{v!r} is not a valid label value", where)
        return {str(k): v for k, v in value.items() if isinstance(v, str)}


def _tolerations(rule: _Fields) -> tuple[dict[str, Any], ...]:
    raw = rule.obj.get("tolerations")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        rule.problem(f"expected a list of tolerations, got {_kind(raw)}", "tolerations")
        return ()
    out = []
    known = ("key", "operator", "value", "effect", "tolerationSeconds")
    for i, item in enumerate(raw):
        t = _Fields(item, rule.at(f"tolerations[{i}]"), rule.problems, known)
        if not isinstance(item, dict):
            continue
        key = t.string("key") or ""
        operator = t.string("operator", choices=TOLERATION_OPERATORS) or ""
        value = t.string("value") or ""
        t.string("effect", choices=TAINT_EFFECTS)
        if key and not is_qualified_name(key):
            t.problem("not a valid taint key", "key")
        if not key and operator != "Exists":
            t.problem("an empty key needs operator Exists", "operator")
        if operator == "Exists" and value:
            t.problem("must be empty when operator is Exists", "value")
        seconds = t.obj.get("tolerationSeconds")
        if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
            t.problem(f"expected an integer, got {_kind(seconds)}", "tolerationSeconds")
        out.append(dict(t.obj))
    return tuple(out)


def load_function(target: str, base: Path, python: PythonLoading = "any") -> UserFunction:
    """``path/to/file.py:func`` (relative to ``base``) or ``package.module:func``; ValueError says what failed."""
    if ":" not in target:
        raise ValueError("expected file.py:function or package.module:function")
    module = target.rpartition(":")[0]
    if python == "none":
        if module.endswith(".py") and not (base / module).is_file():
            raise ValueError(f"no such file {base / module}")
        return _not_imported
    refused = not_installed(module) if python == "installed" else None
    if refused is not None:
        raise ValueError(refused)
    try:
        func = load_object(target, base=base)
    except LoadError as err:
        raise ValueError(str(err).removeprefix(f"{target}: ")) from None
    if not callable(func):
        module, _, attr = target.rpartition(":")
        raise ValueError(f"{module} has no function {attr!r}")
    return cast(UserFunction, func)


def _not_imported(pod: Any, request: Any) -> None:
    raise RuntimeError("a python rule parsed with python='none' is never called")


def _rule(raw: Any, i: int, problems: list[str], cache: ClusterCache, base: Path, python: PythonLoading) -> Rule | None:
    where = f"rules[{i}]"
    kinds = [k for k in RULE_KINDS if isinstance(raw, dict) and k in raw]
    if isinstance(raw, dict) and len(kinds) != 1:
        given = f"got {' and '.join(kinds)}" if kinds else "got none"
        for key in (k for k in raw if k not in ("name", "phase") and not kinds):
            hint = did_you_mean(str(key), RULE_KINDS)
            given += f" ({key!r}: {hint[2:]})" if hint else f" ({key!r} is not a rule kind)"
        problems.append(f"{where}: needs exactly one of {', '.join(RULE_KINDS)}; {given}")
        return None
    kind = kinds[0] if kinds else ""
    rule = _Fields(raw, where, problems, ("name", kind, "phase") if kind == "python" else ("name", kind))
    if not kind:
        return None
    name = rule.string("name") or f"{kind}-{i}"
    before = len(problems)
    if kind == "python":
        target = rule.string("python", required=True)
        phase = cast(Phase, rule.string("phase", choices=PHASES) or "validate")
        func: UserFunction | None = None
        if target:
            try:
                func = load_function(target, base, python)
            except ValueError as err:
                rule.problem(f"{target}: {err}", "python")
        return PythonRule(name, target, func, phase) if func is not None and target else None
    body = rule.obj[kind]
    if kind == "requireLabel":
        f = _Fields(body, rule.at(kind), problems, ("schedulerName", "label", "value", "action"))
        scheduler, label = f.string("schedulerName", required=True), f.string("label", required=True)
        value = f.string("value")
        action = cast(Action, f.string("action", choices=ACTIONS) or "deny")
        if label and not is_qualified_name(label):
            f.problem(f"{label!r} is not a valid label key", "label")
        if value is not None and not is_label_value(value):
            f.problem(f"{value!r} is not a valid label value", "value")
        if len(problems) > before or not scheduler or not label:
            return None
        return RequireLabel(name, scheduler, label, value, action)
    if kind == "setScheduler":
        known = ("schedulerName", "namespaces", "matchLabels", "force", "tolerations", "nodeSelector", "labels")
        f = _Fields(body, rule.at(kind), problems, known)
        scheduler = f.string("schedulerName", required=True)
        namespaces, match = f.strings("namespaces"), f.labels("matchLabels")
        if isinstance(body, dict) and not namespaces and not match:
            f.problem("select pods: give namespaces, matchLabels or both")
        force, tolerations = f.boolean("force"), _tolerations(f)
        selector, labels = f.labels("nodeSelector"), f.labels("labels")
        if len(problems) > before or not scheduler:
            return None
        return SetScheduler(name, scheduler, frozenset(namespaces), match, force, tolerations, selector, labels)
    f = _Fields(body, rule.at(kind), problems, ("action", "schedulerNames"))
    action = cast(Action, f.string("action", required=True, choices=ACTIONS))
    names = f.strings("schedulerNames")
    if len(problems) > before:
        return None
    return Feasibility(name, FeasibilityChecker(cache), action, frozenset(names))


def parse(doc: Any, cache: ClusterCache, *, base: Path, source: str, python: PythonLoading = "any") -> WebhookConfig:
    """Build the rules of a decoded config document; raises WebhookConfigError listing every problem.

    ``python``: how its python rules load (`PythonLoading`)."""
    problems: list[str] = []
    top = _Fields(doc, "", problems, ("apiVersion", "kind", "operations", "rules"))
    for key, wanted in (("apiVersion", API_VERSION), ("kind", KIND)):
        got = top.string(key)
        if got is not None and got != wanted:
            top.problem(f"must be {wanted}, got {got!r}", key)
    operations = top.strings("operations") if "operations" in top.obj else ["CREATE"]
    for i, op in enumerate(operations):
        if op not in OPERATIONS:
            top.problem(
                f"{op!r} is not one of {', '.join(OPERATIONS)} (other operations are always allowed)",
                f"operations[{i}]",
            )
    if not operations:
        top.problem("at least one of CREATE, UPDATE", "operations")
    raw_rules = top.obj.get("rules")
    rules: list[Rule] = []
    if not isinstance(raw_rules, list) or not raw_rules:
        top.problem(f"expected a non-empty list of rules, got {_kind(raw_rules)}", "rules")
        raw_rules = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_rules):
        rule = _rule(raw, i, problems, cache, base, python)
        if rule is None:
            continue
        if rule.name in seen:
            problems.append(f"rules[{i}].name: {rule.name!r} is already the name of rules[{seen[rule.name]}]")
        seen.setdefault(rule.name, i)
        rules.append(rule)
    if problems:
        raise WebhookConfigError(source, problems)
    return WebhookConfig(frozenset(operations), tuple(rules))


def load(path: Path, cache: ClusterCache, *, python: PythonLoading = "any") -> WebhookConfig:
    """Read and build a config file; python rules are imported relative to its directory (``python``: how)."""
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as err:
        raise WebhookConfigError(str(path), [f"cannot read: {err.strerror}"]) from None
    except yaml.YAMLError as err:
        raise WebhookConfigError(str(path), [f"not valid YAML: {err}"]) from None
    return parse(doc, cache, base=path.parent, source=str(path), python=python)
