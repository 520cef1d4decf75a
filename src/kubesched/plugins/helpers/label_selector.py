"""Label selectors (metav1.LabelSelectorAsSelector and labels.Selector), compiled once and matched per pod.

A None LabelSelector selects nothing, one with neither matchLabels nor matchExpressions selects
everything (``empty``: several plugins treat that case on its own, as upstream does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.api import core
from kubesched.api import policy_v1 as policy
from kubesched.core.nodeaffinity import is_label_value, is_qualified_name
from kubesched.errors import InputError

EQUALS, IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "Equals", "In", "NotIn", "Exists", "DoesNotExist"
_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)

AnySelector = core.LabelSelector | policy.LabelSelector


class SelectorError(InputError):
    """A selector that does not parse; the message is the reason."""


@dataclass(frozen=True)
class Requirement:
    """One requirement: matchLabels pairs become Equals with one value."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        op = self.operator
        if op in (EQUALS, IN):
            return value is not None and value in self.values
        if op == NOT_IN:
            return value is None or value not in self.values
        if op == EXISTS:
            return value is not None
        return value is None


@dataclass(frozen=True)
class Selector:
    """Requirements ANDed; ``nothing`` matches no label set at all."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False
    # The Equals requirements as one dict (a subset test runs in C) and the rest, for `matches`.
    _pairs: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)
    _others: tuple[Requirement, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pairs = {}
        others = []
        for r in self.requirements:
            if r.operator == EQUALS and len(r.values) == 1 and r.key not in pairs:
                pairs[r.key] = next(iter(r.values))
            else:
                others.append(r)
        object.__setattr__(self, "_pairs", pairs)
        object.__setattr__(self, "_others", tuple(others))

    @property
    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirements (it matches everything)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        if self._pairs and not self._pairs.items() <= labels.items():
            return False
        return all(r.matches(labels) for r in self._others)

    def with_labels(self, pairs: Mapping[str, str]) -> Selector:
        """The pairs ANDed in front (mergeLabelSetWithSelector); Nothing stays Nothing."""
        if self.nothing or not pairs:
            return self
        extra = tuple(Requirement(k, EQUALS, frozenset((v,))) for k, v in sorted(pairs.items()))
        return Selector(extra + self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def _requirement(key: str, operator: str, values: list[str]) -> Requirement:
    errors = []
    if not is_qualified_name(key):
        errors.append(f'key: Invalid value: "{key}": must be a qualified name')
    if operator in (IN, NOT_IN) and not values:
        errors.append("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
    elif operator in (EXISTS, DOES_NOT_EXIST) and values:
        errors.append(f"values: Invalid value: {values}: values set must be empty for exists and does not exist")
    errors += [
        f'values[{i}]: Invalid value: "{v}": must be a valid label value'
        for i, v in enumerate(values)
        if not is_label_value(v)
    ]
    if errors:
        raise SelectorError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return Requirement(key, operator, frozenset(values))


def compile_selector(selector: AnySelector | None) -> Selector:
    """LabelSelectorAsSelector; raises SelectorError with upstream's reason when it does not parse."""
    if selector is None:
        return NOTHING
    labels = selector.match_labels or {}
    expressions = selector.match_expressions or []
    if not labels and not expressions:
        return EVERYTHING
    reqs = [_requirement(k, EQUALS, [v]) for k, v in labels.items()]
    for expr in expressions:
        if expr.operator not in _OPERATORS:
            raise SelectorError(f'"{expr.operator}" is not a valid label selector operator')
        reqs.append(_requirement(expr.key, expr.operator, list(expr.values or ())))
    return Selector(tuple(reqs))
