"""Node selectors compiled for batch matching over a node table (component-helpers nodeaffinity.go).

A pod's required placement is its ``spec.nodeSelector`` AND its required node-affinity terms;
terms are ORed, a term's matchExpressions and matchFields are ANDed. Empty terms are dropped
(so a required affinity made only of empty terms matches no node), and a term that does not
parse matches nothing. Every matcher answers for many rows at once, reading the table's
interned label columns, so a node selector costs a few numpy operations per cycle.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kubesched.api.core import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
)
from kubesched.core.nodetable import BoolColumn, IntColumn, NodeTable, Rows

LABEL_OPERATORS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
FIELD_OPERATORS = ("In", "NotIn")
NODE_NAME_FIELD = "metadata.name"

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT = re.compile(r"^[+-]?[0-9]+$")
_INT64 = range(-(2**63), 2**63)


def is_qualified_name(value: str) -> bool:
    """A label key: an optional DNS-subdomain prefix and '/', then a name of 1-63 characters (IsQualifiedName)."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix) or "/" in prefix):
        return False
    return len(name) <= 63 and bool(_NAME.match(name))


def is_label_value(value: str) -> bool:
    """A label value: empty, or up to 63 characters as in a name (IsValidLabelValue)."""
    return value == "" or (len(value) <= 63 and bool(_NAME.match(value)))


def parse_int64(value: str) -> int | None:
    """Go's strconv.ParseInt(value, 10, 64): an optional sign and decimal digits, in int64 range."""
    if not _INT.match(value):
        return None
    number = int(value)
    return number if number in _INT64 else None


def _ids(vocab: Mapping[str, int], values: Sequence[str]) -> list[int]:
    return [vocab[v] for v in values if v in vocab]


def _member(col: npt.NDArray[np.int32], ids: list[int]) -> BoolColumn:
    if not ids:
        return np.zeros(len(col), dtype=np.bool_)
    if len(ids) == 1:
        equal: BoolColumn = col == ids[0]
        return equal
    return np.isin(col, ids)


@dataclass(eq=False)
class LabelRequirement:
    """One matchExpressions entry (or a nodeSelector pair, as In with one value)."""

    key: str
    operator: str
    values: tuple[str, ...]
    # Gt/Lt: the vocabulary ids whose label value satisfies the bound. Vocabularies only grow,
    # so only entries added since the last call are parsed.
    _seen: tuple[int, int] = field(default=(0, 0), init=False, repr=False)
    _bound_ids: list[int] = field(default_factory=list, init=False, repr=False)

    def matches(self, table: NodeTable, rows: Rows) -> BoolColumn:
        codes, vocab = table.label_codes(self.key)
        col = codes[rows]
        op = self.operator
        if op == "In":
            return _member(col, _ids(vocab, self.values))
        if op == "NotIn":
            return ~_member(col, _ids(vocab, self.values))
        if op == "Exists":
            return col >= 0
        if op == "DoesNotExist":
            return col < 0
        return _member(col, self._ids_within_bound(vocab))

    def _ids_within_bound(self, vocab: dict[str, int]) -> list[int]:
        vocab_id, scanned = self._seen
        if vocab_id != id(vocab):
            scanned = 0
            self._bound_ids = []
        bound = int(self.values[0])
        for value, code in itertools.islice(vocab.items(), scanned, None):
            number = parse_int64(value)
            if number is not None and (number > bound if self.operator == "Gt" else number < bound):
                self._bound_ids.append(code)
        self._seen = (id(vocab), len(vocab))
        return self._bound_ids

    def holds_for(self, labels: Mapping[str, str]) -> bool:
        """The same test for one node's labels (what an object, not a table row, is matched with)."""
        value = labels.get(self.key)
        op = self.operator
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        number = parse_int64(value) if value is not None else None
        bound = int(self.values[0])
        return number is not None and (number > bound if op == "Gt" else number < bound)


@dataclass(frozen=True)
class FieldRequirement:
    """One matchFields entry: a node field (only ``metadata.name`` exists) In/NotIn one value."""

    key: str
    operator: str
    value: str

    def matches(self, table: NodeTable, rows: Rows) -> BoolColumn:
        if self.key == NODE_NAME_FIELD:
            row = table.index.get(self.value)
            equal = rows == row if row is not None else np.zeros(len(rows), dtype=np.bool_)
        else:
            # Any other field reads as "" (fields.Set.Get of a missing key).
            equal = np.full(len(rows), self.value == "", dtype=np.bool_)
        return equal if self.operator == "In" else ~equal

    def holds_for(self, name: str) -> bool:
        equal = (name if self.key == NODE_NAME_FIELD else "") == self.value
        return equal if self.operator == "In" else not equal


@dataclass(frozen=True)
class Term:
    """A compiled NodeSelectorTerm; ``errors`` non-empty means it matches nothing."""

    labels: tuple[LabelRequirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()
    errors: tuple[str, ...] = ()

    def matches(self, table: NodeTable, rows: Rows) -> BoolColumn:
        if self.errors:
            return np.zeros(len(rows), dtype=np.bool_)
        out = np.ones(len(rows), dtype=np.bool_)
        for label in self.labels:
            out &= label.matches(table, rows)
        for fld in self.fields:
            out &= fld.matches(table, rows)
        return out

    def holds_for(self, labels: Mapping[str, str], name: str) -> bool:
        if self.errors:
            return False
        return all(r.holds_for(labels) for r in self.labels) and all(f.holds_for(name) for f in self.fields)


def is_empty_term(term: NodeSelectorTerm | None) -> bool:
    return term is None or (not term.match_expressions and not term.match_fields)


def _label_requirement(req: NodeSelectorRequirement, path: str) -> tuple[LabelRequirement | None, list[str]]:
    values = tuple(req.values or ())
    if req.operator not in LABEL_OPERATORS:
        supported = ", ".join(f'"{op}"' for op in LABEL_OPERATORS)
        return None, [f'{path}.operator: Unsupported value: "{req.operator}": supported values: {supported}']
    errors = []
    if not is_qualified_name(req.key):
        errors.append(f'{path}.key: Invalid value: "{req.key}": must be a qualified name')
    if req.operator in ("In", "NotIn") and not values:
        errors.append(f"{path}.values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
    elif req.operator in ("Exists", "DoesNotExist") and values:
        errors.append(
            f"{path}.values: Invalid value: {list(values)}: values set must be empty for exists and does not exist"
        )
    elif req.operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(
                f"{path}.values: Invalid value: {list(values)}: for 'Gt', 'Lt' operators, exactly one value is required"
            )
        errors += [
            f"{path}.values[{i}]: Invalid value: \"{v}\": for 'Gt', 'Lt' operators, the value must be an integer"
            for i, v in enumerate(values)
            if parse_int64(v) is None
        ]
    errors += [
        f'{path}.values[{i}]: Invalid value: "{v}": must be a valid label value'
        for i, v in enumerate(values)
        if not is_label_value(v)
    ]
    return (None, errors) if errors else (LabelRequirement(req.key, req.operator, values), [])


def _field_requirement(req: NodeSelectorRequirement, path: str) -> tuple[FieldRequirement | None, list[str]]:
    values = req.values or []
    if req.operator not in FIELD_OPERATORS:
        supported = ", ".join(f'"{op}"' for op in FIELD_OPERATORS)
        return None, [f'{path}.operator: Unsupported value: "{req.operator}": supported values: {supported}']
    if len(values) != 1:
        return None, [f"{path}.values: Invalid value: {list(values)}: must have one element"]
    return FieldRequirement(req.key, req.operator, values[0]), []


def compile_term(term: NodeSelectorTerm, path: str = "") -> Term:
    """Compile one term; every parse problem is kept, each with its field path."""
    labels: list[LabelRequirement] = []
    fields: list[FieldRequirement] = []
    errors: list[str] = []
    for i, req in enumerate(term.match_expressions or ()):
        label, errs = _label_requirement(req, f"{path}matchExpressions[{i}]")
        errors += errs
        if label is not None:
            labels.append(label)
    for i, req in enumerate(term.match_fields or ()):
        fld, errs = _field_requirement(req, f"{path}matchFields[{i}]")
        errors += errs
        if fld is not None:
            fields.append(fld)
    return Term(tuple(labels), tuple(fields), tuple(errors))


@dataclass(frozen=True)
class Selector:
    """A compiled NodeSelector: its non-empty terms, ORed. No terms matches no node."""

    terms: tuple[Term, ...]

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(e for t in self.terms for e in t.errors)

    def matches(self, table: NodeTable, rows: Rows) -> BoolColumn:
        out = np.zeros(len(rows), dtype=np.bool_)
        for term in self.terms:
            out |= term.matches(table, rows)
        return out

    def holds_for(self, labels: Mapping[str, str], name: str) -> bool:
        """Whether one node (its labels and name) matches: the same rules as `matches` over a table."""
        return any(term.holds_for(labels, name) for term in self.terms)


def compile_selector(selector: NodeSelector, path: str = "") -> Selector:
    terms = selector.node_selector_terms or []
    return Selector(
        tuple(compile_term(t, f"{path}nodeSelectorTerms[{i}].") for i, t in enumerate(terms) if not is_empty_term(t))
    )


def node_matches_selector(node: Node, selector: NodeSelector) -> bool:
    """Whether ``node`` matches ``selector`` (a ResourceSlice's or an allocation's): compiled, then tested."""
    return compile_selector(selector).holds_for(node.metadata.labels or {}, node.metadata.name)


@dataclass(frozen=True)
class RequiredAffinity:
    """``spec.nodeSelector`` AND the required node-affinity selector (GetRequiredNodeAffinity)."""

    node_selector: tuple[LabelRequirement, ...] = ()
    affinity: Selector | None = None

    @property
    def matches_all(self) -> bool:
        return not self.node_selector and self.affinity is None

    def matches(self, table: NodeTable, rows: Rows) -> BoolColumn:
        out = np.ones(len(rows), dtype=np.bool_)
        for req in self.node_selector:
            out &= req.matches(table, rows)
        if self.affinity is not None:
            out &= self.affinity.matches(table, rows)
        return out


def required_affinity(pod: Pod) -> RequiredAffinity:
    """Compile what a pod requires of its node's labels and name."""
    spec = pod.spec
    # nodeSelector pairs are not validated here (labels.SelectorFromSet does not validate).
    selector = tuple(LabelRequirement(k, "In", (v,)) for k, v in (spec.node_selector or {}).items())
    node_affinity = spec.affinity.node_affinity if spec.affinity else None
    required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None
    return RequiredAffinity(selector, compile_selector(required) if required is not None else None)


@dataclass(frozen=True)
class Preferences:
    """Weighted preferred terms; a node scores the sum of the weights of the terms it matches."""

    terms: tuple[tuple[Term, int], ...]

    def score(self, table: NodeTable, rows: Rows) -> IntColumn:
        out = np.zeros(len(rows), dtype=np.int64)
        for term, weight in self.terms:
            out += term.matches(table, rows) * np.int64(weight)
        return out


def compile_preferences(terms: Sequence[PreferredSchedulingTerm], path: str = "") -> tuple[Preferences, list[str]]:
    """Compile preferred terms, dropping weight-0 and empty ones; also returns every parse error."""
    kept: list[tuple[Term, int]] = []
    errors: list[str] = []
    for i, pref in enumerate(terms):
        if pref.weight == 0 or pref.preference is None or is_empty_term(pref.preference):
            continue
        term = compile_term(pref.preference, f"{path}[{i}].preference.")
        errors += term.errors
        kept.append((term, pref.weight))
    return Preferences(tuple(kept)), errors
