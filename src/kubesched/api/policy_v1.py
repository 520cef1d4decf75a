"""Partial policy/v1 objects the scheduler reads."""

from __future__ import annotations

import msgspec

from kubesched.api.core import ObjectMeta


class LabelSelectorRequirement(msgspec.Struct, rename="camel", omit_defaults=True):
    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class LabelSelector(msgspec.Struct, rename="camel", omit_defaults=True):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class PodDisruptionBudgetSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(msgspec.Struct, rename="camel", omit_defaults=True):
    disruptions_allowed: int = 0
    disrupted_pods: dict[str, str] | None = None


class PodDisruptionBudget(msgspec.Struct, rename="camel", omit_defaults=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)
