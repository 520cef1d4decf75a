"""PodTopologySpread's building blocks: its args, compiled constraints, node eligibility and pod counting.

Kept apart from the plugin so the plugin module reads as the four extension points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.core import TopologySpreadConstraint
from kubesched.core.nodeaffinity import RequiredAffinity, is_qualified_name, required_affinity
from kubesched.core.nodetable import BoolColumn, IntColumn, NodeTable, Rows
from kubesched.core.podinfo import PodInfo
from kubesched.core.tolerations import DO_NOT_SCHEDULE, any_untolerated
from kubesched.plugins.helpers.label_selector import Selector, compile_selector

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE_ACTION, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
SYSTEM, LIST = "System", "List"
HONOR = "Honor"
MAX_INT32 = 2**31 - 1

# Used when the pod has no constraints of its own and the args say System (defaults.go).
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)


class PodTopologySpreadArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """defaultingType "" means System (v1 defaults); defaultConstraints are for List only."""

    default_constraints: list[TopologySpreadConstraint] = []
    defaulting_type: str = ""


def validate_args(args: PodTopologySpreadArgs) -> list[str]:
    """Every problem of the (defaulted) args, with field paths (ValidatePodTopologySpreadArgs)."""
    errors = []
    kind = args.defaulting_type
    if kind not in (SYSTEM, LIST):
        errors.append(f'defaultingType: Unsupported value: "{kind}": supported values: "{SYSTEM}", "{LIST}"')
    elif kind == SYSTEM and args.default_constraints:
        errors.append(f'defaultingType: Invalid value: "{kind}": when .defaultConstraints are not empty')
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(args.default_constraints):
        path = f"defaultConstraints[{i}]"
        if c.max_skew <= 0:
            errors.append(f"{path}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)")
        if not c.topology_key:
            errors.append(f"{path}.topologyKey: Required value: can not be empty")
        elif not is_qualified_name(c.topology_key):
            errors.append(f'{path}.topologyKey: Invalid value: "{c.topology_key}": must be a qualified name')
        action = c.when_unsatisfiable
        if not action:
            errors.append(f"{path}.whenUnsatisfiable: Required value: can not be empty")
        elif action not in (DO_NOT_SCHEDULE_ACTION, SCHEDULE_ANYWAY):
            errors.append(
                f'{path}.whenUnsatisfiable: Unsupported value: "{action}": '
                f'supported values: "{DO_NOT_SCHEDULE_ACTION}", "{SCHEDULE_ANYWAY}"'
            )
        if c.label_selector is not None:
            errors.append(
                f"{path}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        if (c.topology_key, action) in seen:
            errors.append(f'{path}: Duplicate value: "{{{c.topology_key}, {action}}}"')
        seen.add((c.topology_key, action))
    return errors


@dataclass(frozen=True)
class Constraint:
    """A topologySpreadConstraint with upstream's defaults applied (filterTopologySpreadConstraints)."""

    max_skew: int
    key: str
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy defaults to Honor
    honor_taints: bool = False  # nodeTaintsPolicy defaults to Ignore

    @property
    def hostname(self) -> bool:
        return self.key == HOSTNAME


def compile_constraints(
    specs: Sequence[TopologySpreadConstraint], pod_labels: Mapping[str, str], action: str
) -> tuple[Constraint, ...]:
    """The constraints of one action; matchLabelKeys values of the pod are ANDed into the selector.

    Raises SelectorError. (Since 1.34 the API server merges matchLabelKeys itself; merging again
    adds the same requirements, so pods that did not come through an API server behave alike.)
    """
    out = []
    for c in specs:
        if c.when_unsatisfiable != action:
            continue
        selector = compile_selector(c.label_selector)
        keys = {k: pod_labels[k] for k in c.match_label_keys or () if k in pod_labels}
        out.append(
            Constraint(
                max_skew=c.max_skew,
                key=c.topology_key,
                selector=selector.with_labels(keys),
                min_domains=1 if c.min_domains is None else c.min_domains,
                honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
                honor_taints=c.node_taints_policy == HONOR,
            )
        )
    return tuple(out)


def _required(pod: PodInfo) -> RequiredAffinity:
    cached = pod.cache.get("PodTopologySpread/required")
    if not isinstance(cached, RequiredAffinity):
        cached = pod.cache["PodTopologySpread/required"] = required_affinity(pod.pod)
    return cached


def has_all_keys(table: NodeTable, rows: Rows, constraints: Sequence[Constraint]) -> BoolColumn:
    """nodeLabelsMatchSpreadConstraints: the node carries every constraint's topology key."""
    out = np.ones(len(rows), dtype=np.bool_)
    for c in constraints:
        out &= table.label_codes(c.key)[0][rows] >= 0
    return out


def included(pod: PodInfo, constraints: Sequence[Constraint], table: NodeTable, rows: Rows) -> list[BoolColumn]:
    """Per constraint, the rows its node inclusion policies let count (matchNodeInclusionPolicies)."""
    affinity = taints_ok = None
    if any(c.honor_affinity for c in constraints):
        required = _required(pod)
        affinity = np.ones(len(rows), dtype=np.bool_) if required.matches_all else required.matches(table, rows)
    if any(c.honor_taints for c in constraints):
        taints_ok = ~any_untolerated(table.taint_index(), pod.tolerations, DO_NOT_SCHEDULE, rows)
    masks = []
    for c in constraints:
        mask = np.ones(len(rows), dtype=np.bool_)
        if c.honor_affinity and affinity is not None:
            mask &= affinity
        if c.honor_taints and taints_ok is not None:
            mask &= taints_ok
        masks.append(mask)
    return masks


def count_matching(table: NodeTable, rows: Rows, namespace: str, selectors: Sequence[Selector]) -> list[IntColumn]:
    """Per selector, per row: pods of ``namespace``, not terminating, that it matches (countPodsMatchSelector).

    An empty selector counts 0, as upstream.
    """
    active = [(j, s) for j, s in enumerate(selectors) if not s.empty and not s.nothing]
    counts = [[0] * len(rows) for _ in selectors]
    if active:
        for i, row in enumerate(rows.tolist()):
            for p in table.pods_on(row).values():
                if p.namespace != namespace or p.pod.metadata.deletion_timestamp is not None:
                    continue
                for j, s in active:
                    if s.matches(p.labels):
                        counts[j][i] += 1
    return [np.asarray(c, dtype=np.int64) for c in counts]


def lookup(values: IntColumn, codes: npt.NDArray[np.int32]) -> IntColumn:
    """values[code] per code; codes outside the array (absent label, values new since it was built) read 0."""
    inside = (codes >= 0) & (codes < len(values))
    if not len(values):
        return np.zeros(len(codes), dtype=np.int64)
    out: IntColumn = np.where(inside, values[np.where(inside, codes, 0)], 0)
    return out


def round_half_away(x: npt.NDArray[np.float64]) -> IntColumn:
    """Go's math.Round for non-negative values (Python's round is half-to-even)."""
    whole = np.trunc(x)
    out: IntColumn = (whole + (x - whole >= 0.5)).astype(np.int64)
    return out
